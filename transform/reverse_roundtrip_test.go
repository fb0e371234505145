package transform

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The round trip of SPEC §15 as a tested property: ReverseDoc of the doc
// Transform made from a fixture row gives the row back, except the
// normalizations listed in docs/design.md ("Back to the tables"),
// each of which is named here and has its own unit test in
// reverse_test.go.

// rtOpts are the options of the round trips: every execution becomes a doc
// (ttl full), relationships are migrated, the goldens' clock.
func rtOpts() Options {
	return Options{Now: goldenNow, ExecutionTTL: TTLFull, Relationships: RelationshipsMigrate}
}

type rtRow struct {
	row Row
	out Outcome
}

// fixtureDocRows returns every fixture row with its Transform outcome (no
// id-collision check: a colliding row still has a doc of its own). It
// checks that the rows without a doc are exactly the ones expected, so
// that no row leaves the round trip unnoticed.
func fixtureDocRows(t *testing.T) []rtRow {
	t.Helper()
	fixturesPresent(t)
	blobs := loadFixtureBlobs(t, fixturesDir)
	var rows []rtRow
	var noDoc []string
	for _, table := range Tables() {
		for _, fr := range loadFixtureTable(t, fixturesDir, table) {
			var bf BlobFacts
			if Kind(fr.row.RowKey) == "execution" {
				bf = blobs[ExecutionID(fr.row)]
			}
			o := Transform(fr.row, bf, rtOpts())
			if o.Disposition != DispositionDoc {
				if o.Disposition != DispositionDroppedIndex {
					noDoc = append(noDoc, fmt.Sprintf("%s %s %s", table, fr.row.RowKey, o.Disposition))
				}
				continue
			}
			rows = append(rows, rtRow{fr.row, o})
		}
	}
	want := []string{
		"Config config:dark_mode dead-letter",                                               // bool "yes"
		"Config config:retry_limit dead-letter",                                             // int "twelve"
		"Config config:routing_rules dead-letter",                                           // truncated JSON
		"Entities execution:8205514467878_9b653c33-0cdd-5bd2-8422-0ed441813a00 dead-letter", // InputData not JSON
		"Entities execution:8205605199999_e4b0f191-3319-571d-9430-9e4f6725238b dead-letter", // ExecutionId differs from RowKey
		"Relationships orgintegration:7c9e6679-7425-40de-944b-e07fc1f90ae7:halopsa kept-in-tables",
	}
	if !slices.Equal(noDoc, want) {
		t.Fatalf("fixture rows without a doc\ngot  %q\nwant %q", noDoc, want)
	}
	if len(rows) < 70 {
		t.Fatalf("only %d fixture docs", len(rows))
	}
	return rows
}

// reversed runs ReverseDoc on the doc of o as Cosmos DB returns it (its
// JSON bytes, decoded) and checks that the Doc itself gives the same.
func reversed(t *testing.T, o Outcome, existing *Row, opts Options) ReverseOutcome {
	t.Helper()
	doc, err := DecodeDocOrdered(o.DocJSON)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := ReverseDoc(doc, existing, opts)
	if err != nil {
		t.Fatalf("ReverseDoc: %v", err)
	}
	direct, err := ReverseDoc(o.Doc, existing, opts)
	if err != nil {
		t.Fatalf("ReverseDoc(Doc): %v", err)
	}
	if d := DiffRows(ro.Row, direct.Row); d != nil || len(ro.Index) != len(direct.Index) || len(ro.Uploads) != len(direct.Uploads) ||
		(ro.DeadLetter == nil) != (direct.DeadLetter == nil) {
		t.Errorf("the doc's JSON and the Doc itself reverse differently: %v", d)
	}
	return ro
}

// TestReverseRoundTripWithRow: with the existing row, nothing changed in
// the doc gives every fixture row back exactly: keys, property names, Edm
// types and values.
func TestReverseRoundTripWithRow(t *testing.T) {
	for _, rr := range fixtureDocRows(t) {
		t.Run(rr.row.Table+"/"+rr.row.RowKey, func(t *testing.T) {
			existing := rr.row
			ro := reversed(t, rr.out, &existing, rtOpts())
			if ro.DeadLetter != nil {
				t.Fatalf("dead letter %+v", *ro.DeadLetter)
			}
			if d := DiffRows(ro.Row, rr.row); d != nil {
				t.Errorf("differs in %v\ngot  %.2000s\nwant %.2000s", d, EncodeEntity(ro.Row), EncodeEntity(rr.row))
			}
			if len(ro.Uploads) != 0 || len(ro.Warnings) != 0 {
				t.Errorf("uploads %d, warnings %v", len(ro.Uploads), ro.Warnings)
			}
		})
	}
}

