package transform

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Canonical returns the RFC 8785 (JSON Canonicalization Scheme) form of v:
// object properties sorted by their UTF-16 code units, no whitespace,
// numbers in the ECMAScript shortest round-trip form of their IEEE 754
// double value, strings with minimal escaping.
//
// v may be built of nil, bool, string, any Go integer type, float32,
// float64, json.Number, Doc, *JSON, []any and map[string]any — that is, a Doc
// produced by Transform, or any value encoding/json decodes (with or
// without UseNumber). It returns an error for NaN or ±Inf, a number that
// does not fit a double, a string that is not valid UTF-8, a Doc with two
// properties of the same name, or a value of any other type.
func Canonical(v any) ([]byte, error) {
	return appendCanonical(make([]byte, 0, 512), v)
}

// Hash returns the provenance hash of a document (SPEC §10): the lower-case
// hex SHA-256 of the RFC 8785 canonical JSON of doc without its top-level
// properties _migration, ttl and the service's system properties _rid,
// _self, _etag, _ts, _attachments and _lsn (the change feed adds _lsn).
//
// doc is a Doc or a map[string]any. Because canonical JSON depends only on
// the values (every number is taken as a double, property order does not
// matter), a doc written as JSON and decoded again — numbers as float64 or
// json.Number, "5.0" read back as 5 — hashes the same as the Doc Transform
// produced. It returns an error when Canonical would, or when doc is neither
// a Doc nor a map.
func Hash(doc any) (string, error) {
	var b []byte
	var err error
	switch d := doc.(type) {
	case Doc:
		b, err = appendCanonicalDoc(make([]byte, 0, 1024), d, hashExcluded)
	case map[string]any:
		b, err = appendCanonicalMap(make([]byte, 0, 1024), d, hashExcluded)
	default:
		return "", fmt.Errorf("hash: unsupported document type %T", doc)
	}
	if err != nil {
		return "", fmt.Errorf("hash: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// hashExcluded reports whether a top-level property is left out of Hash.
func hashExcluded(name string) bool {
	switch name {
	case "_migration", "ttl", "_rid", "_self", "_etag", "_ts", "_attachments", "_lsn":
		return true
	}
	return false
}

func appendCanonical(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case string:
		return appendString(b, x)
	case float64:
		return appendES6Number(b, x)
	case float32:
		return appendES6Number(b, float64(x))
	case int64:
		return appendES6Number(b, float64(x))
	case int:
		return appendES6Number(b, float64(x))
	case int32:
		return appendES6Number(b, float64(x))
	case int16:
		return appendES6Number(b, float64(x))
	case int8:
		return appendES6Number(b, float64(x))
	case uint64:
		return appendES6Number(b, float64(x))
	case uint:
		return appendES6Number(b, float64(x))
	case uint32:
		return appendES6Number(b, float64(x))
	case uint16:
		return appendES6Number(b, float64(x))
	case uint8:
		return appendES6Number(b, float64(x))
	case json.Number:
		if !validNumber(string(x)) {
			return b, fmt.Errorf("invalid number %q", string(x))
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return b, fmt.Errorf("number %s does not fit a double", string(x))
		}
		return appendES6Number(b, f)
	case Doc:
		return appendCanonicalDoc(b, x, nil)
	case *JSON:
		return x.appendNode(b, x.root(), true)
	case map[string]any:
		return appendCanonicalMap(b, x, nil)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendCanonical(b, e); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	default:
		return b, fmt.Errorf("unsupported value type %T", v)
	}
}

func appendCanonicalDoc(b []byte, d Doc, skip func(string) bool) ([]byte, error) {
	// Sort indexes, not Fields: small objects need no allocation.
	var smallIdx [48]int
	var smallNames [48]string
	idx, names := smallIdx[:0], smallNames[:0]
	if len(d) > len(smallIdx) {
		idx, names = make([]int, 0, len(d)), make([]string, 0, len(d))
	}
	for i, f := range d {
		names = append(names, f.Name)
		if skip == nil || !skip(f.Name) {
			idx = append(idx, i)
		}
	}
	sortByName(idx, names)
	var err error
	b = append(b, '{')
	for n, i := range idx {
		if n > 0 {
			if names[i] == names[idx[n-1]] {
				return b, fmt.Errorf("duplicate property %q", names[i])
			}
			b = append(b, ',')
		}
		if b, err = appendString(b, names[i]); err != nil {
			return b, err
		}
		b = append(b, ':')
		if b, err = appendCanonical(b, d[i].Value); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// sortByName sorts idx by the UTF-16 order of names[idx[i]]: insertion
// sort for the usual small objects, slices.SortFunc otherwise. Only the
// indexes move (moving strings would cost write barriers).
func sortByName(idx []int, names []string) {
	if len(idx) > 48 {
		slices.SortFunc(idx, func(x, y int) int { return compareUTF16(names[x], names[y]) })
		return
	}
	for i := 1; i < len(idx); i++ {
		v := idx[i]
		name := names[v]
		j := i
		for ; j > 0; j-- {
			prev := names[idx[j-1]]
			// Most names differ in their first byte, often ASCII.
			if len(prev) > 0 && len(name) > 0 && prev[0] != name[0] && (prev[0]|name[0]) < 0x80 {
				if prev[0] < name[0] {
					break
				}
			} else if compareUTF16(prev, name) <= 0 {
				break
			}
			idx[j] = idx[j-1]
		}
		idx[j] = v
	}
}

func appendCanonicalMap(b []byte, m map[string]any, skip func(string) bool) ([]byte, error) {
	fields := make([]Field, 0, len(m))
	for k, v := range m {
		if skip == nil || !skip(k) {
			fields = append(fields, Field{k, v})
		}
	}
	slices.SortFunc(fields, func(x, y Field) int { return compareUTF16(x.Name, y.Name) })
	return appendCanonicalDoc(b, Doc(fields), nil)
}

// compareUTF16 orders two valid UTF-8 strings by their UTF-16 code units,
// as RFC 8785 §3.2.3 requires. It differs from byte order only where a
// character above U+FFFF (a surrogate pair) meets one in U+E000–U+FFFF.
func compareUTF16(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	if a[i] < 0x80 && b[i] < 0x80 {
		return int(a[i]) - int(b[i])
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	ua, ub := utf16Lead(ra), utf16Lead(rb)
	if ua != ub {
		return int(ua) - int(ub)
	}
	return int(ra) - int(rb) // same lead surrogate: code point order is unit order
}

func utf16Lead(r rune) rune {
	if r < 0x10000 {
		return r
	}
	return 0xD800 + (r-0x10000)>>10
}

// appendES6Number appends f as ECMAScript's Number.prototype.toString
// writes it (RFC 8785 §3.2.2.3).
func appendES6Number(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, fmt.Errorf("NaN and Infinity have no JSON form")
	}
	if f == 0 {
		return append(b, '0'), nil // also -0
	}
	var buf [32]byte
	s := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // -d.ddde±xx
	if s[0] == '-' {
		b = append(b, '-')
		s = s[1:]
	}
	e := 0
	for e < len(s) && s[e] != 'e' {
		e++
	}
	exp, _ := strconv.Atoi(string(s[e+1:]))
	var digitBuf [24]byte
	digits := append(digitBuf[:0], s[0])
	if e > 1 {
		digits = append(digits, s[2:e]...)
	}
	k, n := len(digits), exp+1 // value = 0.digits × 10^n
	switch {
	case k <= n && n <= 21:
		b = append(b, digits...)
		for range n - k {
			b = append(b, '0')
		}
	case 0 < n && n <= 21:
		b = append(b, digits[:n]...)
		b = append(b, '.')
		b = append(b, digits[n:]...)
	case -6 < n && n <= 0:
		b = append(b, '0', '.')
		for range -n {
			b = append(b, '0')
		}
		b = append(b, digits...)
	default:
		b = append(b, digits[0])
		if k > 1 {
			b = append(b, '.')
			b = append(b, digits[1:]...)
		}
		b = append(b, 'e')
		if n-1 >= 0 {
			b = append(b, '+')
		}
		b = strconv.AppendInt(b, int64(n-1), 10)
	}
	return b, nil
}
