package transform

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// edmTimeLayout is how Table Storage writes Edm.DateTime: UTC with exactly
// seven fractional digits.
const edmTimeLayout = "2006-01-02T15:04:05.0000000Z"

// DecodeEntity decodes one entity of the Table service's JSON format with
// annotations (odata=minimalmetadata or fullmetadata) into a Row of the given
// table. Numbers are decoded exactly: an unannotated number is an Int32 when
// it is written as an integer that fits, otherwise a Double; annotated
// Int64, Double (including "NaN", "Infinity", "-Infinity"), DateTime, Guid and
// Binary values are decoded by their annotation. PartitionKey, RowKey,
// Timestamp and odata.etag go into the Row's fields, not into Props, and other
// odata.* control information is ignored.
//
// It returns an error naming the property when a value does not match its
// type; the error never contains the value itself. With such an error the
// returned Row still carries the keys (and Timestamp) when they were
// readable, so that callers can dead-letter the row.
func DecodeEntity(table string, data []byte) (Row, error) {
	td := newTextDecoder(data, "")
	defer td.release()
	members, err := readEntity(td)
	if err != nil {
		return Row{}, fmt.Errorf("decode entity: %w", err)
	}
	// A name that occurs twice keeps its last value (the service never
	// sends one twice).
	var keys [3]*scalar // PartitionKey, RowKey, Timestamp
	var etag *scalar
	var annotations map[string]*scalar // property name → its @odata.type
	nprops := 0
	for i := range members {
		m := &members[i]
		switch name := m.name; {
		case name == "PartitionKey":
			keys[0] = &m.v
		case name == "RowKey":
			keys[1] = &m.v
		case name == "Timestamp":
			keys[2] = &m.v
		case name == "odata.etag":
			etag = &m.v
		case strings.HasSuffix(name, "@odata.type"):
			if annotations == nil {
				annotations = make(map[string]*scalar)
			}
			annotations[strings.TrimSuffix(name, "@odata.type")] = &m.v
		case !strings.Contains(name, "@odata.") && !strings.HasPrefix(name, "odata."):
			m.prop = true
			nprops++
		}
	}
	row := Row{Table: table, Props: make(map[string]Value, nprops)}
	if row.PartitionKey, err = keyString("PartitionKey", keys[0]); err != nil {
		return Row{}, err
	}
	if row.RowKey, err = keyString("RowKey", keys[1]); err != nil {
		return Row{}, err
	}
	timestamp, err := keyString("Timestamp", keys[2])
	if err != nil {
		return Row{}, err
	}
	if keys[2] != nil {
		if row.Timestamp, err = parseEdmTime(timestamp); err != nil {
			return Row{Table: table, PartitionKey: row.PartitionKey, RowKey: row.RowKey}, fmt.Errorf("decode entity %q: Timestamp: %w", row.RowKey, err)
		}
	}
	// From the last member back, so that the last value of a name is the
	// one decoded.
	for i := len(members) - 1; i >= 0; i-- {
		m := &members[i]
		if _, done := row.Props[m.name]; done || !m.prop {
			continue
		}
		var annotated EdmType
		if a := annotations[m.name]; a != nil && a.kind == scalarString {
			annotated = EdmType(a.s)
		}
		val, err := decodeValue(annotated, m.v)
		if err != nil {
			return Row{Table: table, PartitionKey: row.PartitionKey, RowKey: row.RowKey, Timestamp: row.Timestamp},
				fmt.Errorf("decode entity %q: property %s: %w", row.RowKey, m.name, err)
		}
		row.Props[m.name] = val
	}
	if etag != nil && etag.kind == scalarString {
		row.ETag = etag.s
	}
	return row, nil
}

// keyString returns the string value of the system property name, "" when
// v is nil (absent).
func keyString(name string, v *scalar) (string, error) {
	switch {
	case v == nil:
		return "", nil
	case v.kind != scalarString:
		return "", fmt.Errorf("decode entity: %s is not a string", name)
	}
	return v.s, nil
}

// entityMember is one member of an entity object; prop tells a property
// from the system properties and odata annotations.
type entityMember struct {
	name string
	v    scalar
	prop bool
}

