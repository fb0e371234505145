package transform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// sameAsDecodeDoc fails t unless ReadDoc answers for raw exactly as
// DecodeDoc's map does: the same error, every member (and a few the doc
// does not have) the same value, and MeaningHash the same hash (or both
// an error) for every table.
func sameAsDecodeDoc(t *testing.T, raw []byte) {
	t.Helper()
	m, merr := DecodeDoc(raw)
	d, derr := ReadDoc(raw)
	if (merr == nil) != (derr == nil) || (merr != nil && merr.Error() != derr.Error()) {
		t.Fatalf("%.300s: ReadDoc error %v, DecodeDoc error %v", raw, derr, merr)
	}
	if merr != nil {
		return
	}
	names := []string{"id", "scope", "_migration", "ttl", "_ts", "nope", ""}
	for name := range m {
		names = append(names, name)
	}
	for _, name := range names {
		want, wok := m[name]
		got, gok := d.Get(name)
		if wok != gok || !reflect.DeepEqual(got, want) {
			t.Fatalf("%.300s: Get(%q) = %#v, %v; DecodeDoc has %#v, %v", raw, name, got, gok, want, wok)
		}
	}
	for _, table := range append(Tables(), "Other") {
		want, werr := MeaningHash(table, m)
		got, gerr := d.MeaningHash(table)
		if got != want || (werr == nil) != (gerr == nil) {
			t.Fatalf("%.300s: MeaningHash(%s) = %q, %v; of DecodeDoc's map %q, %v", raw, table, got, gerr, want, werr)
		}
	}
	// The next ReadDoc reuses its buffers: every doc a test reads after
	// this one is read in what this one left.
	d.Close()
}

// docForms returns doc (a doc's JSON) as the service returns it and in
// the forms an application or another encoder writes it: system
// properties, members in another order, white space, escapes, numbers
// and timestamps written otherwise, nulls added.
func docForms(t *testing.T, doc []byte) [][]byte {
	t.Helper()
	system := `"_rid":"AAAAAA==","_self":"dbs/AA==/colls/AA==/docs/AAAAAA==/","_etag":"\"0000-0000\"","_attachments":"attachments/","_ts":1764000000`
	served := append(append(bytes.Clone(doc[:len(doc)-1]), ','), system+"}"...)
	indented := jsontext.Value(bytes.Clone(served))
	if err := indented.Indent(jsontext.WithIndent("\t")); err != nil {
		t.Fatal(err)
	}
	var members []string
	dec := jsontext.NewDecoder(bytes.NewReader(served))
	if _, err := dec.ReadToken(); err != nil {
		t.Fatal(err)
	}
	for dec.PeekKind() != '}' {
		name, _ := dec.ReadValue()
		n := string(name)
		value, err := dec.ReadValue()
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, n+":"+string(value))
	}
	slices.Reverse(members)
	reversed := "{" + strings.Join(members, ",") + "}"
	// The application's forms: toISOString()'s timestamps, an optional
	// field null, a number as a double, a name and a value escaped.
	app := strings.NewReplacer("0000Z\"", "Z\"", "\"status\":", "\"errorType\":null,\"status\":", "\"durationMs\":", "\"dur\\u0061tionMs\":",
		"\"type\":\"", "\"type\":\"\\u0020", ":0,", ":0.0,").Replace(reversed)
	return [][]byte{doc, served, indented, []byte(reversed), []byte(app), []byte(" \n" + app + " trailing")}
}

