package transform

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// The number vectors of RFC 8785 Appendix B (IEEE 754 bit patterns).
func TestCanonicalNumbersRFC8785(t *testing.T) {
	tests := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, tt := range tests {
		got, err := Canonical(math.Float64frombits(tt.bits))
		if err != nil {
			t.Errorf("%#016x: %v", tt.bits, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("%#016x: got %s, want %s", tt.bits, got, tt.want)
		}
	}
	for _, bits := range []uint64{0x7fffffffffffffff, 0x7ff0000000000000, 0xfff0000000000000} {
		if got, err := Canonical(math.Float64frombits(bits)); err == nil {
			t.Errorf("%#016x: got %s, want an error", bits, got)
		}
	}
}

// The examples of RFC 8785 §3.2.2 (values) and §3.2.3 (sorting), decoded
// from their JSON text the way a doc read back from Cosmos DB is.
func TestCanonicalRFC8785Examples(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			"values",
			`{
			  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
			  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
			  "literals": [null, true, false]
			}`,
			`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
		},
		{
			"sorting",
			`{
			  "\u20ac": "Euro Sign",
			  "\r": "Carriage Return",
			  "\ufb33": "Hebrew Letter Dalet With Dagesh",
			  "1": "One",
			  "\ud83d\ude00": "Emoji: Grinning Face",
			  "\u0080": "Control",
			  "\u00f6": "Latin Small Letter O With Diaeresis"
			}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}",
		},
		{
			"nested and control characters",
			`{"b":[{"z":1,"a":"\u0001\b\t\n\f\r\u001f\u007f"}],"a":{}}`,
			"{\"a\":{},\"b\":[{\"a\":\"\\u0001\\b\\t\\n\\f\\r\\u001f\u007f\",\"z\":1}]}",
		},
	}
	for _, tt := range tests {
		for _, useNumber := range []bool{false, true} {
			dec := json.NewDecoder(bytes.NewReader([]byte(tt.in)))
			if useNumber {
				dec.UseNumber()
			}
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
			got, err := Canonical(v)
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if string(got) != tt.want {
				t.Errorf("%s (UseNumber=%v):\ngot  %s\nwant %s", tt.name, useNumber, got, tt.want)
			}
		}
	}
}

func TestCanonicalErrors(t *testing.T) {
	tests := []struct {
		name string
		v    any
	}{
		{"NaN", math.NaN()},
		{"duplicate doc property", Doc{{"a", 1}, {"a", 2}}},
		{"invalid UTF-8", "\xff"},
		{"number out of range", json.Number("1e400")},
		{"not a number", json.Number("0x10")},
		{"unsupported type", struct{}{}},
	}
	for _, tt := range tests {
		if got, err := Canonical(tt.v); err == nil {
			t.Errorf("%s: got %s, want an error", tt.name, got)
		}
	}
}

func TestHashIgnoresSystemPropertiesAndSurvivesJSON(t *testing.T) {
	doc := Doc{
		{"id", "x"}, {"n", int64(3)}, {"d", 5.0}, {"big", json.Number("12345678901234567890")},
		{"o", Doc{{"b", true}, {"a", []any{nil, "s"}}}},
		{"ttl", int64(100)},
	}
	want, err := Hash(doc)
	if err != nil {
		t.Fatal(err)
	}
	// Same content plus excluded properties, and read back from JSON.
	withSys := append(Doc{}, doc...)
	withSys = append(withSys, Field{"_migration", Doc{{"hash", "h"}}}, Field{"_rid", "r"},
		Field{"_self", "s"}, Field{"_etag", "e"}, Field{"_ts", int64(1)}, Field{"_attachments", "a"}, Field{"_lsn", int64(42)})
	js, err := withSys.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(js, []byte(`"d":5.0`)) {
		t.Errorf("double 5.0 not written as 5.0: %s", js)
	}
	for _, useNumber := range []bool{false, true} {
		dec := json.NewDecoder(bytes.NewReader(js))
		if useNumber {
			dec.UseNumber()
		}
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		got, err := Hash(m)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("UseNumber=%v: hash after JSON round trip %s, want %s", useNumber, got, want)
		}
	}
	// A changed value changes the hash.
	changed := append(Doc{}, doc...)
	changed[1] = Field{"n", int64(4)}
	if got, _ := Hash(changed); got == want {
		t.Error("hash did not change when a value changed")
	}
	// The exact value: SHA-256 of the canonical form.
	const canon = `{"big":12345678901234567000,"d":5,"id":"x","n":3,"o":{"a":[null,"s"],"b":true}}`
	if c, _ := appendCanonicalDoc(nil, doc, hashExcluded); string(c) != canon {
		t.Errorf("canonical %s, want %s", c, canon)
	}
	if _, err := Hash([]any{}); err == nil {
		t.Error("Hash of a non-object: want an error")
	}
}

