package transform

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
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

// appendValue appends the JSON form of v, as stored in a doc, to b.
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
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return b, fmt.Errorf("non-finite number")
		}
		return append(b, FormatDouble(x)...), nil
	case json.Number:
		if !validNumber(string(x)) {
			return b, fmt.Errorf("invalid number %q", string(x))
		}
		return append(b, x...), nil
	case Doc:
		return appendDoc(b, x)
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
		return x.appendNode(b, x.root(), false)
	case map[string]any:
		return appendCanonical(b, x)
	default:
		return b, fmt.Errorf("unsupported doc value type %T", v)
	}
}

// appendDoc appends the JSON form of d, properties in order.
func appendDoc(b []byte, d Doc) ([]byte, error) {
	var err error
	b = append(b, '{')
	for i, f := range d {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendString(b, f.Name); err != nil {
			return b, err
		}
		b = append(b, ':')
		if b, err = appendValue(b, f.Value); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string with the minimal escaping RFC 8785
// prescribes: '"' and '\\', the short forms \b \t \n \f \r, \u00xx for the
// other control characters, everything else as UTF-8.
func appendString(b []byte, s string) ([]byte, error) {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	hasZero := func(x uint64) uint64 { return (x - lo) & ^x & hi }
	b = append(b, '"')
	start, ascii := 0, true
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			// Eight bytes at a time: skip them when none is a control
			// character, '"', '\\' or non-ASCII.
			x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if (x-lo*0x20)&^x&hi|hasZero(x^(lo*'"'))|hasZero(x^(lo*'\\'))|x&hi == 0 {
				i += 8
				continue
			}
		}
		c := s[i]
		if c >= 0x80 {
			ascii = false
			i++
			continue
		}
		if !needsJSONEscape[c] {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\t':
			b = append(b, '\\', 't')
		case '\n':
			b = append(b, '\\', 'n')
		case '\f':
			b = append(b, '\\', 'f')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i++
		start = i
	}
	if !ascii && !utf8.ValidString(s) {
		return b, fmt.Errorf("string is not valid UTF-8")
	}
	b = append(b, s[start:]...)
	return append(b, '"'), nil
}

// needsJSONEscape marks the bytes appendString escapes: control
// characters, '"' and '\\'. It is a constant table, never written.
var needsJSONEscape = [256]bool{
	0: true, 1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true, 9: true,
	10: true, 11: true, 12: true, 13: true, 14: true, 15: true, 16: true, 17: true, 18: true, 19: true,
	20: true, 21: true, 22: true, 23: true, 24: true, 25: true, 26: true, 27: true, 28: true, 29: true,
	30: true, 31: true, '"': true, '\\': true,
}

// validNumber reports whether s is a JSON number (RFC 8259 grammar).
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i >= len(s) {
		return false
	}
	switch {
	case s[i] == '0':
		i++
	case s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		n := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == n {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		n := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == n {
			return false
		}
	}
	return i == len(s)
}
