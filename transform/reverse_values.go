package transform

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// How ReverseDoc turns a changed or new doc value into a property value
// (SPEC §15): the existing row's Edm type when the value fits it (what
// the forward transform maps from that type), else the type the Python
// SDK (azure-data-tables 12.4.2) gives the Python value json.loads makes.

// plainValue encodes doc value v for source property src. A timestamp
// property (stamp: by the field, or by the table's list for an unlisted
// property, SPEC §6–§7) that parses becomes an
// Edm.DateTime when the existing row has one there, else the string the
// application writes (datetime.isoformat() of naive UTC); one that does
// not parse is written as it is, with a warning.
func (r *docReversal) plainValue(src string, v any, stamp bool) (Value, bool) {
	v = plainJSON(v)
	et := r.existingType(src)
	if stamp {
		if s, isStr := v.(string); isStr {
			tm, ok := ParseTimestamp(s)
			switch {
			case !ok:
				r.warn(ReasonUnparseableTimestamp, src)
			case et == EdmDateTime:
				return Value{Type: EdmDateTime, Time: tm}, true
			case et == "" || et == EdmString:
				return String(pythonISOFormat(tm)), true
			}
		}
	}
	return r.typed(src, v, et)
}

// jsonValue encodes a JSON-valued field: the json.dumps text, unless the
// existing row holds the property as another type than a string (the
// forward transform maps such a value as it is).
func (r *docReversal) jsonValue(src string, v any) (Value, bool) {
	et := r.existingType(src)
	if et == "" || et == EdmString {
		text, ok := r.pyJSON(src, v)
		return String(text), ok
	}
	return r.typed(src, plainJSON(v), et)
}

// typed encodes v as Edm type et when it fits (et "" means the row has no
// such property), else as the Python SDK types it.
func (r *docReversal) typed(src string, v any, et EdmType) (Value, bool) {
	if et != "" {
		if val, ok := convertTo(v, et); ok {
			return val, true
		}
		r.warn(ReasonEdmTypeChanged, src)
	}
	return r.pythonTyped(src, v)
}

// pythonTyped types a doc value as the Python SDK types the value
// json.loads gives: str → String, bool → Boolean, int → Int32 when it fits
// in 32 bits, else Int64 (beyond that the SDK refuses it: a dead letter),
// float → Double; a dict or list, which the SDK cannot store, as its
// json.dumps text with a warning.
func (r *docReversal) pythonTyped(src string, v any) (Value, bool) {
	switch x := v.(type) {
	case string:
		return String(x), true
	case bool:
		return Value{Type: EdmBoolean, Bool: x}, true
	case int64:
		return pythonInt(x), true
	case int:
		return pythonInt(int64(x)), true
	case float64:
		return Value{Type: EdmDouble, Double: x}, true
	case json.Number:
		s := string(x)
		if !validNumber(s) {
			r.dead(ReverseUnencodable, src)
			return Value{}, false
		}
		if isIntegerLiteral(s) {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				r.dead(ReverseIntegerRange, src)
				return Value{}, false
			}
			return pythonInt(n), true
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			r.dead(ReverseUnencodable, src)
			return Value{}, false
		}
		return Value{Type: EdmDouble, Double: f}, true
	case Doc, []any:
		text, ok := r.pyJSON(src, x)
		if ok {
			r.warn(ReasonJSONAsText, src)
		}
		return String(text), ok
	}
	r.dead(ReverseUnencodable, fmt.Sprintf("%s (%T)", src, v))
	return Value{}, false
}

func pythonInt(n int64) Value {
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		return Value{Type: EdmInt32, Int: n}
	}
	return Value{Type: EdmInt64, Int: n}
}

