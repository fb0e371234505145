package transform

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// What the Table-based Bifrost application writes, spelled as Python
// writes it (SPEC §15): JSON-valued properties are json.dumps(value) with
// the default arguments, timestamps are datetime.utcnow().isoformat(), and
// an execution's reverse timestamp is computed from dt.timestamp(). The
// functions here are pure and safe for concurrent use.

// appendPythonJSON appends json.dumps(v) as Python writes it with the
// default arguments: separators ", " and ": ", ensure_ascii (every
// character outside ' '…'~' as \uXXXX with lower-case hex, characters
// above U+FFFF as a surrogate pair, with the short forms \" \\ \n \r \t \b
// \f), object members in order, no key sorting, and '/' not escaped.
//
// Numbers are typed as json.loads types them: a JSON number without '.',
// 'e' or 'E' is a Python int (written as its digits; -0 is 0), any other
// is a float, written as Python's repr (see appendPythonFloat). Go values
// int64 and int are ints, float64 is a float.
//
// v is built of nil, bool, string, json.Number, int64, int, float64, Doc,
// []any and *JSON. It returns an error for any other type (a
// map[string]any has no member order) and for a json.Number that is not
// a JSON number. Invalid UTF-8 in a string is written as \ufffd, as the
// JSON decoders of this package read it.
func appendPythonJSON(b []byte, v any) ([]byte, error) {
	var err error
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		if x {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case string:
		return appendPythonString(b, x), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case float64:
		return appendPythonFloat(b, x), nil
	case json.Number:
		return appendPythonNumber(b, string(x))
	case *JSON:
		if x == nil {
			return b, fmt.Errorf("python json: nil *JSON")
		}
		return appendPythonJSON(b, x.Value())
	case Doc:
		b = append(b, '{')
		for i, f := range x {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendPythonString(b, f.Name)
			b = append(b, ": "...)
			if b, err = appendPythonJSON(b, f.Value); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ", "...)
			}
			if b, err = appendPythonJSON(b, e); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	}
	return b, fmt.Errorf("python json: unsupported value type %T", v)
}

// pythonJSON returns json.dumps(v); see appendPythonJSON.
func pythonJSON(v any) (string, error) {
	b, err := appendPythonJSON(make([]byte, 0, 64), v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// isIntegerLiteral reports whether a JSON number's text has no fraction
// and no exponent: json.loads makes it a Python int.
func isIntegerLiteral(s string) bool {
	return !strings.ContainsAny(s, ".eE")
}

// appendPythonNumber appends the JSON number s as json.dumps(json.loads(s))
// writes it.
func appendPythonNumber(b []byte, s string) ([]byte, error) {
	if !validNumber(s) {
		return b, fmt.Errorf("python json: invalid number %q", s)
	}
	if isIntegerLiteral(s) {
		if s == "-0" {
			return append(b, '0'), nil
		}
		return append(b, s...), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return b, fmt.Errorf("python json: number %q: %w", s, err)
	}
	// Out of range: ParseFloat gives ±Inf or 0, as Python's float() does.
	return appendPythonFloat(b, f), nil
}

// appendPythonFloat appends repr(f) as Python 3 writes it, which is also
// what json.dumps writes for a float: the shortest digits that read back
// as f; positional notation when the decimal point falls 4 places left of
// the first digit up to 16 places right of it, with ".0" for an integral
// value (5.0, 1000000000000000.0); otherwise d.ddde±XX with at least two
// exponent digits (1e+16, 1.5e-07). NaN and ±Inf are written NaN,
// Infinity and -Infinity, as json.dumps writes them.
func appendPythonFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(b, "-0.0"...)
		}
		return append(b, "0.0"...)
	}
	var buf [32]byte
	s := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // -d.ddde±XX, shortest
	if s[0] == '-' {
		b = append(b, '-')
		s = s[1:]
	}
	e := 0
	for s[e] != 'e' {
		e++
	}
	exp, _ := strconv.Atoi(string(s[e+1:]))
	var digitBuf [24]byte
	digits := append(digitBuf[:0], s[0])
	if e > 1 {
		digits = append(digits, s[2:e]...)
	}
	// value = 0.digits × 10^decpt
	decpt := exp + 1
	if decpt > -4 && decpt <= 16 {
		switch {
		case decpt <= 0:
			b = append(b, '0', '.')
			for range -decpt {
				b = append(b, '0')
			}
			return append(b, digits...)
		case decpt >= len(digits):
			b = append(b, digits...)
			for range decpt - len(digits) {
				b = append(b, '0')
			}
			return append(b, '.', '0')
		default:
			b = append(b, digits[:decpt]...)
			b = append(b, '.')
			return append(b, digits[decpt:]...)
		}
	}
	b = append(b, digits[0])
	if len(digits) > 1 {
		b = append(b, '.')
		b = append(b, digits[1:]...)
	}
	b = append(b, 'e')
	x := decpt - 1
	if x < 0 {
		b = append(b, '-')
		x = -x
	} else {
		b = append(b, '+')
	}
	if x < 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, int64(x), 10)
}

const lowerHex = "0123456789abcdef"

// appendPythonString appends s as json.dumps writes a str with
// ensure_ascii=True.
func appendPythonString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= ' ' && c <= '~' && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		r, size := rune(c), 1
		if c >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:]) // RuneError for invalid bytes
		}
		switch r {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default:
			if r > 0xFFFF {
				r -= 0x10000
				b = appendU4(b, 0xD800+(r>>10))
				b = appendU4(b, 0xDC00+(r&0x3FF))
			} else {
				b = appendU4(b, r)
			}
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func appendU4(b []byte, r rune) []byte {
	return append(b, '\\', 'u', lowerHex[r>>12&0xF], lowerHex[r>>8&0xF], lowerHex[r>>4&0xF], lowerHex[r&0xF])
}

// pythonISOFormat returns t as the application writes its timestamps,
// datetime.utcnow().isoformat(): naive UTC, YYYY-MM-DDTHH:MM:SS, then
// ".ffffff" only when the microseconds are not zero. Precision below a
// microsecond (a doc timestamp's seventh fractional digit) is truncated:
// a Python datetime cannot hold it.
func pythonISOFormat(t time.Time) string {
	t = t.UTC()
	var buf [26]byte
	putDateTime(buf[:], t)
	us := t.Nanosecond() / 1000
	if us == 0 {
		return string(buf[:19])
	}
	buf[19] = '.'
	putDigits(buf[20:26], us)
	return string(buf[:])
}

// pythonReverseTs is the reverse timestamp of an execution's RowKey as the
// application computes it from its naive UTC start time on a host in UTC:
// 9999999999999 − int(dt.timestamp() * 1000). dt.timestamp() is the whole
// seconds plus microsecond / 1e6 as a double, so the product is a double
// that int() truncates; this reproduces that arithmetic bit for bit,
// including the rare start times where it is one millisecond below the
// exact value. The time is first truncated to microseconds, as a Python
// datetime holds it.
func pythonReverseTs(t time.Time) int64 {
	t = t.UTC()
	secs := t.Unix()
	us := int64(t.Nanosecond() / 1000)
	ts := float64(secs) + float64(us)/1e6
	ms := ts * 1000
	return maxReverseTs - int64(ms)
}
