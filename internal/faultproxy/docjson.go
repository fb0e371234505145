package faultproxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// The proxy reads docs of tens of KB by the thousand (every change-feed
// read reads the whole container again, every upsert's body is keyed by
// its id): it reads each in one pass and keeps only the members it needs,
// so that the proxy's CPU does not compete with the emulators' for the
// tests that measure rates on a 2-core machine.

// docMeta are the system members of a doc the change feed needs.
type docMeta struct {
	RID, ID, ETag string
	TS            int64
}

// readDocs calls fn with each doc of a query answer's "Documents" array
// (its bytes, a slice of body) and its system members, in order.
func readDocs(body []byte, fn func(raw []byte, d docMeta)) error {
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	if err := wantKind(dec, '{'); err != nil {
		return err
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if name.String() != "Documents" {
			if err := dec.SkipValue(); err != nil {
				return err
			}
			continue
		}
		if err := wantKind(dec, '['); err != nil {
			return err
		}
		for dec.PeekKind() != ']' {
			start := dec.InputOffset()
			d, err := readMeta(dec)
			if err != nil {
				return err
			}
			raw := bytes.TrimLeft(body[start:dec.InputOffset()], ", \t\r\n")
			fn(raw, d)
		}
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
	}
	return nil
}

// readMeta reads one doc (an object) from dec, keeping its system
// members and skipping the rest.
func readMeta(dec *jsontext.Decoder) (docMeta, error) {
	var d docMeta
	if err := wantKind(dec, '{'); err != nil {
		return d, err
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return d, err
		}
		key := name.String() // a token is void after the next read
		var s *string
		switch key {
		case "_rid":
			s = &d.RID
		case "id":
			s = &d.ID
		case "_etag":
			s = &d.ETag
		case "_ts":
		default:
			if err := dec.SkipValue(); err != nil {
				return d, err
			}
			continue
		}
		// As encoding/json reads them into a struct: null leaves the
		// member as it is, another kind than the field's is an error.
		v, err := dec.ReadToken()
		switch {
		case err != nil:
			return d, err
		case v.Kind() == 'n':
		case s != nil && v.Kind() == '"':
			*s = v.String()
		case s == nil && v.Kind() == '0':
			if d.TS, err = v.Int(); err != nil {
				return d, fmt.Errorf("_ts: %w", err)
			}
		case s != nil:
			return d, fmt.Errorf("%s is %s, not a string", key, v.Kind())
		default:
			return d, fmt.Errorf("_ts is %s, not a number", v.Kind())
		}
	}
	_, err := dec.ReadToken()
	return d, err
}

// docID returns the "id" member of a doc's JSON, reading no further than
// it ("" if the doc has none or is not readable).
func docID(body []byte) string {
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	if wantKind(dec, '{') != nil {
		return ""
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return ""
		}
		if name.String() != "id" {
			if dec.SkipValue() != nil {
				return ""
			}
			continue
		}
		if v, err := dec.ReadToken(); err == nil && v.Kind() == '"' {
			return v.String()
		}
		return ""
	}
	return ""
}

// wantKind reads the next token of dec, which must be the delimiter k.
func wantKind(dec *jsontext.Decoder, k jsontext.Kind) error {
	tok, err := dec.ReadToken()
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	if err != nil {
		return err
	}
	if tok.Kind() != k {
		return fmt.Errorf("found %s, want %s", tok.Kind(), k)
	}
	return nil
}

// feedAnswer is the body of a change-feed page: the docs, each with its
// "_lsn", and their count, written as the bytes they are (the docs were
// read from the upstream, so they are JSON already).
func feedAnswer(sel []*feedEntry) []byte {
	size := 32
	for _, e := range sel {
		size += len(e.body) + 24
	}
	b := make([]byte, 0, size)
	b = append(b, `{"Documents":[`...)
	for i, e := range sel {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendWithLSN(b, e.body, e.lsn)
	}
	b = append(b, `],"_count":`...)
	b = fmt.Appendf(b, "%d}", len(sel))
	return b
}