// perturb returns the row with every property changed but its Edm type
// kept, as if the table had been edited after the doc was made. A JSON
// text stays JSON, so that the forward transform of the row still gives
// a doc to compare with.
func perturb(row Row) Row {
	out := row
	out.Props = make(map[string]Value, len(row.Props))
	for n, v := range row.Props {
		switch v.Type {
		case EdmString:
			if n == "ExecutionId" {
				break // the row's identity: one that differs from its RowKey is a dead letter of its own
			}
			if _, _, err := decodeJSONField(v.Str); err == nil && isJSONProp(row, n) {
				v.Str = "[" + v.Str + "]" // still JSON, so the forward transform still reads the row
			} else {
				v.Str += "~"
			}
		case EdmGuid:
			v.Str = "00000000-0000-4000-8000-000000000000"
		case EdmBoolean:
			v.Bool = !v.Bool
		case EdmInt32, EdmInt64:
			v.Int++
		case EdmDouble:
			v.Double = 1.25
		case EdmDateTime:
			v.Time = v.Time.Add(1e9)
		case EdmBinary:
			v.Bytes = append([]byte{1}, v.Bytes...)
		}
		out.Props[n] = v
	}
	return out
}

// notCarried are the properties a doc does not carry, by kind: ReverseDoc
// keeps them from the existing row and cannot write them without it.
func notCarried(row Row, name string) bool {
	switch kind := Kind(row.RowKey); {
	case name == "etag":
		return true
	case kind == "execution":
		if name == "Result" {
			inBlob := row.Props["ResultInBlob"]
			return inBlob.Type == EdmBoolean && inBlob.Bool
		}
		return name == "Logs" || name == "Variables" || name == "StateSnapshots"
	case kind == "form" || kind == "systemconfig":
		return name == "IsGlobal"
	}
	return false
}

// TestReverseRoundTripChangedValues: with an existing row whose every
// value differs (Edm types kept), the doc's values are encoded into the
// existing types and give the original row back, except the
// normalizations of changed values; properties the doc does not carry
// keep the existing row's values.
func TestReverseRoundTripChangedValues(t *testing.T) {
	used := map[string]int{}
	for _, rr := range fixtureDocRows(t) {
		t.Run(rr.row.Table+"/"+rr.row.RowKey, func(t *testing.T) {
			existing := perturb(rr.row)
			ro := reversed(t, rr.out, &existing, rtOpts())
			if ro.DeadLetter != nil {
				t.Fatalf("dead letter %+v", *ro.DeadLetter)
			}
			want := rr.row
			want.Props = map[string]Value{}
			for n, v := range rr.row.Props {
				inBlob, _ := rr.out.Doc.Get("resultInBlob")
				if notCarried(rr.row, n) || (notCarried(existing, n) && inBlob == true) {
					v = existing.Props[n] // the doc does not carry it: kept
				}
				want.Props[n] = v
			}
			explainDiffs(t, rr.row, want, ro, changedNormalizations, used)
		})
	}
	// json-dumps is not among them: every JSON text of the fixtures is in
	// json.dumps form already, but for one result that goes to a blob
	// (TestReverseGeneratedRows and TestReverseJSONReencoded show it).
	checkUsed(t, used, "timestamp-isoformat", "config-bool-spelling", "result-to-blob")
}

// TestReverseRoundTripNoRow: without an existing row (a doc the
// application created), the row is what the Python application writes:
// the fixture row except the documented normalizations. Unknown kinds
// have no keys without _migration.
func TestReverseRoundTripNoRow(t *testing.T) {
	used := map[string]int{}
	for _, rr := range fixtureDocRows(t) {
		t.Run(rr.row.Table+"/"+rr.row.RowKey, func(t *testing.T) {
			o := rr.out
			o.Doc = withoutMigration(o.Doc)
			js, err := o.Doc.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			o.DocJSON = js
			ro := reversed(t, o, nil, rtOpts())
			if k, _ := defaultKinds.classify(rr.row.Table, rr.row.RowKey); k == kindUnknownConfig || k == kindUnknownEntities {
				if ro.DeadLetter == nil || ro.DeadLetter.Reason != ReverseNoKeys {
					t.Fatalf("unknown kind without _migration: %+v", ro.DeadLetter)
				}
				used["unknown-kind-dead-letter"]++
				return
			}
			if ro.DeadLetter != nil {
				t.Fatalf("dead letter %+v", *ro.DeadLetter)
			}
			explainDiffs(t, rr.row, rr.row, ro, noRowNormalizations, used)
		})
	}
	// The fixtures' Int64 above 2^53, NaN and Binary are in an unknown
	// kind, which has no keys without _migration: their normalizations
	// have unit tests of their own.
	checkUsed(t, used, "unknown-kind-dead-letter", "org-in-global", "org-prefix", "timestamp-isoformat",
		"config-bool-spelling", "etag-dropped", "not-carried", "written-by-app", "datetime-as-string",
		"guid-as-string", "int64-as-int32", "result-to-blob")
}

