package transform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// FuzzDecodeEntity checks DecodeEntity (jsontext) against
// decodeEntityStd, the encoding/json decoder it replaced: both accept the
// same inputs, give the same rows, and fail on the same property with the
// same error when a row has one bad value.
func FuzzDecodeEntity(f *testing.F) {
	for _, s := range []string{
		benchExecutionRow,
		`{"odata.metadata":"x","odata.etag":"W/\"e\"","PartitionKey":"pk","RowKey":"rk","Timestamp":"2025-01-02T03:04:05.1234567Z","Int":5,"Dbl":5.0,"Exp":1e3}`,
		`{"NegZero@odata.type":"Edm.Double","NegZero":-0.0,"NaN@odata.type":"Edm.Double","NaN":"NaN","Inf@odata.type":"Edm.Double","Inf":"-Infinity"}`,
		`{"I64@odata.type":"Edm.Int64","I64":"-9223372036854775808","Big":2147483648,"Bin@odata.type":"Edm.Binary","Bin":"AAEC"}`,
		`{"Dt@odata.type":"Edm.DateTime","Dt":"2025-11-20T14:03:12.3456789+01:00","G@odata.type":"Edm.Guid","G":"0f8fad5b","S":"t\u00e9\n\"x\"","B":true}`,
		`{"A":1,"A":"x","A@odata.type":5,"odata.etag":1,"PartitionKey":"a","PartitionKey":"b"}`,
		`{"X@odata.type":"Edm.Int32","X":"7","Y@odata.type":"Edm.Boolean","Y":false} `,
		`{"Ünï":"\ud83d\ude00","K":"é"}`, `{}`, `null`, `{"a":1}x`, `{"a":{}}`, `{"a":null}`,
		`{"s":"\ud800","t":"\ud800\u0041","u":"` + "\xff" + `"}`, `[1]`, `"x"`, `{"RowKey":5}`, `{"a":[1,{}]}`,
		`{"RowKey":"r","Timestamp":"yesterday"}`, `{"X@odata.type":"Edm.Foo","X":"1"}`, `{"a":1,}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := DecodeEntity("T", data)
		want, wantErr := decodeEntityStd("T", data)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: error %v, encoding/json %v", data, err, wantErr)
		}
		if got.Table != want.Table || got.PartitionKey != want.PartitionKey || got.RowKey != want.RowKey ||
			got.ETag != want.ETag || got.Timestamp != want.Timestamp || len(got.Props) != len(want.Props) ||
			(got.Props == nil) != (want.Props == nil) {
			t.Fatalf("%q: %+v, encoding/json %+v", data, got, want)
		}
		for name, w := range want.Props {
			g, ok := got.Props[name]
			same := ok && g.Type == w.Type && g.Str == w.Str && g.Bool == w.Bool &&
				g.Int == w.Int && math.Float64bits(g.Double) == math.Float64bits(w.Double) &&
				g.Time == w.Time && bytes.Equal(g.Bytes, w.Bytes) && (g.Bytes == nil) == (w.Bytes == nil)
			if !same {
				t.Fatalf("%q: property %q %+v, encoding/json %+v", data, name, g, w)
			}
		}
		// The property an error names depends on map order in the
		// encoding/json decoder; with one bad property it is the same.
		if err != nil && got.RowKey != "" && badProperties(data) == 1 && err.Error() != wantErr.Error() {
			t.Fatalf("%q: error %v, encoding/json %v", data, err, wantErr)
		}
	})
}

// badProperties counts the properties decodeEntityStd cannot decode.
func badProperties(data []byte) int {
	var raw map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if dec.Decode(&raw) != nil {
		return 0
	}
	n := 0
	for name, v := range raw {
		if _, err := decodeValue(annotationOf(raw, name), toScalar(v)); err != nil && isProperty(name) {
			n++
		}
	}
	return n
}

func isProperty(name string) bool {
	return name != "PartitionKey" && name != "RowKey" && name != "Timestamp" &&
		!strings.Contains(name, "@odata.") && !strings.HasPrefix(name, "odata.")
}

func annotationOf(raw map[string]any, name string) EdmType {
	annotated, _ := raw[name+"@odata.type"].(string)
	return EdmType(annotated)
}

// decodeEntityStd is DecodeEntity as it was written with encoding/json
// (numbers as json.Number, the entity as a map), the reference for
// FuzzDecodeEntity.
func decodeEntityStd(table string, data []byte) (Row, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return Row{}, fmt.Errorf("decode entity: %w", err)
	}
	row := Row{Table: table, Props: make(map[string]Value, len(raw))}
	for _, name := range []string{"PartitionKey", "RowKey", "Timestamp"} {
		v, present := raw[name]
		if !present {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return Row{}, fmt.Errorf("decode entity: %s is not a string", name)
		}
		switch name {
		case "PartitionKey":
			row.PartitionKey = s
		case "RowKey":
			row.RowKey = s
		case "Timestamp":
			tm, err := parseEdmTime(s)
			if err != nil {
				return Row{Table: table, PartitionKey: row.PartitionKey, RowKey: row.RowKey}, fmt.Errorf("decode entity %q: Timestamp: %w", row.RowKey, err)
			}
			row.Timestamp = tm
		}
	}
	for name, v := range raw {
		if !isProperty(name) {
			continue
		}
		val, err := decodeValue(annotationOf(raw, name), toScalar(v))
		if err != nil {
			return Row{Table: table, PartitionKey: row.PartitionKey, RowKey: row.RowKey, Timestamp: row.Timestamp},
				fmt.Errorf("decode entity %q: property %s: %w", row.RowKey, name, err)
		}
		row.Props[name] = val
	}
	if etag, ok := raw["odata.etag"].(string); ok {
		row.ETag = etag
	}
	return row, nil
}

// toScalar converts a value encoding/json decoded with UseNumber.
func toScalar(v any) scalar {
	switch x := v.(type) {
	case nil:
		return scalar{}
	case string:
		return scalar{kind: scalarString, s: x}
	case json.Number:
		return scalar{kind: scalarNumber, s: string(x)}
	case bool:
		return scalar{kind: scalarBool, b: x}
	case map[string]any:
		return scalar{kind: scalarObject}
	}
	return scalar{kind: scalarArray}
}
