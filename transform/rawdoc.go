package transform

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// RawDoc is a doc's JSON read once, as verify reads every doc of a
// container: its top-level members, each value the text it has in the
// doc, so that the few members verify needs are decoded alone and the
// doc is hashed by meaning without being decoded into maps first
// (docs/performance.md, "verify"). Whatever it is asked, it answers as
// DecodeDoc's map would: a text that RawDoc does not read itself (one
// with a repeated member name, invalid UTF-8, a number beyond a double:
// encoding/json reads each its own way) is decoded by DecodeDoc, and
// every answer comes from that map. A RawDoc refers to the text it was
// read from, which must not change while it is used; it is not safe for
// concurrent use.
type RawDoc struct {
	raw     []byte
	members []rawMember
	// m is DecodeDoc's map when the text is not one RawDoc reads itself.
	m map[string]any
}

// rawMember is one top-level member: its name decoded (a slice of the
// doc's text unless it holds an escape) and its name and value as they
// are in the text.
type rawMember struct {
	name, quoted []byte
	value        jsontext.Value
}

// ReadDoc reads the doc raw. It returns DecodeDoc's error for a text that
// DecodeDoc refuses (not JSON, not an object), and otherwise nothing but
// what DecodeDoc would return: like it, it reads the first JSON value of
// raw and ignores what follows.
func ReadDoc(raw []byte) (*RawDoc, error) {
	d := &RawDoc{raw: raw}
	if !d.split() {
		m, err := DecodeDoc(raw)
		if err != nil {
			return nil, err
		}
		d.members, d.m = nil, m
	}
	return d, nil
}

// splitters holds the decoders split and meaningOfCanonical read with
// (*splitter).
var splitters = sync.Pool{New: func() any { return new(splitter) }}

// splitter is a jsontext.Decoder reading a bytes.Buffer over a JSON
// text, so that the values it returns are slices of that text, which
// stay valid after the next read.
type splitter struct{ dec jsontext.Decoder }

// newSplitter returns a splitter reading text with opts (none: strict,
// jsontext's defaults). Call release when done.
func newSplitter(text []byte, opts ...jsontext.Options) *splitter {
	s := splitters.Get().(*splitter)
	s.dec.Reset(bytes.NewBuffer(text), opts...)
	return s
}

// noText is what a released splitter reads.
var noText = bytes.NewReader(nil)

// release returns s to the pool, without a reference to its text.
func (s *splitter) release() {
	s.dec.Reset(noText)
	splitters.Put(s)
}

// split reads d.raw's top-level members with a strict decoder (no
// repeated names, valid UTF-8, as jsontext checks by default) and
// reports whether it could: false for anything DecodeDoc must read.
func (d *RawDoc) split() bool {
	s := newSplitter(d.raw)
	defer s.release()
	if tok, err := s.dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	d.members = make([]rawMember, 0, 40)
	for s.dec.PeekKind() == '"' {
		quoted, err := s.dec.ReadValue()
		if err != nil {
			return false
		}
		value, err := s.dec.ReadValue()
		if err != nil {
			return false
		}
		name := quoted[1 : len(quoted)-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			if name, err = jsontext.AppendUnquote(nil, quoted); err != nil {
				return false
			}
		}
		d.members = append(d.members, rawMember{name: name, quoted: quoted, value: value})
	}
	// The closing brace, or the error of what stands in its place.
	tok, err := s.dec.ReadToken()
	return err == nil && tok.Kind() == '}'
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

// memberValue decodes v, a valid JSON value without repeated names or
// invalid UTF-8, as encoding/json decodes it with UseNumber.
func memberValue(v jsontext.Value) any {
	switch v.Kind() {
	case 'n':
		return nil
	case 't':
		return true
	case 'f':
		return false
	case '0':
		return json.Number(v)
	case '"':
		if bytes.IndexByte(v, '\\') < 0 {
			return string(v[1 : len(v)-1])
		}
		s, err := jsontext.AppendUnquote(nil, v)
		if err != nil {
			return nil // not reached: split read it
		}
		return string(s)
	}
	dec := jsontext.NewDecoder(bytes.NewBuffer(v))
	return readAny(dec)
}

// readAny reads the next value of dec, an object or an array of valid
// JSON without repeated names or invalid UTF-8, as memberValue does.
func readAny(dec *jsontext.Decoder) any {
	switch dec.PeekKind() {
	case '{':
		_, _ = dec.ReadToken()
		m := map[string]any{}
		for dec.PeekKind() == '"' {
			name, _ := dec.ReadToken()
			m[name.String()] = readAny(dec)
		}
		_, _ = dec.ReadToken()
		return m
	case '[':
		_, _ = dec.ReadToken()
		a := []any{}
		for k := dec.PeekKind(); k != ']' && k != 0; k = dec.PeekKind() {
			a = append(a, readAny(dec))
		}
		_, _ = dec.ReadToken()
		return a
	}
	v, _ := dec.ReadValue()
	return memberValue(v)
}

// MeaningHash returns MeaningHash(table, doc) of the doc DecodeDoc makes
// of d's text, and its error: the hash of the doc by meaning (SPEC §12)
// that the row's side compares (Outcome.MeaningHash). It writes the kept
// members once, as they are in the text but for the timestamps it
// rewrites, and canonicalizes that; a number beyond a double, which
// canonical JSON would write as the largest double where Hash refuses
// it, sends it to the map.
func (d *RawDoc) MeaningHash(table string) (string, error) {
	if d.m != nil {
		return MeaningHash(table, d.m)
	}
	stamps := defaultKinds.stampNames(table)
	kept := make([]rawMember, 0, len(d.members))
	for _, m := range d.members {
		if hashExcluded(string(m.name)) {
			continue
		}
		var keep bool
		if keep, m.value = meaningMember(stamps, m.name, m.value); keep {
			kept = append(kept, m)
		}
	}
	// In the byte order of the names, which spares Canonicalize most of
	// its sorting (appendCanonicalDoc).
	slices.SortFunc(kept, func(x, y rawMember) int { return bytes.Compare(x.name, y.name) })
	n := 2
	for _, m := range kept {
		n += len(m.quoted) + len(m.value) + 2
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, m := range kept {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, m.quoted...), ':'), m.value...)
	}
	b = append(b, '}')
	v := jsontext.Value(b)
	if err := v.Canonicalize(); err != nil || bytes.Contains(v, []byte("+308")) {
		m, derr := DecodeDoc(d.raw)
		if derr != nil {
			return "", derr // not reached: split read it
		}
		return MeaningHash(table, m)
	}
	sum := sha256.Sum256(v)
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