func withoutMigration(d Doc) Doc {
	out := make(Doc, 0, len(d))
	for _, f := range d {
		if f.Name != "_migration" {
			out = append(out, f)
		}
	}
	return out
}

// diffCtx is one difference between the expected and the reversed row.
type diffCtx struct {
	row       Row // the source row
	name      string
	want, got Value
	wantOK    bool
	gotOK     bool
}

type normalization struct {
	name    string
	applies func(c diffCtx) bool
}

// The normalizations of a changed value (docs/design.md).
var changedNormalizations = []normalization{
	{"timestamp-isoformat", func(c diffCtx) bool {
		tm, ok := ParseTimestamp(c.want.Str)
		return c.wantOK && c.gotOK && c.want.Type == EdmString && c.got.Type == EdmString &&
			isTimestampProp(c.row.Table, c.name) && ok && c.got.Str == pythonISOFormat(tm)
	}},
	{"json-dumps", func(c diffCtx) bool {
		if !c.wantOK || !c.gotOK || c.want.Type != EdmString || c.got.Type != EdmString || !isJSONProp(c.row, c.name) {
			return false
		}
		v, _, err := decodeJSONField(c.want.Str)
		if err != nil {
			return false
		}
		dumped, err := pythonJSON(v)
		return err == nil && c.got.Str == dumped
	}},
	{"result-to-blob", func(c diffCtx) bool {
		// An inline result above the blob threshold is in a blob: run
		// moved it there (the doc says resultInBlob), or its json.dumps
		// text is above the threshold (a compact JSON text with
		// non-ASCII grows) and ReverseDoc uploads it.
		if Kind(c.row.RowKey) != "execution" {
			return false
		}
		long := func() bool {
			text := c.row.Props["Result"].Str
			if len(text) > DefaultBlobThreshold {
				return true
			}
			v, _, err := decodeJSONField(text)
			if err != nil {
				return false
			}
			dumped, err := pythonJSON(v)
			return err == nil && len(dumped) > DefaultBlobThreshold
		}
		switch c.name {
		case "ResultInBlob":
			return c.got.Type == EdmBoolean && c.got.Bool && !c.want.Bool && long()
		case "Result":
			return !c.gotOK && long()
		}
		return false
	}},
	{"config-bool-spelling", func(c diffCtx) bool {
		typ := c.row.Props["Type"]
		return Kind(c.row.RowKey) == "config" && c.name == "Value" && typ.Str == "bool" && c.gotOK &&
			strings.EqualFold(c.want.Str, c.got.Str) && c.got.Str == strings.ToLower(c.got.Str)
	}},
}

// The normalizations of a doc reversed without the existing row.
var noRowNormalizations = append(slices.Clone(changedNormalizations),
	normalization{"etag-dropped", func(c diffCtx) bool { return c.name == "etag" && !c.gotOK }},
	normalization{"not-carried", func(c diffCtx) bool { return notCarried(c.row, c.name) && !c.gotOK }},
	normalization{"written-by-app", func(c diffCtx) bool {
		switch Kind(c.row.RowKey) {
		case "execution":
			return !c.wantOK && (c.name == "ExecutionId" || c.name == "ResultInBlob")
		}
		return false
	}},
	normalization{"datetime-as-string", func(c diffCtx) bool {
		return c.want.Type == EdmDateTime && c.got.Type == EdmString && c.got.Str == pythonISOFormat(c.want.Time)
	}},
	normalization{"guid-as-string", func(c diffCtx) bool {
		return c.want.Type == EdmGuid && c.got.Type == EdmString && c.got.Str == c.want.Str
	}},
	normalization{"binary-as-string", func(c diffCtx) bool {
		return c.want.Type == EdmBinary && c.got.Type == EdmString && c.got.Str == base64.StdEncoding.EncodeToString(c.want.Bytes)
	}},
	normalization{"int64-as-int32", func(c diffCtx) bool {
		return c.want.Type == EdmInt64 && c.got.Type == EdmInt32 && c.got.Int == c.want.Int
	}},
	normalization{"int64-above-2^53-as-string", func(c diffCtx) bool {
		return c.want.Type == EdmInt64 && c.got.Type == EdmString && c.got.Str == fmt.Sprint(c.want.Int)
	}},
	normalization{"double-nonfinite-as-string", func(c diffCtx) bool {
		f := c.want.Double
		return c.want.Type == EdmDouble && c.got.Type == EdmString && (math.IsNaN(f) || math.IsInf(f, 0)) &&
			c.got.Str == strings.Trim(FormatDouble(f), `"`)
	}},
)