// readEntity reads the members of the entity object td reads in order
// with jsontext, into td's list of members (valid until td is released).
// Like encoding/json decoding into a map, it accepts invalid UTF-8 and
// lone surrogates (as U+FFFD), repeated names, and anything after the
// object; JSON null is an entity without members.
func readEntity(td *textDecoder) ([]entityMember, error) {
	d := &td.Decoder
	switch k := d.PeekKind(); k {
	case '{':
	case 'n':
		_, err := d.ReadToken()
		return nil, err
	default:
		if err := d.SkipValue(); err != nil { // also the error PeekKind found
			return nil, err
		}
		// The message encoding/json gave, which earlier versions returned.
		return nil, fmt.Errorf("json: cannot unmarshal %s into Go value of type map[string]interface {}", kindName(k))
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, err
	}
	members := td.members[:0]
	defer func() { td.members = members }()
	for d.PeekKind() != '}' {
		name, err := d.ReadToken()
		if err != nil {
			return nil, err
		}
		m := entityMember{name: name.String()}
		if m.v, err = readScalar(d); err != nil {
			return nil, err
		}
		members = append(members, m)
	}
	_, err := d.ReadToken()
	return members, err
}

// readScalar reads one property value; an object or array is skipped
// and only its kind kept.
func readScalar(d *jsontext.Decoder) (scalar, error) {
	switch d.PeekKind() {
	case '{':
		return scalar{kind: scalarObject}, d.SkipValue()
	case '[':
		return scalar{kind: scalarArray}, d.SkipValue()
	}
	tok, err := d.ReadToken()
	if err != nil {
		return scalar{}, err
	}
	switch tok.Kind() {
	case 'n':
		return scalar{}, nil
	case 't', 'f':
		return scalar{kind: scalarBool, b: tok.Bool()}, nil
	case '"':
		return scalar{kind: scalarString, s: tok.String()}, nil
	default: // '0'
		return scalar{kind: scalarNumber, s: tok.String()}, nil
	}
}

// kindName names a JSON kind other than an object as encoding/json does.
func kindName(k jsontext.Kind) string {
	switch k {
	case '[':
		return "array"
	case '"':
		return "string"
	case '0':
		return "number"
	}
	return "bool"
}

// scalarKind is the JSON type of a property value.
type scalarKind uint8

const (
	scalarNull scalarKind = iota
	scalarString
	scalarNumber // s is the number's exact text
	scalarBool
	scalarObject
	scalarArray
)

// scalar is one property value as JSON has it, before its Edm type is
// applied.
type scalar struct {
	kind scalarKind
	s    string
	b    bool
}

func decodeValue(t EdmType, v scalar) (Value, error) {
	if v.kind == scalarNull {
		return Value{}, fmt.Errorf("null value")
	}
	switch t {
	case "":
		switch v.kind {
		case scalarString:
			return Value{Type: EdmString, Str: v.s}, nil
		case scalarBool:
			return Value{Type: EdmBoolean, Bool: v.b}, nil
		case scalarNumber:
			s := v.s
			if !strings.ContainsAny(s, ".eE") {
				if n, err := strconv.ParseInt(s, 10, 32); err == nil {
					return Value{Type: EdmInt32, Int: n}, nil
				}
			}
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return Value{}, fmt.Errorf("number out of range for Edm.Double")
			}
			return Value{Type: EdmDouble, Double: f}, nil
		case scalarObject:
			// The texts of the Go types encoding/json decoded these to,
			// which earlier versions returned.
			return Value{}, fmt.Errorf("unsupported JSON value map[string]interface {}")
		default:
			return Value{}, fmt.Errorf("unsupported JSON value []interface {}")
		}
	case EdmString, EdmGuid:
		if v.kind != scalarString {
			return Value{}, fmt.Errorf("%s value is not a string", t)
		}
		return Value{Type: t, Str: v.s}, nil
	case EdmBoolean:
		if v.kind != scalarBool {
			return Value{}, fmt.Errorf("Edm.Boolean value is not a boolean")
		}
		return Value{Type: t, Bool: v.b}, nil
	case EdmInt32, EdmInt64:
		if v.kind != scalarString && v.kind != scalarNumber {
			return Value{}, fmt.Errorf("%s value is not a number", t)
		}
		bits := 64
		if t == EdmInt32 {
			bits = 32
		}
		n, err := strconv.ParseInt(v.s, 10, bits)
		if err != nil {
			return Value{}, fmt.Errorf("%s value is not an integer in range", t)
		}
		return Value{Type: t, Int: n}, nil
	case EdmDouble:
		switch v.kind {
		case scalarString:
			switch v.s {
			case "NaN":
				return Value{Type: t, Double: math.NaN()}, nil
			case "Infinity", "INF":
				return Value{Type: t, Double: math.Inf(1)}, nil
			case "-Infinity", "-INF":
				return Value{Type: t, Double: math.Inf(-1)}, nil
			}
			f, err := strconv.ParseFloat(v.s, 64)
			if err != nil {
				return Value{}, fmt.Errorf("Edm.Double value is not a number")
			}
			return Value{Type: t, Double: f}, nil
		case scalarNumber:
			f, err := strconv.ParseFloat(v.s, 64)
			if err != nil {
				return Value{}, fmt.Errorf("Edm.Double value out of range")
			}
			return Value{Type: t, Double: f}, nil
		default:
			return Value{}, fmt.Errorf("Edm.Double value is not a number")
		}
	case EdmDateTime:
		if v.kind != scalarString {
			return Value{}, fmt.Errorf("Edm.DateTime value is not a string")
		}
		tm, err := parseEdmTime(v.s)
		if err != nil {
			return Value{}, err
		}
		return Value{Type: t, Time: tm}, nil
	case EdmBinary:
		if v.kind != scalarString {
			return Value{}, fmt.Errorf("Edm.Binary value is not a string")
		}
		b, err := base64.StdEncoding.DecodeString(v.s)
		if err != nil {
			return Value{}, fmt.Errorf("Edm.Binary value is not base64")
		}
		if b == nil {
			b = []byte{}
		}
		return Value{Type: t, Bytes: b}, nil
	default:
		return Value{}, fmt.Errorf("unknown type annotation %q", string(t))
	}
}

func parseEdmTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("Edm.DateTime value is not an RFC 3339 time")
	}
	return t.UTC(), nil
}

// EncodeEntity encodes a row in the Table service's annotated JSON format,
// the inverse of DecodeEntity: every property that JSON alone cannot type
// (Int64, DateTime, Guid, Binary, and Double) carries its odata.type
// annotation. Doubles are written so that they stay doubles ("5.0", "NaN").
// Timestamp and ETag are not written (the service owns them). Properties
// are written in name order, so the output is deterministic.
func EncodeEntity(row Row) []byte {
	var b bytes.Buffer
	b.WriteString(`{"PartitionKey":`)
	writeJSONString(&b, row.PartitionKey)
	b.WriteString(`,"RowKey":`)
	writeJSONString(&b, row.RowKey)
	names := make([]string, 0, len(row.Props))
	for name := range row.Props {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := row.Props[name]
		switch v.Type {
		case EdmInt64, EdmDateTime, EdmGuid, EdmBinary, EdmDouble:
			b.WriteByte(',')
			writeJSONString(&b, name+"@odata.type")
			b.WriteByte(':')
			writeJSONString(&b, string(v.Type))
		}
		b.WriteByte(',')
		writeJSONString(&b, name)
		b.WriteByte(':')
		switch v.Type {
		case EdmString, EdmGuid:
			writeJSONString(&b, v.Str)
		case EdmBoolean:
			b.WriteString(strconv.FormatBool(v.Bool))
		case EdmInt32:
			b.WriteString(strconv.FormatInt(v.Int, 10))
		case EdmInt64:
			writeJSONString(&b, strconv.FormatInt(v.Int, 10))
		case EdmDouble:
			b.WriteString(FormatDouble(v.Double))
		case EdmDateTime:
			writeJSONString(&b, v.Time.UTC().Format(edmTimeLayout))
		case EdmBinary:
			writeJSONString(&b, base64.StdEncoding.EncodeToString(v.Bytes))
		default:
			writeJSONString(&b, v.Str)
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// FormatDouble writes a double as a JSON value that reads back as the same
// double: NaN and ±Infinity as the strings Table Storage uses, integral
// values with a ".0" so they are not mistaken for integers.
func FormatDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return `"NaN"`
	case math.IsInf(f, 1):
		return `"Infinity"`
	case math.IsInf(f, -1):
		return `"-Infinity"`
	}
	// Like JavaScript: plain notation for 1e-6 ≤ |f| < 1e21, else exponent.
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'g'
	}
	s := strconv.FormatFloat(f, format, -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // a Go string always marshals
	b.Write(enc)
}
