package transform

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxJSONDepth is the nesting limit of JSON-valued properties; it is the
// same as encoding/json's, so both accept the same texts.
const maxJSONDepth = 10000

// errNumberRange is returned for a JSON number that does not fit a double
// (Cosmos DB stores every number as one).
var errNumberRange = errors.New("number out of range")

// decodeJSONField decodes the text of a JSON-valued property (InputData,
// Settings, Result, …) strictly by RFC 8259: objects become Docs (property
// order kept; for a repeated name the last value wins, at the first
// position, as Python's json.loads does), arrays []any, numbers json.Number
// with their exact text, strings, bools and nil. Leading and trailing white
// space is allowed, NaN/Infinity literals are not. Invalid UTF-8 and lone
// surrogates in strings become U+FFFD, as with encoding/json.
//
// bigInt reports an integer whose magnitude is above 2^53 (Cosmos DB will
// round it). The error names the byte offset, never the text.
func decodeJSONField(s string) (v any, bigInt bool, err error) {
	d := jsonDecoder{s: s}
	d.space()
	v, err = d.value()
	if err != nil {
		return nil, false, err
	}
	d.space()
	if d.i != len(d.s) {
		return nil, false, d.syntax()
	}
	return v, d.bigInt, nil
}

type jsonDecoder struct {
	s      string
	i      int
	depth  int
	bigInt bool
}

func (d *jsonDecoder) syntax() error {
	return fmt.Errorf("invalid JSON at offset %d", d.i)
}

func (d *jsonDecoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *jsonDecoder) literal(lit string, v any) (any, error) {
	if len(d.s)-d.i >= len(lit) && d.s[d.i:d.i+len(lit)] == lit {
		d.i += len(lit)
		return v, nil
	}
	return nil, d.syntax()
}

func (d *jsonDecoder) value() (any, error) {
	if d.i >= len(d.s) {
		return nil, d.syntax()
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		return d.str()
	case c == 't':
		return d.literal("true", true)
	case c == 'f':
		return d.literal("false", false)
	case c == 'n':
		return d.literal("null", nil)
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	default:
		return nil, d.syntax()
	}
}

func (d *jsonDecoder) enter() error {
	d.depth++
	if d.depth > maxJSONDepth {
		return fmt.Errorf("invalid JSON: nested deeper than %d", maxJSONDepth)
	}
	return nil
}

func (d *jsonDecoder) object() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.i++ // {
	obj := Doc{}
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		d.depth--
		return obj, nil
	}
	var seen map[string]int // built only for large objects
	for {
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			return nil, d.syntax()
		}
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		name := k.(string)
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			return nil, d.syntax()
		}
		d.i++
		d.space()
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		obj, seen = setProperty(obj, seen, name, v)
		d.space()
		if d.i >= len(d.s) {
			return nil, d.syntax()
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			d.depth--
			return obj, nil
		default:
			return nil, d.syntax()
		}
	}
}

// setProperty sets name in obj, replacing an earlier value in place.
func setProperty(obj Doc, seen map[string]int, name string, v any) (Doc, map[string]int) {
	if seen == nil && len(obj) < 16 {
		for i := range obj {
			if obj[i].Name == name {
				obj[i].Value = v
				return obj, nil
			}
		}
		return append(obj, Field{name, v}), nil
	}
	if seen == nil {
		seen = make(map[string]int, 2*len(obj))
		for i, f := range obj {
			seen[f.Name] = i
		}
	}
	if i, ok := seen[name]; ok {
		obj[i].Value = v
		return obj, seen
	}
	seen[name] = len(obj)
	return append(obj, Field{name, v}), seen
}

func (d *jsonDecoder) array() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.i++ // [
	arr := []any{}
	d.space()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		d.depth--
		return arr, nil
	}
	for {
		d.space()
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
		d.space()
		if d.i >= len(d.s) {
			return nil, d.syntax()
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			d.depth--
			return arr, nil
		default:
			return nil, d.syntax()
		}
	}
}

func (d *jsonDecoder) number() (any, error) {
	start := d.i
	integer := true
	if d.s[d.i] == '-' {
		d.i++
	}
	digits := func() int {
		n := d.i
		for d.i < len(d.s) && d.s[d.i] >= '0' && d.s[d.i] <= '9' {
			d.i++
		}
		return d.i - n
	}
	switch {
	case d.i < len(d.s) && d.s[d.i] == '0':
		d.i++
	case digits() == 0:
		return nil, d.syntax()
	}
	if d.i < len(d.s) && d.s[d.i] == '.' {
		integer = false
		d.i++
		if digits() == 0 {
			return nil, d.syntax()
		}
	}
	if d.i < len(d.s) && (d.s[d.i] == 'e' || d.s[d.i] == 'E') {
		integer = false
		d.i++
		if d.i < len(d.s) && (d.s[d.i] == '+' || d.s[d.i] == '-') {
			d.i++
		}
		if digits() == 0 {
			return nil, d.syntax()
		}
	}
	text := d.s[start:d.i]
	if integer {
		if len(text) >= 16 && !intFitsDouble(text) {
			d.bigInt = true
		}
		if len(text) < 300 {
			return json.Number(text), nil
		}
	}
	if _, err := strconv.ParseFloat(text, 64); err != nil {
		return nil, errNumberRange
	}
	return json.Number(text), nil
}

// intFitsDouble reports whether a decimal integer's magnitude is at most 2^53.
func intFitsDouble(text string) bool {
	n, err := strconv.ParseInt(text, 10, 64)
	return err == nil && n <= 1<<53 && n >= -(1<<53)
}

func (d *jsonDecoder) str() (any, error) {
	d.i++ // opening quote
	start := d.i
	for d.i < len(d.s) {
		c := d.s[d.i]
		if c == '"' {
			s := d.s[start:d.i]
			d.i++
			return s, nil
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			break
		}
		d.i++
	}
	// Slow path: escapes, control characters or non-ASCII.
	buf := make([]byte, 0, d.i-start+16)
	buf = append(buf, d.s[start:d.i]...)
	for d.i < len(d.s) {
		c := d.s[d.i]
		switch {
		case c == '"':
			d.i++
			return string(buf), nil
		case c < 0x20:
			return nil, d.syntax()
		case c == '\\':
			d.i++
			if d.i >= len(d.s) {
				return nil, d.syntax()
			}
			e := d.s[d.i]
			d.i++
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return nil, d.syntax()
				}
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if len(d.s)-d.i >= 6 && d.s[d.i] == '\\' && d.s[d.i+1] == 'u' {
						save := d.i
						d.i += 2
						if x, ok := d.hex4(); ok {
							r2 = x
						} else {
							return nil, d.syntax()
						}
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							r = dec
						} else {
							d.i = save // the second escape stands alone
							r = utf8.RuneError
						}
					} else {
						r = utf8.RuneError
					}
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return nil, d.syntax()
			}
		case c < 0x80:
			buf = append(buf, c)
			d.i++
		default:
			r, size := utf8.DecodeRuneInString(d.s[d.i:])
			buf = utf8.AppendRune(buf, r) // RuneError for invalid bytes
			d.i += size
		}
	}
	return nil, d.syntax()
}

func (d *jsonDecoder) hex4() (rune, bool) {
	if len(d.s)-d.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(d.s[d.i : d.i+4]) {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	d.i += 4
	return r, true
}
