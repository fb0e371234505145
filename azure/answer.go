package azure

import (
	"bytes"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// answerReader reads a query's answer as it arrives, as far as finding
// where each doc ends needs: the answer's own members are read as JSON,
// but a doc is only scanned for the end of its strings and brackets and
// handed on as the service wrote it, for its reader to judge (verify
// reads every doc strictly; run's prune decodes it). Checking every doc
// as JSON here as well cost verify about a sixth of its work on a doc
// (docs/performance.md, "verify").
type answerReader struct {
	r io.Reader
	// buf[off:] is read and not yet taken.
	buf []byte
	off int
	// err is the body's error once met (io.EOF at its end).
	err error
}

// answerBuffer is the size of an answerReader's first buffer; it grows
// to hold the largest doc.
const answerBuffer = 64 << 10

func newAnswerReader(r io.Reader) *answerReader {
	return &answerReader{r: r, buf: make([]byte, 0, answerBuffer)}
}

// more reads more of the body, keeping buf[off:]; false at its end or at
// a failure (ar.err).
func (ar *answerReader) more() bool {
	if ar.err != nil {
		return false
	}
	if ar.off > 0 {
		ar.buf = ar.buf[:copy(ar.buf, ar.buf[ar.off:])]
		ar.off = 0
	}
	if len(ar.buf) == cap(ar.buf) {
		ar.buf = append(ar.buf, make([]byte, cap(ar.buf))...)[:len(ar.buf)]
	}
	n, err := ar.r.Read(ar.buf[len(ar.buf):cap(ar.buf)])
	ar.buf = ar.buf[:len(ar.buf)+n]
	if err != nil {
		ar.err = err
	}
	return n > 0 || err == nil
}

// failure is the error of an answer that ends at buf[i]: the body's
// error, io.ErrUnexpectedEOF for a body that ends early (a connection
// that closed mid-answer), or what stands there instead of want.
func (ar *answerReader) failure(i int, want string) error {
	switch {
	case i < len(ar.buf):
		return &unreadableAnswerError{want: want, got: kindOf(ar.buf[i])}
	case ar.err == io.EOF, ar.err == nil:
		return fmt.Errorf("the query's answer ends before its %s: %w", want, io.ErrUnexpectedEOF)
	}
	return ar.err
}

// next skips white space and returns the next byte, not taken; ok is
// false at the end of the body.
func (ar *answerReader) next() (byte, bool) {
	for {
		for ar.off < len(ar.buf) {
			switch c := ar.buf[ar.off]; c {
			case ' ', '\t', '\n', '\r':
				ar.off++
			default:
				return c, true
			}
		}
		if !ar.more() {
			return 0, false
		}
	}
}

// take takes the next byte, which must be want.
func (ar *answerReader) take(want byte) error {
	if c, ok := ar.next(); !ok || c != want {
		return ar.failure(ar.off, string(want))
	}
	ar.off++
	return nil
}

// value scans the JSON value that comes next and returns its text, valid
// until the next call: an object or an array to its closing bracket, a
// string to its closing quote, a number or a word to the first byte that
// cannot be in one. Only strings and brackets are checked.
func (ar *answerReader) value() ([]byte, error) {
	c, ok := ar.next()
	switch {
	case !ok:
		return nil, ar.failure(ar.off, "value")
	case c == '"':
		end, ok := ar.stringEnd(ar.off)
		if !ok {
			return nil, ar.failure(len(ar.buf), "string's end")
		}
		return ar.took(end), nil
	case c == '{' || c == '[':
		return ar.container()
	case c == '}' || c == ']' || c == ',' || c == ':':
		return nil, &unreadableAnswerError{want: "value", got: string(c)}
	}
	return ar.scalar()
}

// took takes buf[off:end] and returns it.
func (ar *answerReader) took(end int) []byte {
	v := ar.buf[ar.off:end]
	ar.off = end
	return v
}

// container scans the object or array at off to its closing bracket.
func (ar *answerReader) container() ([]byte, error) {
	var open [32]byte
	closers := open[:0] // the brackets still open, innermost last
	for i := ar.off; ; {
		if i == len(ar.buf) {
			n := i - ar.off
			if !ar.more() {
				return nil, ar.failure(len(ar.buf), string(closers[len(closers)-1]))
			}
			i = ar.off + n
			continue
		}
		switch c := ar.buf[i]; c {
		case '"':
			end, ok := ar.stringEnd(i)
			if !ok {
				return nil, ar.failure(len(ar.buf), "string's end")
			}
			i = end
			continue
		case '{', '[':
			closers = append(closers, c+2) // '}' and ']' are their openers + 2
		case '}', ']':
			if want := closers[len(closers)-1]; c != want {
				return nil, &unreadableAnswerError{want: string(want), got: string(c)}
			}
			if closers = closers[:len(closers)-1]; len(closers) == 0 {
				return ar.took(i + 1), nil
			}
		}
		i++
	}
}

// scalar scans the number or word (true, false, null) at off.
func (ar *answerReader) scalar() ([]byte, error) {
	for i := ar.off; ; i++ {
		for i == len(ar.buf) {
			n := i - ar.off
			if !ar.more() {
				if ar.err == io.EOF {
					return ar.took(i), nil // what follows it is missing, for the caller to find
				}
				return nil, ar.err
			}
			i = ar.off + n
		}
		switch ar.buf[i] {
		case ',', ']', '}', ':', '"', '{', '[', ' ', '\t', '\n', '\r':
			return ar.took(i), nil
		}
	}
}

// stringEnd returns the index just past the string that starts at
// buf[i], reading more of the body as needed (which may move buf[off:]
// to the start of buf: i is taken relative to off); false at the end of
// the body.
func (ar *answerReader) stringEnd(i int) (int, bool) {
	from := i + 1 // where a run of backslashes before a quote can start
	for p := from; ; {
		q := bytes.IndexByte(ar.buf[p:], '"')
		if q < 0 {
			n, f := p-ar.off, from-ar.off
			if !ar.more() {
				return 0, false
			}
			p, from = ar.off+n, ar.off+f
			continue
		}
		q += p
		k := q
		for k > from && ar.buf[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			return q + 1, true
		}
		p, from = q+1, q+1
	}
}

// name reads a member's name.
func (ar *answerReader) name() (string, error) {
	if c, ok := ar.next(); !ok || c != '"' {
		return "", ar.failure(ar.off, "string")
	}
	quoted, err := ar.value()
	if err != nil {
		return "", err
	}
	if bytes.IndexByte(quoted, '\\') < 0 {
		return string(quoted[1 : len(quoted)-1]), nil
	}
	name, err := jsontext.AppendUnquote(nil, quoted)
	if err != nil {
		return "", &unreadableAnswerError{want: "string", got: "invalid string"}
	}
	return string(name), nil
}

// kindOf names what a value or token that starts with c is.
func kindOf(c byte) string {
	switch {
	case c == '"':
		return "string"
	case c == '-' || c >= '0' && c <= '9':
		return "number"
	case c == 'n':
		return "null"
	case c == 't', c == 'f':
		return "boolean"
	case c == '{', c == '}', c == '[', c == ']', c == ',', c == ':':
		return string(c)
	}
	return fmt.Sprintf("%q", c)
}