// appendString skips eight bytes at a time; check every special byte at
// every position against a byte-at-a-time reference.
func TestAppendStringEveryPosition(t *testing.T) {
	const hexDigits = "0123456789abcdef"
	ref := func(s string) string {
		var b []byte
		b = append(b, '"')
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\b':
				b = append(b, `\b`...)
			case c == '\t':
				b = append(b, `\t`...)
			case c == '\n':
				b = append(b, `\n`...)
			case c == '\f':
				b = append(b, `\f`...)
			case c == '\r':
				b = append(b, `\r`...)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			default:
				b = append(b, c)
			}
		}
		return string(append(b, '"'))
	}
	specials := []string{"\x00", "\x01", "\x1f", "\x20", "\x7f", `"`, `\`, "\b", "\t", "\n", "\f", "\r", "é", "😀", "\u2028", "!", "#", "[", "]", "\\\\"}
	for _, sp := range specials {
		for pos := 0; pos <= 17; pos++ {
			s := strings.Repeat("a", pos) + sp + strings.Repeat("b", 17-pos)
			got, err := appendString(nil, s)
			if err != nil || string(got) != ref(s) {
				t.Errorf("appendString(%q) = %s, %v; want %s", s, got, err, ref(s))
			}
		}
	}
	for pos := 0; pos <= 17; pos++ {
		s := strings.Repeat("a", pos) + "\xff" + strings.Repeat("b", 17-pos)
		if _, err := appendString(nil, s); err == nil {
			t.Errorf("appendString(%q): no error for invalid UTF-8", s)
		}
	}
}

// TestDocJSONLen: the length docJSONLen counts is the length of the JSON
// appendDoc writes, whichever members are left out of the canonical
// JSON (none, some, all) and whatever they hold.
func TestDocJSONLen(t *testing.T) {
	mig := Doc{{"table", "Entities"}, {"partitionKey", "p<&>"}, {"rowKey", "r\u2028\"x\""}, {"timestamp", nil}, {"hash", "h"}}
	for _, d := range []Doc{
		{},
		{{"id", "a"}},
		{{"ttl", json.Number("5")}},
		{{"ttl", json.Number("5")}, {"_migration", mig}},
		{{"id", "a"}, {"ttl", 1209600}, {"b", []any{1.5, "x\x01", nil}}, {"_migration", mig}},
		{{"_ts", int64(1)}, {"id", "é\"\\"}, {"_etag", "\"0\""}, {"n", Doc{{"k", true}}}, {"ttl", nil}},
	} {
		_, kept, err := appendCanonicalDocLen(nil, d, hashExcluded)
		if err != nil {
			t.Fatal(err)
		}
		js, err := appendDoc(nil, d)
		if err != nil {
			t.Fatal(err)
		}
		if n, _, err := docJSONLen(d, kept, hashExcluded, nil); err != nil || n != len(js) {
			t.Errorf("docJSONLen of %s = %d, %v; want %d", js, n, err, len(js))
		}
	}
}
