package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/transform"
)

// A --tables naming every table is no selection; any other is, and so
// are a sample below 1 and a time.
func TestNewScope(t *testing.T) {
	all := transform.Tables()
	for _, c := range []struct {
		name    string
		opts    Options
		since   time.Time
		tables  []string
		partial bool
	}{
		{"every table, every row", Options{Tables: all, Sample: 1}, time.Time{}, nil, false},
		{"a sample", Options{Tables: all, Sample: 0.05}, time.Time{}, nil, true},
		{"one table", Options{Tables: []string{transform.TableConfig}, Sample: 1}, time.Time{}, []string{transform.TableConfig}, true},
		{"since", Options{Tables: all, Sample: 1}, time.Date(2026, 11, 20, 14, 0, 0, 0, time.UTC), nil, true},
	} {
		s := newScope(c.opts, 3, 7)
		s.Since = c.since
		if s.partial() != c.partial || len(s.Tables) != len(c.tables) || s.RowsJudged != 3 || s.RowsRead != 7 || s.Sample != c.opts.Sample {
			t.Errorf("%s: scope %+v partial %v, want tables %v partial %v", c.name, s, s.partial(), c.tables, c.partial)
		}
	}
}

// The verdict line, the error's suffix and the HTML head of each case: a
// full check alone says the bare "verify: OK"; a partial one says what
// it judged, in its OK and in its failure; a selection without rows says
// so, and its page does not say "in sync".
func TestVerdictRendering(t *testing.T) {
	since := time.Date(2026, 11, 20, 14, 0, 0, 0, time.FixedZone("", 2*3600))
	config := []string{transform.TableConfig}
	two := []string{transform.TableConfig, transform.TableEntities}
	for _, c := range []struct {
		name                   string
		ok                     bool
		scope                  Scope
		missing, notMigrated   int
		line, suffix, htmlHead string
	}{
		{name: "full, OK", ok: true, scope: Scope{Sample: 1, RowsJudged: 20000, RowsRead: 20000},
			line: "verify: OK", suffix: "", htmlHead: "In sync: every source row is where its disposition says."},
		{name: "full, failing", scope: Scope{Sample: 1, RowsJudged: 20000, RowsRead: 20000}, missing: 2,
			line: "verify: 2 missing, 0 different, 0 orphan doc(s)", suffix: "", htmlHead: "Not in sync: 2 missing, 0 different and 0 orphan doc(s); 0 row(s) not migrated."},
		{name: "1 % sample", ok: true, scope: Scope{Sample: 0.01, RowsJudged: 209, RowsRead: 20000},
			line:     "verify: OK for a 1 % sample: 209 of 20,000 rows judged",
			suffix:   " for a 1 % sample: 209 of 20,000 rows judged",
			htmlHead: "Partial check of a 1 % sample: 209 of 20,000 rows judged. In sync: every row judged is where its disposition says."},
		{name: "0.5 % sample", ok: true, scope: Scope{Sample: 0.005, RowsJudged: 5120, RowsRead: 1048576},
			line: "verify: OK for a 0.5 % sample: 5,120 of 1,048,576 rows judged", suffix: " for a 0.5 % sample: 5,120 of 1,048,576 rows judged",
			htmlHead: "Partial check of a 0.5 % sample: 5,120 of 1,048,576 rows judged. In sync: every row judged is where its disposition says."},
		{name: "tables", ok: true, scope: Scope{Sample: 1, Tables: config, RowsJudged: 14, RowsRead: 14},
			line: "verify: OK for tables Config: 14 of 14 rows judged", suffix: " for tables Config: 14 of 14 rows judged",
			htmlHead: "Partial check of tables Config: 14 of 14 rows judged. In sync: every row judged is where its disposition says."},
		{name: "tables without rows", ok: true, scope: Scope{Sample: 1, Tables: config},
			line: "verify: OK for tables Config: no rows to judge", suffix: " for tables Config: no rows to judge",
			htmlHead: "Partial check of tables Config: no rows to judge. Nothing judged: no row, and no doc in Cosmos DB from a row of the selection."},
		{name: "a sample of no row", ok: true, scope: Scope{Sample: 0.01, RowsJudged: 0, RowsRead: 40},
			line:     "verify: OK for a 1 % sample: 0 of 40 rows judged",
			suffix:   " for a 1 % sample: 0 of 40 rows judged",
			htmlHead: "Partial check of a 1 % sample: 0 of 40 rows judged. Nothing judged: no row, and no doc in Cosmos DB from a row of the selection."},
		{name: "a sample of tables", ok: true, scope: Scope{Sample: 0.05, Tables: two, RowsJudged: 52, RowsRead: 1040},
			line:     "verify: OK for a 5 % sample of tables Config, Entities: 52 of 1,040 rows judged",
			suffix:   " for a 5 % sample of tables Config, Entities: 52 of 1,040 rows judged",
			htmlHead: "Partial check of a 5 % sample of tables Config, Entities: 52 of 1,040 rows judged. In sync: every row judged is where its disposition says."},
		{name: "since", ok: true, scope: Scope{Sample: 1, Since: since, RowsJudged: 12, RowsRead: 12, DocsJudged: 15},
			line: "verify: OK for changes since 2026-11-20T12:00:00Z: 12 of 12 rows and 15 docs judged", suffix: " for changes since 2026-11-20T12:00:00Z: 12 of 12 rows and 15 docs judged",
			htmlHead: "Partial check of changes since 2026-11-20T12:00:00Z: 12 of 12 rows and 15 docs judged. In sync: every row judged is where its disposition says."},
		{name: "since, nothing changed", ok: true, scope: Scope{Sample: 1, Since: since},
			line: "verify: OK for changes since 2026-11-20T12:00:00Z: no changed row or doc to judge", suffix: " for changes since 2026-11-20T12:00:00Z: no changed row or doc to judge",
			htmlHead: "Partial check of changes since 2026-11-20T12:00:00Z: no changed row or doc to judge. Nothing judged: no row, and no doc in Cosmos DB from a row of the selection."},
		{name: "a sample of changes since in tables", ok: true, scope: Scope{Sample: 0.5, Since: since, Tables: config, RowsJudged: 6, RowsRead: 12, DocsJudged: 3},
			line:     "verify: OK for a 50 % sample of changes since 2026-11-20T12:00:00Z in tables Config: 6 of 12 rows and 3 docs judged",
			suffix:   " for a 50 % sample of changes since 2026-11-20T12:00:00Z in tables Config: 6 of 12 rows and 3 docs judged",
			htmlHead: "Partial check of a 50 % sample of changes since 2026-11-20T12:00:00Z in tables Config: 6 of 12 rows and 3 docs judged. In sync: every row judged is where its disposition says."},
		{name: "since, on a full verify", ok: true, scope: Scope{Sample: 1, Since: since, Base: since.Add(time.Minute), RowsJudged: 12, RowsRead: 12, DocsJudged: 15},
			line:     "verify: OK — in sync: the full verify of 2026-11-20T12:01:00Z plus every change since 2026-11-20T12:00:00Z: 12 of 12 rows and 15 docs judged",
			suffix:   " for the full verify of 2026-11-20T12:01:00Z plus every change since 2026-11-20T12:00:00Z: 12 of 12 rows and 15 docs judged",
			htmlHead: "In sync: the full verify of 2026-11-20T12:01:00Z plus every change since 2026-11-20T12:00:00Z: 12 of 12 rows and 15 docs judged; every source row is where its disposition says."},
		{name: "since, on a full verify, failing", scope: Scope{Sample: 1, Since: since, Base: since.Add(time.Minute), RowsJudged: 12, RowsRead: 12, DocsJudged: 15}, missing: 1,
			line:     "verify: 1 missing, 0 different, 0 orphan doc(s) in the full verify of 2026-11-20T12:01:00Z plus every change since 2026-11-20T12:00:00Z: 12 of 12 rows and 15 docs judged",
			suffix:   " in the full verify of 2026-11-20T12:01:00Z plus every change since 2026-11-20T12:00:00Z: 12 of 12 rows and 15 docs judged",
			htmlHead: "Not in sync: 1 missing, 0 different and 0 orphan doc(s); 0 row(s) not migrated. Judged: the full verify of 2026-11-20T12:01:00Z plus every change since 2026-11-20T12:00:00Z: 12 of 12 rows and 15 docs judged."},
		{name: "failing sample", scope: Scope{Sample: 0.05, RowsJudged: 52, RowsRead: 1040}, missing: 1,
			line:     "verify: 1 missing, 0 different, 0 orphan doc(s) in a 5 % sample: 52 of 1,040 rows judged",
			suffix:   " in a 5 % sample: 52 of 1,040 rows judged",
			htmlHead: "Partial check of a 5 % sample: 52 of 1,040 rows judged. Not in sync: 1 missing, 0 different and 0 orphan doc(s); 0 row(s) not migrated."},
		{name: "failing tables, dead letters", scope: Scope{Sample: 1, Tables: config, RowsJudged: 34, RowsRead: 34}, notMigrated: 4,
			line:     "verify: 4 row(s) not migrated; 0 missing, 0 different, 0 orphan doc(s) in tables Config: 34 of 34 rows judged",
			suffix:   " in tables Config: 34 of 34 rows judged",
			htmlHead: "Partial check of tables Config: 34 of 34 rows judged. Not in sync: 4 row(s) are not migrated (dead letters); every other row matches its doc."},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &Report{Verdict: Verdict{OK: c.ok, Partial: c.scope.partial(), Scope: c.scope}, NotMigrated: c.notMigrated}
			r.Totals.Missing = c.missing
			if got := r.VerdictLine(); got != c.line {
				t.Errorf("line\n got %q\nwant %q", got, c.line)
			}
			if got := r.PartialSuffix(); got != c.suffix {
				t.Errorf("suffix\n got %q\nwant %q", got, c.suffix)
			}
			v := reportVerdict(r)
			if v.Head != c.htmlHead {
				t.Errorf("HTML head\n got %q\nwant %q", v.Head, c.htmlHead)
			}
			cut := "Only a full check, of every row of every table, is the signal to cut over."
			if says := len(v.Lines) > 0 && v.Lines[0] == cut; says != r.Partial {
				t.Errorf("HTML lines %q: says only a full check signs off: %v, want %v", v.Lines, says, r.Partial)
			}
			if wantClass := map[bool]string{true: "ok", false: "warn"}[!r.Partial]; c.ok && v.Class != wantClass {
				t.Errorf("HTML class %q, want %q", v.Class, wantClass)
			}
			var b bytes.Buffer
			if err := r.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(b.String(), "\n"+c.line+"\n") {
				t.Errorf("the text does not end in the verdict line:\n%s", b.String())
			}
		})
	}
}