// explainDiffs fails for every difference between want and got that no
// normalization explains, and counts the ones used.
func explainDiffs(t *testing.T, src, want Row, ro ReverseOutcome, norms []normalization, used map[string]int) {
	t.Helper()
	got := ro.Row
	if got.Table != want.Table {
		t.Errorf("table %s, want %s", got.Table, want.Table)
	}
	if got.PartitionKey != want.PartitionKey {
		if Kind(src.RowKey) == "org" && got.PartitionKey == "GLOBAL" {
			used["org-in-global"]++
		} else {
			t.Errorf("PartitionKey %q, want %q", got.PartitionKey, want.PartitionKey)
		}
	}
	if got.RowKey != want.RowKey {
		if rest, ok := strings.CutPrefix(want.RowKey, "org:org-"); ok && got.RowKey == "org:"+rest {
			used["org-prefix"]++
		} else {
			t.Errorf("RowKey %q, want %q", got.RowKey, want.RowKey)
		}
	}
	for _, name := range DiffRows(Row{Props: want.Props}, Row{Props: got.Props}) {
		c := diffCtx{row: src, name: name}
		c.want, c.wantOK = want.Props[name]
		c.got, c.gotOK = got.Props[name]
		explained := false
		for _, n := range norms {
			if n.applies(c) {
				used[n.name]++
				explained = true
				break
			}
		}
		if !explained {
			t.Errorf("property %s: got %s, want %s", name, short(c.got, c.gotOK), short(c.want, c.wantOK))
		}
	}
}

// checkUsed fails unless exactly the listed normalizations occurred: the
// list in docs/design.md is neither longer nor shorter than what happens.
func checkUsed(t *testing.T, used map[string]int, want ...string) {
	t.Helper()
	var got []string
	for n := range used {
		got = append(got, n)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("normalizations used %v (%v), want %v", got, used, want)
	}
}

func isTimestampProp(table, name string) bool {
	return defaultKinds.stamps[table][name]
}

// isJSONProp reports the JSON-valued properties of a row's kind.
func isJSONProp(row Row, name string) bool {
	switch name {
	case "Settings", "FormSchema", "AllowedQueryParams", "DefaultLaunchParams", "Errors", "InputData",
		"ErrorDetails", "IntegrationCalls":
		return true
	case "Result":
		return Kind(row.RowKey) == "execution"
	case "Value":
		return Kind(row.RowKey) == "config" && row.Props["Type"].Str == "json"
	}
	return false
}

// short renders a property value for a failure message, long strings cut.
func short(v Value, ok bool) string {
	if !ok {
		return "(absent)"
	}
	js := EncodeEntity(Row{Props: map[string]Value{"P": v}})
	if len(js) > 300 {
		return string(js[:300]) + "…"
	}
	return string(js)
}