// convertTo encodes v as Edm type et when v is something the forward
// transform maps a value of that type to (SPEC §2): a string for String;
// a GUID string for Guid; a bool for Boolean; an integer (or an integral
// number) in range for Int32 and Int64, and for Int64 also the decimal
// string of one above 2^53; a number, "NaN", "Infinity" or "-Infinity"
// for Double; a timestamp for DateTime; base64 for Binary.
func convertTo(v any, et EdmType) (Value, bool) {
	switch et {
	case EdmString:
		if s, ok := v.(string); ok {
			return String(s), true
		}
	case EdmGuid:
		if s, ok := v.(string); ok && isGUID(s) {
			return Value{Type: EdmGuid, Str: s}, true
		}
	case EdmBoolean:
		if b, ok := v.(bool); ok {
			return Value{Type: EdmBoolean, Bool: b}, true
		}
	case EdmInt32:
		if n, ok := integerOf(v); ok && n >= math.MinInt32 && n <= math.MaxInt32 {
			return Value{Type: EdmInt32, Int: n}, true
		}
	case EdmInt64:
		if n, ok := integerOf(v); ok {
			return Value{Type: EdmInt64, Int: n}, true
		}
		if s, ok := v.(string); ok {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil && (n > 1<<53 || n < -(1<<53)) {
				return Value{Type: EdmInt64, Int: n}, true
			}
		}
	case EdmDouble:
		switch x := v.(type) {
		case string:
			switch x {
			case "NaN":
				return Value{Type: EdmDouble, Double: math.NaN()}, true
			case "Infinity":
				return Value{Type: EdmDouble, Double: math.Inf(1)}, true
			case "-Infinity":
				return Value{Type: EdmDouble, Double: math.Inf(-1)}, true
			}
		default:
			if f, ok := floatOf(v); ok {
				return Value{Type: EdmDouble, Double: f}, true
			}
		}
	case EdmDateTime:
		if s, ok := v.(string); ok {
			if tm, ok := ParseTimestamp(s); ok {
				return Value{Type: EdmDateTime, Time: tm}, true
			}
		}
	case EdmBinary:
		if s, ok := v.(string); ok {
			if b, err := base64.StdEncoding.Strict().DecodeString(s); err == nil {
				if b == nil {
					b = []byte{}
				}
				return Value{Type: EdmBinary, Bytes: b}, true
			}
		}
	}
	return Value{}, false
}

// integerOf returns a doc number's integer value: an integer, or an
// integral number of magnitude at most 2^53 (where a double is exact).
func integerOf(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case json.Number:
		if isIntegerLiteral(string(x)) {
			n, err := strconv.ParseInt(string(x), 10, 64)
			return n, err == nil
		}
	}
	if f, ok := floatOf(v); ok && f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
		return int64(f), true
	}
	return 0, false
}

// floatOf returns a doc number as a double when that is exact for an
// integer (magnitude at most 2^53) and in range for any number.
func floatOf(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), x <= 1<<53 && x >= -(1<<53)
	case int:
		return float64(x), x <= 1<<53 && x >= -(1<<53)
	case json.Number:
		if !validNumber(string(x)) {
			return 0, false
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return 0, false
		}
		if isIntegerLiteral(string(x)) && math.Abs(f) > 1<<53 {
			return 0, false
		}
		return f, true
	}
	return 0, false
}

// isGUID reports whether s is a GUID as Table Storage writes one:
// 8-4-4-4-12 hexadecimal digits.
func isGUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// plainJSON returns the Go tree of a decoded JSON value, v otherwise.
func plainJSON(v any) any {
	if j, ok := v.(*JSON); ok {
		return j.Value()
	}
	return v
}

// pyJSON is pythonJSON, dead-lettering the doc when v has no JSON text.
func (r *docReversal) pyJSON(src string, v any) (string, bool) {
	s, err := pythonJSON(v)
	if err != nil {
		r.dead(ReverseUnencodable, src)
		return "", false
	}
	return s, true
}

// Table Storage limits (its data model documentation).
const (
	maxPropertyBytes = 64 << 10 // a String (UTF-16) or Binary value
	maxRowBytes      = 1 << 20  // a row by the size formula
	maxOwnProperties = 252      // 255 less PartitionKey, RowKey, Timestamp
)

// checkLimits dead-letters rows Table Storage would refuse: keys with a
// forbidden character, values and rows above its size limits.
func (r *docReversal) checkLimits() {
	if r.fail != nil {
		return
	}
	if detail, bad := impossibleKey(r.out.Row.PartitionKey, r.out.Row.RowKey, "the row"); bad {
		r.dead(ReverseForbiddenKeyChar, detail)
		return
	}
	r.dropImpossibleIndexRows()
	rows := append([]Row{r.out.Row}, r.out.Index...)
	for i, row := range rows {
		which := "the row"
		if i > 0 {
			which = "the " + Kind(row.RowKey) + " index row"
		}
		if n := len(row.Props); n > maxOwnProperties {
			r.dead(ReverseRowTooLarge, fmt.Sprintf("%s has %d properties, more than %d", which, n, maxOwnProperties))
			return
		}
		size := 4 + 2*(utf16Len(row.PartitionKey)+utf16Len(row.RowKey))
		names := make([]string, 0, len(row.Props))
		for name := range row.Props {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			v := row.Props[name]
			size += 8 + 2*utf16Len(name)
			switch v.Type {
			case EdmString:
				n := 2 * utf16Len(v.Str)
				if n > maxPropertyBytes {
					r.dead(ReversePropertyTooLarge, fmt.Sprintf("%s of %s is %d bytes in UTF-16", name, which, n))
					return
				}
				size += n + 4
			case EdmBinary:
				if len(v.Bytes) > maxPropertyBytes {
					r.dead(ReversePropertyTooLarge, fmt.Sprintf("%s of %s is %d bytes", name, which, len(v.Bytes)))
					return
				}
				size += len(v.Bytes) + 4
			case EdmGuid:
				size += 16
			case EdmInt32:
				size += 4
			case EdmBoolean:
				size++
			default: // Int64, Double, DateTime
				size += 8
			}
		}
		if size > maxRowBytes {
			r.dead(ReverseRowTooLarge, fmt.Sprintf("%s is %d bytes by the Table service's size formula, more than %d", which, size, maxRowBytes))
			return
		}
	}
}

