package transform

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// Field is one property of a Doc.
type Field struct {
	Name  string
	Value any
}

// Doc is a JSON object whose properties keep the order they were added in,
// so that a doc's JSON bytes are deterministic and read like the SPEC
// tables. Transform uses it for documents and for objects decoded from
// JSON-valued properties.
//
// Values are one of: nil, bool, string, int64, float64 (finite; written
// with a ".0" when integral so it stays a double), json.Number (written
// verbatim), *JSON (a decoded JSON-valued property), Doc, []any. A Doc is
// not safe for concurrent mutation.
type Doc []Field

// Get returns the value of the first property called name and whether it
// exists.
func (d Doc) Get(name string) (any, bool) {
	for _, f := range d {
		if f.Name == name {
			return f.Value, true
		}
	}
	return nil, false
}

// Has reports whether the doc has a property called name.
func (d Doc) Has(name string) bool {
	_, ok := d.Get(name)
	return ok
}

// MarshalJSON returns the doc's JSON bytes: properties in order, no
// insignificant whitespace. It returns an error for a value of a type Doc
// does not hold, a non-finite float64 or a string that is not valid UTF-8.
func (d Doc) MarshalJSON() ([]byte, error) {
	return appendValue(make([]byte, 0, 256), d)
}

// Map returns the doc as the map[string]any that encoding/json would decode
// from its bytes with UseNumber, except that numbers keep their Go types.
// Nested Docs and JSON values become maps and slices too. It is meant for callers that compare docs
// field by field.
func (d Doc) Map() map[string]any {
	m := make(map[string]any, len(d))
	for _, f := range d {
		m[f.Name] = plain(f.Value)
	}
	return m
}

func plain(v any) any {
	switch x := v.(type) {
	case Doc:
		return x.Map()
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case *JSON:
		return plain(x.Value())
	}
	return v
}

// appendValue appends the JSON form of v, as stored in a doc, to b. It
// also writes the other Go numbers Canonical accepts.
func appendValue(b []byte, v any) ([]byte, error) {
	var err error
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case string:
		return appendString(b, x)
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int32:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int16:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int8:
		return strconv.AppendInt(b, int64(x), 10), nil
	case uint64:
		return strconv.AppendUint(b, x, 10), nil
	case uint:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint32:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint16:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint8:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case float64:
		return appendDouble(b, x)
	case float32:
		return appendDouble(b, float64(x))
	case json.Number:
		if !validNumber(string(x)) {
			return b, fmt.Errorf("invalid number %q", string(x))
		}
		if _, err := strconv.ParseFloat(string(x), 64); err != nil {
			return b, fmt.Errorf("number %s does not fit a double", string(x))
		}
		return append(b, x...), nil
	case Doc:
		return appendObject(b, x, nil)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendValue(b, e); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case *JSON:
		return append(b, x.text...), nil
	case map[string]any:
		return appendMap(b, x, nil)
	default:
		return b, fmt.Errorf("unsupported doc value type %T", v)
	}
}

func appendDouble(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, fmt.Errorf("non-finite number")
	}
	return append(b, FormatDouble(f)...), nil
}

// appendDoc appends the JSON form of d, properties in order.
func appendDoc(b []byte, d Doc) ([]byte, error) {
	return appendObject(b, d, nil)
}

// appendObject appends the JSON form of d: its properties in order, or
// those whose indexes order lists, in that order, when order is not nil.
func appendObject(b []byte, d Doc, order []int) ([]byte, error) {
	n := len(d)
	if order != nil {
		n = len(order)
	}
	var err error
	b = append(b, '{')
	for k := range n {
		i := k
		if order != nil {
			i = order[k]
		}
		if k > 0 {
			b = append(b, ',')
		}
		if b, err = appendString(b, d[i].Name); err != nil {
			return b, err
		}
		if b, err = appendValue(append(b, ':'), d[i].Value); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendMap appends the canonical JSON of m (a map has no order of its
// own) without the properties for which skip (which may be nil) returns
// true.
func appendMap(b []byte, m map[string]any, skip func(string) bool) ([]byte, error) {
	d := make(Doc, 0, len(m))
	for name, v := range m {
		d = append(d, Field{name, v})
	}
	return appendCanonicalDoc(b, d, skip)
}

// appendString appends s as a JSON string with the minimal escaping RFC 8785
// prescribes: '"' and '\\', the short forms \b \t \n \f \r, \u00xx for the
// other control characters, everything else as UTF-8. It returns an error
// when s is not valid UTF-8.
func appendString(b []byte, s string) ([]byte, error) {
	return jsontext.AppendQuote(b, s)
}

// validNumber reports whether s is a JSON number (RFC 8259 grammar) and
// nothing else: jsontext allows white space around a value, a number
// starts with '-' or a digit and ends with a digit.
func validNumber(s string) bool {
	return s != "" && (s[0] == '-' || isDigit(s[0])) && isDigit(s[len(s)-1]) && jsontext.Value(s).IsValid()
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