// TestReverseIndexRowsOfFixtures: for every fixture execution, with and
// without its row, the index rows ReverseDoc writes hold every property
// the fixture's index rows of that execution hold, with the same values
// (a timestamp in the application's form when written without the row);
// a status row of a final status is neither written nor deleted, as the
// repository keeps status rows only for Pending and Running.
func TestReverseIndexRowsOfFixtures(t *testing.T) {
	fixtureIndex := map[string][]Row{} // execution id → its index rows
	for _, fr := range loadFixtureTable(t, fixturesDir, TableRelationships) {
		switch Kind(fr.row.RowKey) {
		case "userexec", "workflowexec", "formexec", "status":
			id := fr.row.RowKey[strings.LastIndexByte(fr.row.RowKey, ':')+1:]
			fixtureIndex[id] = append(fixtureIndex[id], fr.row)
		}
	}
	checked := 0
	for _, rr := range fixtureDocRows(t) {
		if Kind(rr.row.RowKey) != "execution" {
			continue
		}
		id := ExecutionID(rr.row)
		for _, withRow := range []bool{true, false} {
			var existing *Row
			o := rr.out
			if withRow {
				existing = &rr.row
			} else {
				o.Doc = withoutMigration(o.Doc)
				o.DocJSON = MustJSON(o.Doc)
			}
			ro := reversed(t, o, existing, rtOpts())
			if ro.DeadLetter != nil {
				t.Fatalf("%s: %+v", rr.row.RowKey, *ro.DeadLetter)
			}
			ours := map[string]Row{}
			for _, r := range ro.Index {
				ours[r.RowKey] = r
			}
			deleted := map[string]bool{}
			for _, d := range ro.Delete {
				deleted[d.RowKey] = true
			}
			status := rr.row.Props["Status"].Str
			for _, f := range fixtureIndex[id] {
				if Kind(f.RowKey) == "status" && !statusIndexed(status) {
					if _, ok := ours[f.RowKey]; ok || deleted[f.RowKey] {
						t.Errorf("%s: status row of a final status written or deleted", f.RowKey)
					}
					continue
				}
				r, ok := ours[f.RowKey]
				if !ok {
					t.Errorf("%s (with row %v): index row %s not written", rr.row.RowKey, withRow, f.RowKey)
					continue
				}
				for name, v := range f.Props {
					got, ok := r.Props[name]
					same := ok && DiffRows(Row{Props: map[string]Value{name: got}}, Row{Props: map[string]Value{name: v}}) == nil
					if tm, parsed := ParseTimestamp(v.Str); !same && !withRow && parsed && got.Str == pythonISOFormat(tm) {
						same = true // an offset timestamp, in the application's form
					}
					if !same {
						t.Errorf("%s: %s %s, fixture %s", f.RowKey, name, short(got, ok), short(v, true))
					}
				}
				checked++
			}
		}
	}
	t.Logf("%d fixture index rows compared", checked)
	if checked < 80 {
		t.Errorf("only %d fixture index rows compared", checked)
	}
}

// reverseGolden is a ReverseOutcome as a reviewer reads it: rows in the
// Table service's annotated JSON (EncodeEntity: properties in name order,
// Edm types annotated).
type reverseGolden struct {
	Row        json.RawMessage    `json:"row,omitempty"`
	Index      []json.RawMessage  `json:"index,omitempty"`
	Delete     []RowRef           `json:"delete,omitempty"`
	Uploads    []goldenUpload     `json:"uploads,omitempty"`
	Warnings   []Warning          `json:"warnings,omitempty"`
	DeadLetter *ReverseDeadLetter `json:"deadLetter,omitempty"`
}

// TestReverseGolden compares what ReverseDoc writes for the doc of every
// fixture row, as run wrote it (with _migration) but without the existing
// row — what the Table-based application would write for it — with
// testdata/golden-reverse/<Table>/<RowKey>.golden; -update rewrites them.
func TestReverseGolden(t *testing.T) {
	const dir = "testdata/golden-reverse"
	rows := fixtureDocRows(t)
	if *update {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	partitions := map[string]map[string]bool{}
	for _, rr := range rows {
		k := rr.row.Table + "/" + rr.row.RowKey
		if partitions[k] == nil {
			partitions[k] = map[string]bool{}
		}
		partitions[k][rr.row.PartitionKey] = true
	}
	want := map[string]bool{}
	for _, rr := range rows {
		ro := reversed(t, rr.out, nil, rtOpts())
		g := reverseGolden{Delete: ro.Delete, Warnings: ro.Warnings, DeadLetter: ro.DeadLetter}
		if ro.DeadLetter == nil {
			g.Row = EncodeEntity(ro.Row)
		}
		for _, r := range ro.Index {
			g.Index = append(g.Index, EncodeEntity(r))
		}
		for _, u := range ro.Uploads {
			sum := sha256.Sum256(u.Data)
			g.Uploads = append(g.Uploads, goldenUpload{u.Path, u.ContentType, len(u.Data), hex.EncodeToString(sum[:])})
		}
		got, err := json.MarshalIndent(g, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		name := goldenFileName(rr.row.RowKey, rr.row.PartitionKey, len(partitions[rr.row.Table+"/"+rr.row.RowKey]) > 1)
		path := filepath.Join(dir, rr.row.Table, name)
		want[path] = true
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v (run go test ./transform -update)", path, err)
			continue
		}
		if !bytes.Equal(old, got) {
			t.Errorf("%s differs (run go test ./transform -update and review the diff):\n%s", path, got)
		}
	}
	for _, table := range Tables() {
		entries, _ := os.ReadDir(filepath.Join(dir, table))
		for _, e := range entries {
			if p := filepath.Join(dir, table, e.Name()); !want[p] {
				t.Errorf("stale golden file %s (run go test ./transform -update)", p)
			}
		}
	}
	if len(want) != len(rows) {
		t.Errorf("%d golden files for %d rows", len(want), len(rows))
	}
}
