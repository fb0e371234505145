package transform

import (
	"encoding/json"
	"testing"
)

// cosmosSystem is verify's ignore set: the system properties and ttl.
func cosmosSystem(name string) bool {
	switch name {
	case "_rid", "_self", "_etag", "_ts", "_attachments", "ttl":
		return true
	}
	return false
}

func TestDiffDocs(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	for _, tc := range []struct {
		name             string
		expected, actual string
		ignore           func(string) bool
		want             []FieldDiff
	}{
		{"equal, system properties and ttl ignored",
			`{"id":"a","n":5.0,"big":1e3,"ttl":10}`,
			`{"id":"a","n":5,"big":1000,"ttl":99,"_rid":"x","_self":"y","_etag":"z","_ts":1,"_attachments":"a/"}`, cosmosSystem, nil},
		{"nothing ignored without ignore",
			`{"id":"a","ttl":10}`, `{"id":"a","ttl":99,"_etag":"z"}`, nil,
			[]FieldDiff{{"_etag", nil, raw(`"z"`)}, {"ttl", raw(`10`), raw(`99`)}}},
		{"ignore applies to top-level properties only",
			`{"_migration":{"hash":"a"},"x":{"_migration":1}}`, `{"_migration":{"hash":"b"},"x":{"_migration":2}}`,
			func(name string) bool { return name == "_migration" },
			[]FieldDiff{{"x._migration", raw(`1`), raw(`2`)}}},
		{"scalar", `{"status":"Success"}`, `{"status":"Failed"}`, cosmosSystem,
			[]FieldDiff{{"status", raw(`"Success"`), raw(`"Failed"`)}}},
		{"nested", `{"inputData":{"customer":{"name":"Ann","age":3}}}`, `{"inputData":{"customer":{"name":"Bob","age":3.0}}}`, cosmosSystem,
			[]FieldDiff{{"inputData.customer.name", raw(`"Ann"`), raw(`"Bob"`)}}},
		{"array element and length", `{"tags":["a","b","c"]}`, `{"tags":["a","x"]}`, cosmosSystem,
			[]FieldDiff{{"tags[1]", raw(`"b"`), raw(`"x"`)}, {"tags[2]", raw(`"c"`), nil}}},
		{"missing and unexpected fields", `{"a":null,"b":1}`, `{"b":1,"c":{"d":true}}`, cosmosSystem,
			[]FieldDiff{{"a", raw(`null`), nil}, {"c", nil, raw(`{"d":true}`)}}},
		{"null is not absent, types differ", `{"a":null,"b":"1"}`, `{"a":false,"b":1}`, cosmosSystem,
			[]FieldDiff{{"a", raw(`null`), raw(`false`)}, {"b", raw(`"1"`), raw(`1`)}}},
		{"object against scalar", `{"settings":{"x":1}}`, `{"settings":"x"}`, cosmosSystem,
			[]FieldDiff{{"settings", raw(`{"x":1}`), raw(`"x"`)}}},
		{"names that are not identifiers", `{"m":{"a.b":1,"with space":[1]}}`, `{"m":{"a.b":2,"with space":[2]}}`, cosmosSystem,
			[]FieldDiff{{`m["a.b"]`, raw(`1`), raw(`2`)}, {`m["with space"][0]`, raw(`1`), raw(`2`)}}},
		{"_migration compared unless ignored", `{"_migration":{"timestamp":"2026-01-01T00:00:00.0000000Z"}}`, `{"_migration":{"timestamp":"2026-01-02T00:00:00.0000000Z"}}`, cosmosSystem,
			[]FieldDiff{{"_migration.timestamp", raw(`"2026-01-01T00:00:00.0000000Z"`), raw(`"2026-01-02T00:00:00.0000000Z"`)}}},
		{"secrets redacted, null kept", `{"value":"s3cret","secretRef":null,"hashedKey":{"k":"v"}}`, `{"value":"other","secretRef":"kv-name","hashedKey":{"k":"w"}}`, cosmosSystem,
			[]FieldDiff{{"hashedKey.k", raw(`"***"`), raw(`"***"`)}, {"secretRef", raw(`null`), raw(`"***"`)}, {"value", raw(`"***"`), raw(`"***"`)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := DecodeDoc([]byte(tc.expected))
			if err != nil {
				t.Fatal(err)
			}
			a, err := DecodeDoc([]byte(tc.actual))
			if err != nil {
				t.Fatal(err)
			}
			got := DiffDocs(e, a, tc.ignore)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", showDiffs(got), showDiffs(tc.want))
			}
			for i := range got {
				if got[i].Path != tc.want[i].Path || !sameRaw(got[i].Expected, tc.want[i].Expected) || !sameRaw(got[i].Actual, tc.want[i].Actual) {
					t.Errorf("difference %d: got %v, want %v", i, showDiffs(got[i:i+1]), showDiffs(tc.want[i:i+1]))
				}
			}
		})
	}
}

// sameRaw compares two values of a FieldDiff; nil (absent) differs from
// every present value, "null" included.
func sameRaw(a, b json.RawMessage) bool {
	return (a == nil) == (b == nil) && string(a) == string(b)
}

func showDiffs(d []FieldDiff) string {
	side := func(v json.RawMessage) string {
		if v == nil {
			return "(absent)"
		}
		return string(v)
	}
	s := ""
	for _, f := range d {
		s += f.Path + " " + side(f.Expected) + " → " + side(f.Actual) + "; "
	}
	return s
}

func TestDecodeDoc(t *testing.T) {
	m, err := DecodeDoc([]byte(`{"n":1.50,"s":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := m["n"].(json.Number); !ok || n != "1.50" {
		t.Errorf("n = %#v, want json.Number 1.50", m["n"])
	}
	for _, bad := range []string{`null`, `[1]`, `{"a":`, ``} {
		if _, err := DecodeDoc([]byte(bad)); err == nil {
			t.Errorf("DecodeDoc(%q): no error", bad)
		}
	}
	if _, err := DecodeDoc([]byte(`null`)); err == nil || err.Error() != "doc is not a JSON object" {
		t.Errorf("DecodeDoc(null): %v", err)
	}
}
