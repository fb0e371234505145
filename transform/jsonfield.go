package transform

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// maxJSONDepth is the nesting limit of JSON-valued properties; it is the
// same as encoding/json's and jsontext's, so all of them accept the same
// texts.
const maxJSONDepth = 10000

// errNumberRange is returned for a JSON number that does not fit a double
// (Cosmos DB stores every number as one).
var errNumberRange = errors.New("number out of range")

// JSON is a value decoded from a JSON-valued property (InputData,
// Settings, a JSON Result, …). It keeps the value as JSON text in the form
// the doc is written with: no insignificant white space, strings in their
// shortest form (RFC 8785 §3.2.2.2), numbers exactly as the source wrote
// them, object members in source order and no member name twice. Use
// Value for the ordinary Go form. A JSON is immutable and safe for
// concurrent reads.
type JSON struct {
	text []byte
}

// Value returns the value as a Go tree: Doc for objects (source order),
// []any, json.Number, string, bool or nil.
func (j *JSON) Value() any {
	v, err := readTree(jsontext.NewDecoder(bytes.NewReader(j.text)))
	if err != nil {
		// decodeJSONField wrote the text; it is valid JSON.
		panic("transform: JSON holds invalid text: " + err.Error())
	}
	return v
}

// readTree reads the next JSON value from d as a Go tree (see
// JSON.Value).
func readTree(d *jsontext.Decoder) (any, error) {
	tok, err := d.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case 'n':
		return nil, nil
	case 't', 'f':
		return tok.Bool(), nil
	case '"':
		return tok.String(), nil
	case '0':
		return json.Number(tok.String()), nil
	case '{':
		doc := Doc{}
		for d.PeekKind() != '}' {
			tok, err := d.ReadToken()
			if err != nil {
				return nil, err
			}
			name := tok.String() // before the next read voids tok
			v, err := readTree(d)
			if err != nil {
				return nil, err
			}
			doc = append(doc, Field{name, v})
		}
		_, err = d.ReadToken()
		return doc, err
	default: // '['
		a := []any{}
		for d.PeekKind() != ']' {
			v, err := readTree(d)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err = d.ReadToken()
		return a, err
	}
}

// MarshalJSON returns the value's JSON text without insignificant white
// space; numbers keep their source text.
func (j *JSON) MarshalJSON() ([]byte, error) {
	return slices.Clone(j.text), nil
}

// decodeJSONField decodes the text of a JSON-valued property strictly by
// RFC 8259 into a *JSON. Object members keep their order; for a repeated
// name the last value wins, at the first position, as Python's json.loads
// does. Numbers keep their exact text. Leading and trailing white space is
// allowed, NaN/Infinity literals are not. Invalid UTF-8 and lone
// surrogates in strings become U+FFFD, as with encoding/json.
//
// The text is read by jsontext; this function adds only what the SPEC
// asks beyond RFC 8259: the merging of repeated names, the range of
// numbers and the detection of big integers.
//
// bigInt reports an integer whose magnitude is above 2^53 (Cosmos DB will
// round it). The error names the byte offset, never the text.
func decodeJSONField(s string) (v *JSON, bigInt bool, err error) {
	d := newTextDecoder(nil, s)
	defer d.release()
	var small [32]fieldMember
	f := fieldDecoder{dec: &d.Decoder, out: make([]byte, 0, len(s)), members: small[:0]}
	err = f.value()
	if err == nil {
		// Nothing may follow but white space (jsontext reads a stream of
		// values, so a second value is not an error to it).
		if _, err = f.dec.ReadToken(); err == io.EOF {
			return &JSON{text: f.out}, f.bigInt, nil
		} else if err == nil {
			err = errors.New("a second value")
		}
	}
	if errors.Is(err, errNumberRange) || errors.Is(err, errTooDeep) {
		return nil, false, err
	}
	return nil, false, syntaxError(s, err)
}

// syntaxError returns the error for s, a text that is not JSON: the
// offset where jsontext's formatter stops, which points at the character
// that is wrong (its decoder points at the comma before a missing value
// instead). err is the decoder's error, for the message if the formatter
// found nothing wrong.
func syntaxError(s string, err error) error {
	if _, ferr := jsontext.AppendFormat(nil, s, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)); ferr != nil {
		err = ferr
	}
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at offset %d", se.ByteOffset)
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

// errTooDeep is returned for a JSON-valued property nested deeper than
// maxJSONDepth.
var errTooDeep = fmt.Errorf("invalid JSON: nested deeper than %d", maxJSONDepth)

// fieldDecoder is decodeJSONField's state: the text is read value by
// value and appended to out in doc form.
type fieldDecoder struct {
	dec     *jsontext.Decoder
	out     []byte
	bigInt  bool
	members []fieldMember // members of the objects being read, innermost last
}

