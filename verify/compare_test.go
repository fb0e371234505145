package verify

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/bifrost/bifrost-migrate/transform"
)

// TestCompareDocs checks what verify adds to transform.DiffMeaning
// (tested there: paths, numbers, timestamps, nulls, redaction): which
// properties are ignored and the problem of each difference.
func TestCompareDocs(t *testing.T) {
	for _, tc := range []struct {
		name             string
		expected, actual string
		want             []fieldDiff
	}{
		{"equal, system properties and ttl ignored",
			`{"id":"a","n":5.0,"big":1e3,"ttl":10}`,
			`{"id":"a","n":5,"big":1000,"ttl":99,"_rid":"x","_self":"y","_etag":"z","_ts":1,"_attachments":"a/"}`, nil},
		{"scalar", `{"status":"Success"}`, `{"status":"Failed"}`,
			[]fieldDiff{{"status", ProblemValue, raw(`"Success"`), raw(`"Failed"`)}}},
		{"array element and length", `{"tags":["a","b","c"]}`, `{"tags":["a","x"]}`,
			[]fieldDiff{{"tags[1]", ProblemValue, raw(`"b"`), raw(`"x"`)}, {"tags[2]", ProblemMissing, raw(`"c"`), nil}}},
		{"missing and unexpected fields; null is absent", `{"a":null,"b":1,"m":2}`, `{"b":1,"c":{"d":true},"n":null}`,
			[]fieldDiff{{"c", ProblemUnexpected, nil, raw(`{"d":true}`)}, {"m", ProblemMissing, raw(`2`), nil}}},
		{"null is not false, types differ", `{"a":null,"b":"1"}`, `{"a":false,"b":1}`,
			[]fieldDiff{{"a", ProblemValue, raw(`null`), raw(`false`)}, {"b", ProblemValue, raw(`"1"`), raw(`1`)}}},
		{"_migration compared, not its hash", `{"_migration":{"timestamp":"2026-01-01T00:00:00.0000000Z","hash":"a"}}`, `{"_migration":{"timestamp":"2026-01-02T00:00:00Z","hash":"b"}}`,
			[]fieldDiff{{"_migration.timestamp", ProblemValue, raw(`"2026-01-01T00:00:00.0000000Z"`), raw(`"2026-01-02T00:00:00Z"`)}}},
		{"timestamps as instants", `{"completedAt":"2026-01-01T00:00:00.1620000Z","startedAt":"2026-01-01T00:00:00.0000000Z"}`,
			`{"completedAt":"2026-01-01T00:00:00.162Z","startedAt":"2026-01-01T00:00:00.001+00:00"}`,
			[]fieldDiff{{"startedAt", ProblemValue, raw(`"2026-01-01T00:00:00.0000000Z"`), raw(`"2026-01-01T00:00:00.001+00:00"`)}}},
		{"secrets redacted, null kept", `{"value":"s3cret","secretRef":null,"hashedKey":{"k":"v"}}`, `{"value":"other","secretRef":"kv-name","hashedKey":{"k":"w"}}`,
			[]fieldDiff{{"hashedKey.k", ProblemValue, raw(`"***"`), raw(`"***"`)}, {"secretRef", ProblemValue, raw(`null`), raw(`"***"`)}, {"value", ProblemValue, raw(`"***"`), raw(`"***"`)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := transform.DecodeDoc([]byte(tc.expected))
			if err != nil {
				t.Fatal(err)
			}
			a, err := transform.DecodeDoc([]byte(tc.actual))
			if err != nil {
				t.Fatal(err)
			}
			got := compareDocs(transform.TableEntities, e, a)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", show(got), show(tc.want))
			}
			for i := range got {
				if got[i].path != tc.want[i].path || got[i].problem != tc.want[i].problem ||
					string(got[i].expected) != string(tc.want[i].expected) || string(got[i].actual) != string(tc.want[i].actual) {
					t.Errorf("difference %d: got %v, want %v", i, show(got[i:i+1]), show(tc.want[i:i+1]))
				}
			}
		})
	}
}

// TestHashAgreesWithCompare checks the premise of the bulk comparison: a
// doc read back from JSON has the meaning hash of the Doc transform built
// exactly when compareDocs finds no difference.
func TestHashAgreesWithCompare(t *testing.T) {
	doc := transform.Doc{{Name: "id", Value: "x"}, {Name: "n", Value: 5.0}, {Name: "i", Value: int64(7)},
		{Name: "nested", Value: transform.Doc{{Name: "a", Value: []any{int64(1), "b"}}}},
		{Name: "completedAt", Value: "2026-01-01T00:00:00.1620000Z"}, {Name: "errorMessage", Value: nil}}
	b, err := doc.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := transform.MeaningHash(transform.TableEntities, doc)
	for _, tc := range []struct {
		actual string
		same   bool
	}{
		{string(b), true},
		{`{"nested":{"a":[1,"b"]},"i":7.0,"n":5,"id":"x","_etag":"e","ttl":3,"completedAt":"2026-01-01T00:00:00.162Z"}`, true},
		{`{"nested":{"a":[1,"b"]},"i":7,"n":5,"id":"x","extra":null,"completedAt":"2026-01-01T00:00:00.162000"}`, true},
		{`{"nested":{"a":[1,"c"]},"i":7,"n":5,"id":"x","completedAt":"2026-01-01T00:00:00.162Z"}`, false},
		{`{"nested":{"a":[1,"b"]},"i":7,"n":5,"id":"x","completedAt":"2026-01-01T00:00:00.163Z"}`, false},
		{`{"nested":{"a":[1,"b"],"x":null},"i":7,"n":5,"id":"x","completedAt":"2026-01-01T00:00:00.162Z"}`, false},
	} {
		a, err := transform.DecodeDoc([]byte(tc.actual))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := transform.MeaningHash(transform.TableEntities, a)
		e, _ := transform.DecodeDoc(b)
		diffs := compareDocs(transform.TableEntities, e, a)
		if (got == want) != tc.same || (len(diffs) == 0) != tc.same {
			t.Errorf("%s: hash equal %v, %d differences; want same=%v", tc.actual, got == want, len(diffs), tc.same)
		}
	}
}

func TestSampledIsDeterministicAndProportional(t *testing.T) {
	n := 0
	for i := range 10000 {
		rk := "execution:" + strconv.Itoa(i)
		if Sampled("Entities", "GLOBAL", rk, 0.25) != Sampled("Entities", "GLOBAL", rk, 0.25) {
			t.Fatal("not deterministic")
		}
		if Sampled("Entities", "GLOBAL", rk, 0.25) {
			n++
		}
		if !Sampled("Entities", "GLOBAL", rk, 1) {
			t.Fatal("sample 1 left a row out")
		}
	}
	if n < 2200 || n > 2800 {
		t.Errorf("sample 0.25 of 10,000 rows chose %d", n)
	}
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func show(d []fieldDiff) string {
	s := ""
	for _, f := range d {
		s += f.path + " " + f.problem + " " + string(f.expected) + " → " + string(f.actual) + "; "
	}
	return s
}
