package transform

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// RawDoc is a doc's JSON read once, as verify reads every doc of a
// container: in one pass over its text (canonReader) it keeps its
// top-level members — each value the text it has in the doc, and that
// value's canonical form — so that the few members verify needs are
// decoded alone and the doc is hashed by meaning without being decoded
// into maps (docs/performance.md, "verify"). Whatever it is asked, it
// answers as DecodeDoc's map would: a text that the reader leaves to
// DecodeDoc (one with a repeated member name, invalid UTF-8, a number
// beyond a double: encoding/json reads each its own way) is decoded by
// DecodeDoc, and every answer comes from that map. A RawDoc refers to the
// text it was read from, which must not change while it is used; it is
// not safe for concurrent use. Close hands its buffers to the next
// ReadDoc.
type RawDoc struct {
	raw []byte
	// members are sorted by name (RFC 8785's order).
	members []rawMember
	// m is DecodeDoc's map when the text is not one RawDoc reads itself.
	m map[string]any
	// c is the reader whose buffers members refer to, and hash the
	// buffer MeaningHash writes in: kept for the next doc (Close).
	c    canonReader
	hash []byte
}

// rawDocs holds closed RawDocs (*RawDoc), whose buffers ReadDoc reuses.
var rawDocs = sync.Pool{New: func() any { return new(RawDoc) }}

// ReadDoc reads the doc raw. It returns DecodeDoc's error for a text that
// DecodeDoc refuses (not JSON, not an object), and otherwise nothing but
// what DecodeDoc would return: like it, it reads the first JSON value of
// raw and ignores what follows.
func ReadDoc(raw []byte) (*RawDoc, error) {
	d := rawDocs.Get().(*RawDoc)
	d.raw = raw
	d.c.reset(raw)
	members, err := d.c.doc()
	if err == nil {
		d.members = members
		return d, nil
	}
	d.Close()
	m, err := DecodeDoc(raw)
	if err != nil {
		return nil, err
	}
	return &RawDoc{raw: raw, m: m}, nil
}

// Close gives d's buffers to a later ReadDoc; d must not be used after
// it (what it returned may: Get's values and the hash are copies). Buffers that grew
// beyond maxPooledCanon are left to the garbage collector.
func (d *RawDoc) Close() {
	if d.m != nil || cap(d.c.out) > maxPooledCanon || cap(d.c.names) > maxPooledCanon || cap(d.hash) > maxPooledCanon {
		return
	}
	d.c.reset(nil)
	d.raw, d.members = nil, nil
	rawDocs.Put(d)
}

// member returns the member called name.
func (d *RawDoc) member(name string) (rawMember, bool) {
	for _, m := range d.members {
		if string(m.name) == name {
			return m, true
		}
	}
	return rawMember{}, false
}

// Get returns the value of the member name as DecodeDoc decodes it
// (numbers as json.Number, objects as map[string]any, arrays as []any)
// and whether the doc has it.
func (d *RawDoc) Get(name string) (any, bool) {
	if d.m != nil {
		v, ok := d.m[name]
		return v, ok
	}
	m, ok := d.member(name)
	if !ok {
		return nil, false
	}
	return memberValue(m.value), true
}

// memberValue decodes v, a member's value as ReadDoc read it (valid JSON
// without repeated names or invalid UTF-8), as encoding/json decodes it
// with UseNumber.
func memberValue(v []byte) any {
	x, _ := decodeValid(v, 0)
	return x
}

// decodeValid decodes the value that starts at v[i] or after white space
// there, in a text ReadDoc checked, as memberValue does; it returns the
// value and the index just past it.
func decodeValid(v []byte, i int) (any, int) {
	i = skipSpace(v, i)
	switch v[i] {
	case '{':
		m := map[string]any{}
		for i = skipSpace(v, i+1); v[i] != '}'; i = skipSpace(v, i) {
			if v[i] == ',' {
				i = skipSpace(v, i+1)
			}
			end := stringEnd(v, i) + 1
			name := unquoteValid(v[i:end])
			i = skipSpace(v, end) + 1 // past the ':'
			m[name], i = decodeValid(v, i)
		}
		return m, i + 1
	case '[':
		a := []any{}
		for i = skipSpace(v, i+1); v[i] != ']'; i = skipSpace(v, i) {
			if v[i] == ',' {
				i++
			}
			var x any
			x, i = decodeValid(v, i)
			a = append(a, x)
		}
		return a, i + 1
	case '"':
		end := stringEnd(v, i) + 1
		return unquoteValid(v[i:end]), end
	case 't':
		return true, i + len("true")
	case 'f':
		return false, i + len("false")
	case 'n':
		return nil, i + len("null")
	}
	end := i // a number
	for end < len(v) && (isDigit(v[end]) || v[end] == '-' || v[end] == '+' || v[end] == '.' || v[end] == 'e' || v[end] == 'E') {
		end++
	}
	return json.Number(v[i:end]), end
}

// unquoteValid returns the value of q, a valid JSON string.
func unquoteValid(q []byte) string {
	if bytes.IndexByte(q, '\\') < 0 {
		return string(q[1 : len(q)-1])
	}
	s, _ := jsontext.AppendUnquote(nil, q) // valid: no error
	return string(s)
}

// skipSpace returns the index of the first byte of v from i on that is
// not JSON's white space, or len(v).
func skipSpace(v []byte, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == '\n' || v[i] == '\r') {
		i++
	}
	return i
}

// MeaningHash returns MeaningHash(table, doc) of the doc DecodeDoc makes
// of d's text, and its error: the hash of the doc by meaning (SPEC §12)
// that the row's side compares (Outcome.MeaningHash). The canonical JSON
// of the doc by meaning is the kept members' canonical forms, in their
// order, but for the timestamps it rewrites.
func (d *RawDoc) MeaningHash(table string) (string, error) {
	if d.m != nil {
		return MeaningHash(table, d.m)
	}
	stamps := defaultKinds.stampNames(table)
	b := append(d.hash[:0], '{')
	for _, m := range d.members {
		if hashExcluded(string(m.name)) {
			continue
		}
		keep, value := meaningMember(stamps, m.name, m.canon)
		if !keep {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(append(b, m.quoted...), value...)
	}
	b = append(b, '}')
	d.hash = b
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// meaningMember is the rule of Normalize for one top-level member of a
// doc, its value as JSON text: a null is left out (keep false); a
// timestamp field of the table (stamps) whose string parses as a
// timestamp in another form than TimestampLayout is kept in that form;
// anything else is kept as it is.
func meaningMember(stamps map[string]bool, name []byte, v jsontext.Value) (keep bool, out jsontext.Value) {
	switch v.Kind() {
	case 'n':
		return false, nil
	case '"':
		if !stamps[string(name)] {
			return true, v
		}
		if bytes.IndexByte(v, '\\') < 0 && inLayout(v[1:len(v)-1]) {
			return true, v // as FormatTimestamp writes it: the usual case
		}
		s, err := jsontext.AppendUnquote(nil, v)
		if err != nil {
			return true, v
		}
		if f := normalizedStamp(stamps, string(name), string(s)); f != nil {
			q, err := jsontext.AppendQuote(nil, *f)
			if err == nil {
				return true, q
			}
		}
	}
	return true, v
}