// fieldMember locates an object member in out: its quoted name is
// out[name:value-1] (a ':' follows), its value out[value:end].
type fieldMember struct{ name, value, end int }

// value reads one value and appends it to out.
func (f *fieldDecoder) value() error {
	switch f.dec.PeekKind() {
	case '{':
		return f.object()
	case '[':
		return f.array()
	}
	return f.scalar()
}

// scalar reads a string, number or literal (or an object member's name)
// and appends it to out.
func (f *fieldDecoder) scalar() error {
	raw, err := f.dec.ReadValue() // also the error PeekKind found
	if err != nil {
		return err
	}
	switch raw[0] {
	case '"':
		if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
			break // already in shortest form: the decoder refuses control characters
		}
		// The shortest form of the string; invalid UTF-8 and lone
		// surrogates become U+FFFD.
		f.out, err = jsontext.AppendFormat(f.out, raw, jsontext.AllowInvalidUTF8(true))
		return err
	case 'n', 't', 'f':
	default:
		if err := f.number(raw); err != nil {
			return err
		}
	}
	f.out = append(f.out, raw...)
	return nil
}

// open reads the '{' or '[' that starts an object or array.
func (f *fieldDecoder) open(delim byte) error {
	if f.dec.StackDepth() >= maxJSONDepth {
		return errTooDeep
	}
	return f.delim(delim)
}

// delim reads a '{', '}', '[' or ']' and appends it.
func (f *fieldDecoder) delim(delim byte) error {
	if _, err := f.dec.ReadToken(); err != nil {
		return err
	}
	f.out = append(f.out, delim)
	return nil
}

func (f *fieldDecoder) array() error {
	if err := f.open('['); err != nil {
		return err
	}
	for first := true; f.dec.PeekKind() != ']'; first = false {
		if !first {
			f.out = append(f.out, ',')
		}
		if err := f.value(); err != nil {
			return err
		}
	}
	return f.delim(']')
}

func (f *fieldDecoder) object() error {
	if err := f.open('{'); err != nil {
		return err
	}
	mark := len(f.members)
	var seen map[string]int // name → index in f.members; only for large objects
	for f.dec.PeekKind() != '}' {
		if len(f.members) > mark {
			f.out = append(f.out, ',')
		}
		m := fieldMember{name: len(f.out)}
		if err := f.scalar(); err != nil { // the name: jsontext checks it is a string
			return err
		}
		f.out = append(f.out, ':')
		m.value = len(f.out)
		if err := f.value(); err != nil {
			return err
		}
		m.end = len(f.out)
		seen = f.addMember(mark, seen, m)
	}
	f.members = f.members[:mark]
	return f.delim('}')
}

// addMember adds m, the member just appended to out, to the object whose
// members are f.members[mark:]. When an earlier member has the same name,
// m's value replaces that member's value and m is removed.
func (f *fieldDecoder) addMember(mark int, seen map[string]int, m fieldMember) map[string]int {
	obj := f.members[mark:]
	name := f.out[m.name : m.value-1] // names are in shortest form: equal strings, equal bytes
	earlier := -1
	switch {
	case seen == nil && len(obj) < 16:
		for i := range obj {
			if bytes.Equal(f.out[obj[i].name:obj[i].value-1], name) {
				earlier = i
				break
			}
		}
	default:
		if seen == nil {
			seen = make(map[string]int, 2*len(obj))
			for i, o := range obj {
				seen[string(f.out[o.name:o.value-1])] = i
			}
		}
		if i, ok := seen[string(name)]; ok {
			earlier = i
		} else {
			seen[string(name)] = len(obj)
		}
	}
	if earlier < 0 {
		f.members = append(f.members, m)
		return seen
	}
	val := slices.Clone(f.out[m.value:m.end])
	f.out = f.out[:m.name-1] // without ",name:value"
	e := &obj[earlier]
	delta := len(val) - (e.end - e.value)
	f.out = slices.Replace(f.out, e.value, e.end, val...)
	e.end += delta
	for i := earlier + 1; i < len(obj); i++ {
		obj[i].name += delta
		obj[i].value += delta
		obj[i].end += delta
	}
	return seen
}

// number checks a number's range and notes an integer above 2^53.
func (f *fieldDecoder) number(raw []byte) error {
	if !bytes.ContainsAny(raw, ".eE") {
		if len(raw) >= 16 && !intFitsDouble(string(raw)) {
			f.bigInt = true
		}
		if len(raw) < 300 {
			return nil // fits a double
		}
	}
	if _, err := strconv.ParseFloat(string(raw), 64); err != nil {
		return errNumberRange
	}
	return nil
}

// intFitsDouble reports whether a decimal integer's magnitude is at most 2^53.
func intFitsDouble(text string) bool {
	n, err := strconv.ParseInt(text, 10, 64)
	return err == nil && n <= 1<<53 && n >= -(1<<53)
}