// The JSON report carries the verdict's fields beside the others: ok,
// partial and scope, the scope's since only when there is one.
func TestVerdictJSON(t *testing.T) {
	r := &Report{Verdict: Verdict{OK: true, Partial: true, Scope: Scope{Sample: 0.05, Tables: []string{transform.TableConfig}, RowsJudged: 2, RowsRead: 30}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		OK      *bool          `json:"ok"`
		Partial *bool          `json:"partial"`
		Scope   map[string]any `json:"scope"`
		Totals  map[string]any `json:"totals"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := `{"rowsJudged":2,"rowsRead":30,"sample":0.05,"tables":["Config"]}`
	if s, _ := json.Marshal(got.Scope); got.OK == nil || !*got.OK || got.Partial == nil || !*got.Partial || string(s) != want || got.Totals == nil {
		t.Errorf("report JSON %s; want ok and partial true, scope %s", b, want)
	}
	r.Scope.Since = time.Date(2026, 11, 20, 14, 0, 0, 0, time.UTC)
	if b, _ := json.Marshal(r.Scope); !strings.Contains(string(b), `"since":"2026-11-20T14:00:00Z"`) {
		t.Errorf("scope with since: %s", b)
	}
}

// A whole Run in memory: the scope counts every row read and the rows
// judged, and names the tables only when --tables left one out.
func TestRunScope(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	topts := transform.Options{Now: now}
	var rows []transform.Row
	var docs [][]byte
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		row := transform.Row{Table: transform.TableEntities, PartitionKey: "GLOBAL", RowKey: "role:" + id, Timestamp: now,
			Props: map[string]transform.Value{"Name": transform.String(id)}}
		rows = append(rows, row)
		docs = append(docs, transform.Transform(row, transform.BlobFacts{}, topts.WithDefaults()).DocJSON)
	}
	sampled := 0
	for _, row := range rows {
		if Sampled(row.Table, row.PartitionKey, row.RowKey, 0.5) {
			sampled++
		}
	}
	if sampled == 0 || sampled == len(rows) {
		t.Fatalf("%d of %d rows in the half sample: pick other keys", sampled, len(rows))
	}
	v := inMemory(map[string][]transform.Row{transform.TableEntities: rows, transform.TableConfig: nil, transform.TableRelationships: nil},
		map[string][][]byte{transform.ContainerEntities: docs})
	for _, c := range []struct {
		name    string
		opts    Options
		want    Scope
		partial bool
	}{
		{"every table", Options{Transform: topts}, Scope{Sample: 1, RowsJudged: 8, RowsRead: 8}, false},
		{"every table named", Options{Transform: topts, Tables: transform.Tables()}, Scope{Sample: 1, RowsJudged: 8, RowsRead: 8}, false},
		{"half", Options{Transform: topts, Sample: 0.5}, Scope{Sample: 0.5, RowsJudged: sampled, RowsRead: 8}, true},
		{"Entities", Options{Transform: topts, Tables: []string{transform.TableEntities}},
			Scope{Sample: 1, Tables: []string{transform.TableEntities}, RowsJudged: 8, RowsRead: 8}, true},
		{"Config, empty", Options{Transform: topts, Tables: []string{transform.TableConfig}},
			Scope{Sample: 1, Tables: []string{transform.TableConfig}}, true},
	} {
		r, err := v.Run(context.Background(), c.opts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, _ := json.Marshal(r.Scope)
		want, _ := json.Marshal(c.want)
		if string(got) != string(want) || r.Partial != c.partial || !r.OK {
			t.Errorf("%s: scope %s partial %v ok %v; want %s partial %v ok", c.name, got, r.Partial, r.OK, want, c.partial)
		}
	}
}