// impossibleKey says which key (PartitionKey or RowKey) of which row holds
// a character Table Storage forbids, and which character.
func impossibleKey(pk, rk, which string) (detail string, bad bool) {
	for _, k := range []struct{ name, val string }{{"PartitionKey", pk}, {"RowKey", rk}} {
		if c, bad := forbiddenKeyChar(k.val); bad {
			return fmt.Sprintf("%s of %s has %U", k.name, which, c), true
		}
	}
	return "", false
}

// dropImpossibleIndexRows moves the index rows whose keys Table Storage
// refuses from Index to IndexDeadLetters, and drops deletes of such rows
// (no table can hold them, so there is nothing to delete).
func (r *docReversal) dropImpossibleIndexRows() {
	kept := r.out.Index[:0]
	for _, row := range r.out.Index {
		detail, bad := impossibleKey(row.PartitionKey, row.RowKey, "the "+Kind(row.RowKey)+" index row")
		if !bad {
			kept = append(kept, row)
			continue
		}
		r.out.IndexDeadLetters = append(r.out.IndexDeadLetters, IndexDeadLetter{
			Row:    RowRef{Table: row.Table, PartitionKey: row.PartitionKey, RowKey: row.RowKey},
			Reason: ReverseForbiddenKeyChar,
			Detail: detail,
		})
	}
	r.out.Index = kept
	r.out.Delete = slices.DeleteFunc(r.out.Delete, func(ref RowRef) bool {
		_, bad := impossibleKey(ref.PartitionKey, ref.RowKey, "")
		return bad
	})
}

// forbiddenKeyChar returns the first character Table Storage forbids in a
// PartitionKey or RowKey: '/', '\\', '#', '?', U+0000–U+001F, U+007F–U+009F.
func forbiddenKeyChar(s string) (rune, bool) {
	for _, c := range s {
		if c == '/' || c == '\\' || c == '#' || c == '?' || c <= 0x1F || (c >= 0x7F && c <= 0x9F) {
			return c, true
		}
	}
	return 0, false
}

// utf16Len is the length of s in UTF-16 code units.
func utf16Len(s string) int {
	n := 0
	for _, c := range s {
		n++
		if c > 0xFFFF {
			n++
		}
	}
	return n
}

// DiffRows returns what differs between two rows: "Table",
// "PartitionKey" and "RowKey" when those do, then the names of the
// properties that one row has and the other not, or that differ in Edm
// type or value, in name order. Doubles compare by their bits (NaN equals
// NaN), DateTimes as instants, Binary by bytes. It returns nil for rows
// that hold the same; ETag, Timestamp and DecodeError are not compared. It
// is pure and safe for concurrent use.
func DiffRows(a, b Row) []string {
	var out []string
	if a.Table != b.Table {
		out = append(out, "Table")
	}
	if a.PartitionKey != b.PartitionKey {
		out = append(out, "PartitionKey")
	}
	if a.RowKey != b.RowKey {
		out = append(out, "RowKey")
	}
	var names []string
	for n := range a.Props {
		names = append(names, n)
	}
	for n := range b.Props {
		if _, ok := a.Props[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		va, oka := a.Props[n]
		vb, okb := b.Props[n]
		if oka != okb || !sameValue(va, vb) {
			out = append(out, n)
		}
	}
	return out
}

// sameValue reports whether two property values are the same Edm type and
// value.
func sameValue(a, b Value) bool {
	if a.Type != b.Type {
		return false
	}
	switch a.Type {
	case EdmBoolean:
		return a.Bool == b.Bool
	case EdmInt32, EdmInt64:
		return a.Int == b.Int
	case EdmDouble:
		return math.Float64bits(a.Double) == math.Float64bits(b.Double) || (math.IsNaN(a.Double) && math.IsNaN(b.Double))
	case EdmDateTime:
		return a.Time.Equal(b.Time)
	case EdmBinary:
		return bytes.Equal(a.Bytes, b.Bytes)
	}
	return a.Str == b.Str
}
