package transform

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestDecodeEntity(t *testing.T) {
	in := `{"odata.metadata":"x","odata.etag":"W/\"datetime'2025-01-02T03%3A04%3A05.1234567Z'\"",
		"PartitionKey":"pk","RowKey":"rk","Timestamp":"2025-01-02T03:04:05.1234567Z",
		"Int":5,"Dbl":5.0,"Exp":1e3,"NegZero@odata.type":"Edm.Double","NegZero":-0.0,
		"NaN@odata.type":"Edm.Double","NaN":"NaN","Inf@odata.type":"Edm.Double","Inf":"Infinity","NInf@odata.type":"Edm.Double","NInf":"-Infinity",
		"I64@odata.type":"Edm.Int64","I64":"-9223372036854775808",
		"Big":2147483648,
		"Dt@odata.type":"Edm.DateTime","Dt":"2025-11-20T14:03:12.3456789+01:00",
		"Bin@odata.type":"Edm.Binary","Bin":"AAEC",
		"G@odata.type":"Edm.Guid","G":"0f8fad5b-d9cb-469f-a165-70867728950e",
		"S":"text","B":true}`
	row, err := DecodeEntity("T", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if row.Table != "T" || row.PartitionKey != "pk" || row.RowKey != "rk" {
		t.Errorf("keys %q %q %q", row.Table, row.PartitionKey, row.RowKey)
	}
	if want := time.Date(2025, 1, 2, 3, 4, 5, 123456700, time.UTC); !row.Timestamp.Equal(want) {
		t.Errorf("Timestamp %v", row.Timestamp)
	}
	if row.ETag != `W/"datetime'2025-01-02T03%3A04%3A05.1234567Z'"` {
		t.Errorf("ETag %q", row.ETag)
	}
	check := func(name string, ok bool) {
		t.Helper()
		if !ok {
			t.Errorf("%s = %+v", name, row.Props[name])
		}
	}
	p := row.Props
	check("Int", p["Int"].Type == EdmInt32 && p["Int"].Int == 5)
	check("Dbl", p["Dbl"].Type == EdmDouble && p["Dbl"].Double == 5)
	check("Exp", p["Exp"].Type == EdmDouble && p["Exp"].Double == 1000)
	check("NegZero", p["NegZero"].Type == EdmDouble && p["NegZero"].Double == 0 && math.Signbit(p["NegZero"].Double))
	check("NaN", p["NaN"].Type == EdmDouble && math.IsNaN(p["NaN"].Double))
	check("Inf", p["Inf"].Type == EdmDouble && math.IsInf(p["Inf"].Double, 1))
	check("NInf", p["NInf"].Type == EdmDouble && math.IsInf(p["NInf"].Double, -1))
	check("I64", p["I64"].Type == EdmInt64 && p["I64"].Int == math.MinInt64)
	check("Big", p["Big"].Type == EdmDouble && p["Big"].Double == 2147483648)
	check("Dt", p["Dt"].Type == EdmDateTime && p["Dt"].Time.Equal(time.Date(2025, 11, 20, 13, 3, 12, 345678900, time.UTC)) && p["Dt"].Time.Location() == time.UTC)
	check("Bin", p["Bin"].Type == EdmBinary && string(p["Bin"].Bytes) == "\x00\x01\x02")
	check("G", p["G"].Type == EdmGuid && p["G"].Str == "0f8fad5b-d9cb-469f-a165-70867728950e")
	check("S", p["S"].Type == EdmString && p["S"].Str == "text")
	check("B", p["B"].Type == EdmBoolean && p["B"].Bool)
	if len(p) != 14 {
		t.Errorf("%d properties, want 14", len(p))
	}
}

func TestDecodeEntityErrorsNameThePropertyNotTheValue(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"RowKey":"r","X@odata.type":"Edm.Int64","X":"12a-secret"}`, `decode entity "r": property X: Edm.Int64 value is not an integer in range`},
		{`{"RowKey":"r","X@odata.type":"Edm.Int32","X":2147483648}`, `decode entity "r": property X: Edm.Int32 value is not an integer in range`},
		{`{"RowKey":"r","X@odata.type":"Edm.Binary","X":"!!secret"}`, `decode entity "r": property X: Edm.Binary value is not base64`},
		{`{"RowKey":"r","X@odata.type":"Edm.DateTime","X":"yesterday-secret"}`, `decode entity "r": property X: Edm.DateTime value is not an RFC 3339 time`},
		{`{"RowKey":"r","X@odata.type":"Edm.Foo","X":"secret"}`, `decode entity "r": property X: unknown type annotation "Edm.Foo"`},
		{`{"RowKey":"r","X":null}`, `decode entity "r": property X: null value`},
		{`[1]`, `decode entity: json: cannot unmarshal array into Go value of type map[string]interface {}`},
	} {
		_, err := DecodeEntity("T", []byte(tc.in))
		if err == nil || err.Error() != tc.want {
			t.Errorf("DecodeEntity(%s) error = %v, want %s", tc.in, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("error leaks the value: %v", err)
		}
	}
}

func TestEncodeEntityRoundTrip(t *testing.T) {
	row := Row{PartitionKey: "p'%", RowKey: "r:ü", Props: map[string]Value{
		"D":    {Type: EdmDouble, Double: 5},
		"NZ":   {Type: EdmDouble, Double: math.Copysign(0, -1)},
		"NaN":  {Type: EdmDouble, Double: math.NaN()},
		"Inf":  {Type: EdmDouble, Double: math.Inf(-1)},
		"I32":  {Type: EdmInt32, Int: -7},
		"I64":  {Type: EdmInt64, Int: math.MaxInt64},
		"T":    {Type: EdmDateTime, Time: time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)},
		"Bin":  {Type: EdmBinary, Bytes: []byte{}},
		"G":    {Type: EdmGuid, Str: "0f8fad5b-d9cb-469f-a165-70867728950e"},
		"S":    String("<&>"),
		"Bool": {Type: EdmBoolean, Bool: true},
	}}
	enc := EncodeEntity(row)
	back, err := DecodeEntity("T", enc)
	if err != nil {
		t.Fatalf("decode %s: %v", enc, err)
	}
	if back.PartitionKey != row.PartitionKey || back.RowKey != row.RowKey || len(back.Props) != len(row.Props) {
		t.Fatalf("round trip %s", enc)
	}
	for name, want := range row.Props {
		got := back.Props[name]
		same := got.Type == want.Type && got.Str == want.Str && got.Bool == want.Bool && got.Int == want.Int &&
			got.Time.Equal(want.Time) && string(got.Bytes) == string(want.Bytes) &&
			(got.Double == want.Double && math.Signbit(got.Double) == math.Signbit(want.Double) || math.IsNaN(got.Double) && math.IsNaN(want.Double))
		if !same {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	if !strings.Contains(string(enc), `"D@odata.type":"Edm.Double","D":5.0`) {
		t.Errorf("double not kept as double: %s", enc)
	}
}

func TestFormatDouble(t *testing.T) {
	for in, want := range map[float64]string{5: "5.0", -0.5: "-0.5", 1e308: "1e+308", 1e21: "1e+21", 123456789: "123456789.0", 1e-7: "1e-07", 0: "0.0"} {
		if got := FormatDouble(in); got != want {
			t.Errorf("FormatDouble(%v) = %s, want %s", in, got, want)
		}
	}
}

func TestUndecodableRowKeepsItsKeysAndIsDeadLettered(t *testing.T) {
	in := `{"PartitionKey":"GLOBAL","RowKey":"config:retry","Timestamp":"2025-01-02T03:04:05Z","Type":"int","Value@odata.type":"Edm.Int64","Value":"12a-secret"}`
	row, err := DecodeEntity(TableConfig, []byte(in))
	if err == nil {
		t.Fatal("no error for an Int64 that is not an integer")
	}
	if row.Table != TableConfig || row.PartitionKey != "GLOBAL" || row.RowKey != "config:retry" || row.Props != nil {
		t.Fatalf("row after the error: %+v", row)
	}
	row.DecodeError = err.Error()
	o := Transform(row, BlobFacts{}, Options{Now: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)})
	want := `undecodable row: decode entity "config:retry": property Value: Edm.Int64 value is not an integer in range`
	if o.Disposition != DispositionDeadLetter || o.DeadLetter != want || o.Kind != "config" || o.Table != TableConfig {
		t.Errorf("outcome %s %q (kind %q), want dead-letter %q", o.Disposition, o.DeadLetter, o.Kind, want)
	}
	if strings.Contains(o.DeadLetter, "secret") {
		t.Errorf("reason leaks the value: %s", o.DeadLetter)
	}
	// Without readable keys there is nothing to dead-letter under.
	if row, err := DecodeEntity(TableConfig, []byte(`{"PartitionKey":1}`)); err == nil || row.PartitionKey != "" || row.RowKey != "" {
		t.Errorf("bad keys: row %+v, err %v", row, err)
	}
}