// TestRawDocFixtures: every fixture row's doc, in every form, reads as
// DecodeDoc reads it and hashes by meaning as MeaningHash hashes it.
func TestRawDocFixtures(t *testing.T) {
	fixturesPresent(t)
	n := 0
	for _, rows := range transformFixtures(t, Options{Now: goldenNow}) {
		for _, r := range rows {
			if r.Outcome.Disposition != DispositionDoc {
				continue
			}
			for _, raw := range docForms(t, r.Outcome.DocJSON) {
				sameAsDecodeDoc(t, raw)
				n++
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d docs checked", n)
	}
}

// TestRawDocEdges: the texts ReadDoc hands to DecodeDoc (repeated names,
// invalid UTF-8, lone surrogates, numbers beyond a double, depth) and
// those it refuses as DecodeDoc does.
func TestRawDocEdges(t *testing.T) {
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	for _, raw := range []string{
		`{"id":"a","id":"b","scope":"s"}`, `{"id":"a","x":{"k":1,"k":2}}`, "{\"id\":\"\xff\",\"scope\":\"s\"}",
		`{"id":"\ud800","scope":"s"}`, `{"id":"a","n":1e400}`, `{"id":"a","n":-1e400}`, `{"id":"a","n":1.7976931348623157e308}`,
		`{"id":"a","n":1e-400,"m":-0,"k":1.0,"big":123456789012345678901234567890}`, `{"id":"a","deep":` + deep + `}`,
		`{"id":"a"}{"id":"b"}`, `{"id":"a"} x`, `{"id":"a"`, `{"id":"a",}`, `null`, `[]`, `"doc"`, `3`, ``, `{}`,
		`{"\u0069d":"escaped name","sc\u006fpe":"s","_migration":{"table":"Entities","partitionKey":"p","rowKey":"r","timestamp":"2026-01-02T03:04:05Z","hash":"h"}}`,
		`{"id":7,"scope":{"b":1,"a":[1,"x",null,{"z":true}]},"ttl":"1.5","_ts":1.7e9,"startedAt":"2026-01-02T03:04:05.1Z","completedAt":null}`,
		`{"id":"a","_migration":[1,2],"ttl":-1,"_ts":"x","resultBlobPath":7}`,
		`{"id":"a","startedAt":"2026-01-02T03:04:05+01:00","createdAt":"2026-01-02 03:04","updatedAt":"not a time","lastLogin":5}`,
		`{"id":"a","\u00e9":1,"e\u0301":2,"\ud83d\ude00":3,"\uffff":4,"z":"\u2028\u0000\u001f"}`,
	} {
		sameAsDecodeDoc(t, []byte(raw))
	}
	// Objects of more members than an insertion sort takes, in reverse
	// order, nested and at the top, one with a name repeated.
	var many []string
	for i := 99; i >= 0; i-- {
		many = append(many, fmt.Sprintf(`"m%02d":%d`, i, i))
	}
	obj := "{" + strings.Join(many, ",") + "}"
	for _, raw := range []string{obj, `{"id":"a","n":` + obj + `}`, "{" + strings.Join(many, ",") + `,"m42":0}`, `{"id":"a","n":{` + strings.Join(many[:70], ",") + `,"m50":1}}`} {
		sameAsDecodeDoc(t, []byte(raw))
	}
}

// TestRawDocReuse: a doc read in the buffers of a longer one, and of a
// shorter one, and after one whose top-level names are the same or
// others, answers as it does alone.
func TestRawDocReuse(t *testing.T) {
	long := `{"id":"a-long-id","scope":"org-1","inputData":{"z":[1,2,3],"a":"` + strings.Repeat("text ", 200) + `"},"status":null,` +
		`"_migration":{"table":"Entities","partitionKey":"p","rowKey":"r","timestamp":"2026-01-02T03:04:05Z","hash":"h"},"ttl":5}`
	short := `{"scope":"s","id":"b","k":{"y":1,"x":2}}`
	for _, raw := range []string{long, short, long, `{"id":"a","id":"b"}`, short, `{`, long} {
		sameAsDecodeDoc(t, []byte(raw))
	}
	// The same names in the same order (the last doc's order serves),
	// then in another order, then fewer and more of them.
	for _, raw := range []string{`{"b":1,"a":2,"c":null}`, `{"b":"x","a":[1],"c":3}`, `{"a":1,"b":2,"c":3}`, `{"c":1,"b":2,"a":"2026-01-02T03:04:05Z"}`,
		`{"c":1,"b":2}`, `{"c":1,"b":2,"a":3,"d":4}`, `{"c":1,"b":2,"a":3,"d":4}`, `{"c":1,"b":2,"a":3,"c":4}`} {
		sameAsDecodeDoc(t, []byte(raw))
	}
}

// FuzzRawDoc: any text reads and hashes as DecodeDoc and MeaningHash
// read and hash it.
func FuzzRawDoc(f *testing.F) {
	for _, s := range []string{
		`{"id":"e1","scope":"org-1","status":"Success","startedAt":"2026-11-27T00:13:00.000Z","errorMessage":null,"ttl":100,"_ts":1764000000,` +
			`"_migration":{"table":"Entities","partitionKey":"o1","rowKey":"execution:1_e1","timestamp":"2026-11-27T00:13:02.5Z","hash":"aaa"},"inputData":{"a":[1,2.50,"x"]}}`,
		`{"id":"a","id":"b"}`, "{\"a\":\"\xff\"}", `{"a":1e400}`, `{"a":"\ud800"}`, `{"\u0061":1}`, `{"a":1} x`, `[1]`, `null`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		sameAsDecodeDoc(t, raw)
	})
}

// TestTransformMeaning: TransformMeaning's outcome is Transform's, with
// MeaningHash the hash by meaning of its doc, and TransformHashes' the
// same without DocJSON, for every fixture row (and every doc that has
// nulls or timestamps to rewrite among them).
func TestTransformMeaning(t *testing.T) {
	fixturesPresent(t)
	blobs := loadFixtureBlobs(t, fixturesDir)
	normalized := 0
	for _, table := range Tables() {
		for _, fr := range loadFixtureTable(t, fixturesDir, table) {
			var bf BlobFacts
			if table == TableEntities && Kind(fr.row.RowKey) == "execution" {
				bf = blobs[ExecutionID(fr.row)]
			}
			for _, opts := range []Options{{Now: goldenNow}, {Now: goldenNow, ExecutionTTL: TTLFull}} {
				plain, judged := Transform(fr.row, bf, opts), TransformMeaning(fr.row, bf, opts)
				if plain.MeaningHash != "" {
					t.Fatalf("%s %s: Transform set MeaningHash", table, fr.row.RowKey)
				}
				want := plain
				if plain.Disposition == DispositionDoc {
					n, changed := Normalize(table, plain.Doc)
					h, err := Hash(n)
					if err != nil {
						t.Fatal(err)
					}
					if changed {
						normalized++
					}
					want.MeaningHash = h
				}
				if !reflect.DeepEqual(judged, want) {
					t.Fatalf("%s %s/%s: TransformMeaning = %+v, want %+v", table, fr.row.PartitionKey, fr.row.RowKey, judged, want)
				}
				want.DocJSON = nil
				if hashes := TransformHashes(fr.row, bf, opts); !reflect.DeepEqual(hashes, want) {
					t.Fatalf("%s %s/%s: TransformHashes = %+v, want %+v", table, fr.row.PartitionKey, fr.row.RowKey, hashes, want)
				}
			}
		}
	}
	if normalized == 0 {
		t.Fatal("no fixture doc has a null field or a timestamp to rewrite: the test checks only the provenance hash")
	}
}

// TestMeaningOfCanonicalRewrites: the canonical JSON path of
// TransformMeaning drops nulls and rewrites timestamps as Normalize does,
// escaped names included.
func TestMeaningOfCanonicalRewrites(t *testing.T) {
	doc := Doc{{"id", "x"}, {"completedAt", "2026-01-02T03:04:05Z"}, {"errorMessage", nil}, {"\u00e9", nil}, {"n\u2028", "v"},
		{"startedAt", "not a time"}, {"inputData", Doc{{"k", nil}, {"q\"}", "a \"b\", [c]}\\"}}}, {"ttl", json.Number("5")},
		{"say \"x\", {y}", "\"quoted\", {z}"}, {"q\\", nil}}
	canon, err := appendCanonicalDoc(nil, doc, hashExcluded)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := Hash(doc)
	n, changed := Normalize(TableEntities, doc)
	want, _ := Hash(n)
	if !changed || want == h {
		t.Fatal("the doc should change by Normalize")
	}
	if got := meaningOfCanonical(TableEntities, doc, canon, h); got != want {
		t.Fatalf("meaningOfCanonical = %s, want %s (canonical %s)", got, want, canon)
	}
	plainDoc := Doc{{"id", "x"}, {"completedAt", "2026-01-02T03:04:05.0000000Z"}}
	if got := meaningOfCanonical(TableEntities, plainDoc, nil, "given"); got != "given" {
		t.Fatalf("a doc Normalize leaves as it is: %s, want its own hash", got)
	}
}
