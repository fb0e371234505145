package verify

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"time"
)

// Records are how verify's entries go through spill.Sorter: a key whose
// bytes sort as the fields it is made of (strings escaped so that "a"
// sorts before "a\x00" and "ab", then fixed-width numbers), then a
// payload of fields that only the join reads back. A Sorter sorts whole
// records, so the key comes first and a payload never decides an order
// that the key leaves open except where the key ends with a sequence
// number.

// recWriter builds one record. The zero value is ready; reset reuses it.
type recWriter struct{ b []byte }

func (w *recWriter) reset() { w.b = w.b[:0] }

// key appends s so that records compare by s first: every 0x00 becomes
// 0x00 0xff and s ends with 0x00 0x01.
func (w *recWriter) key(s string) {
	if strings.IndexByte(s, 0) < 0 {
		w.b = append(append(w.b, s...), 0, 1)
		return
	}
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			w.b = append(w.b, 0, 0xff)
			continue
		}
		w.b = append(w.b, s[i])
	}
	w.b = append(w.b, 0, 1)
}

// seq appends n as 8 bytes, big-endian: in a key, it orders by n.
func (w *recWriter) seq(n uint64) { w.b = binary.BigEndian.AppendUint64(w.b, n) }

func (w *recWriter) uvarint(n uint64) { w.b = binary.AppendUvarint(w.b, n) }

func (w *recWriter) varint(n int64) { w.b = binary.AppendVarint(w.b, n) }

func (w *recWriter) str(s string) {
	w.uvarint(uint64(len(s)))
	w.b = append(w.b, s...)
}

// keys appends each string of place as a key, in order.
func (w *recWriter) keys(place [3]string) {
	for _, s := range place {
		w.key(s)
	}
}

// strs appends each string of place, in order.
func (w *recWriter) strs(place [3]string) {
	for _, s := range place {
		w.str(s)
	}
}

func (w *recWriter) bytes(b []byte) {
	w.uvarint(uint64(len(b)))
	w.b = append(w.b, b...)
}

func (w *recWriter) bool(v bool) {
	if v {
		w.b = append(w.b, 1)
		return
	}
	w.b = append(w.b, 0)
}

func (w *recWriter) time(t time.Time) {
	if t.IsZero() {
		w.varint(0)
		return
	}
	w.varint(t.UnixNano())
}

// errRecord is what a record that does not decode says: a run on disk
// that was changed under verify.
var errRecord = errors.New("a record of verify's sorted runs does not decode")

// recReader reads one record back, field by field, in the order recWriter
// wrote them. A record that is cut short sets err; later reads return
// zero values.
type recReader struct {
	b   []byte
	err error
}

func (r *recReader) fail() { r.err, r.b = errRecord, nil }

// key reads a string written by recWriter.key.
func (r *recReader) key() string {
	// Without a 0x00 of its own, the key is the bytes before 0x00 0x01.
	if i := bytes.IndexByte(r.b, 0); i >= 0 && i+1 < len(r.b) && r.b[i+1] == 1 {
		s := string(r.b[:i])
		r.b = r.b[i+2:]
		return s
	}
	var out []byte
	for i := 0; i+1 < len(r.b); i++ {
		if r.b[i] != 0 {
			continue
		}
		switch r.b[i+1] {
		case 1:
			out = append(out, r.b[:i]...)
			r.b = r.b[i+2:]
			return string(out)
		case 0xff:
			out = append(out, r.b[:i+1]...)
			r.b = r.b[i+2:]
			i = -1
		default:
			r.fail()
			return ""
		}
	}
	r.fail()
	return ""
}

// keyLen returns how many bytes the first n keys of rec take. Every
// 0x00 of an escaped key is followed by 0xff, except the terminator's:
// the first 0x00 0x01 ends the key.
func keyLen(rec []byte, n int) int {
	p := 0
	for range n {
		i := bytes.Index(rec[p:], []byte{0, 1})
		if i < 0 {
			return len(rec)
		}
		p += i + 2
	}
	return p
}

func (r *recReader) seq() uint64 {
	if len(r.b) < 8 {
		r.fail()
		return 0
	}
	n := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return n
}

func (r *recReader) uvarint() uint64 { return readVarint(r, binary.Uvarint) }

func (r *recReader) varint() int64 { return readVarint(r, binary.Varint) }

// readVarint reads a number with read (binary.Uvarint or binary.Varint).
func readVarint[N uint64 | int64](r *recReader, read func([]byte) (N, int)) N {
	n, k := read(r.b)
	if k <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[k:]
	return n
}

func (r *recReader) raw() []byte {
	n := r.uvarint()
	if uint64(len(r.b)) < n {
		r.fail()
		return nil
	}
	b := r.b[:n:n]
	r.b = r.b[n:]
	return b
}

func (r *recReader) str() string { return string(r.raw()) }

func (r *recReader) bytes() []byte { return bytes.Clone(r.raw()) }

func (r *recReader) bool() bool {
	if len(r.b) < 1 {
		r.fail()
		return false
	}
	v := r.b[0] == 1
	r.b = r.b[1:]
	return v
}

func (r *recReader) time() time.Time {
	n := r.varint()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
