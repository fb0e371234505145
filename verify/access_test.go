package verify

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/transform"
)

// accessNow is the clock of the access-pattern tests: executions that
// completed more than 14 days before it are expired.
var accessNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// execRow is an Entities execution row as Bifrost writes it; an empty
// value leaves its property out.
func execRow(pk, id, executedBy, workflow, formID, status, completedAt string) transform.Row {
	props := map[string]transform.Value{
		"ExecutionId": transform.String(id),
		"InputData":   transform.String("{}"),
		"StartedAt":   transform.String(completedAt),
		"CompletedAt": transform.String(completedAt),
	}
	for name, v := range map[string]string{"ExecutedBy": executedBy, "WorkflowName": workflow, "FormId": formID, "Status": status} {
		if v != "" {
			props[name] = transform.String(v)
		}
	}
	return transform.Row{Table: transform.TableEntities, PartitionKey: pk, RowKey: "execution:8205000000000_" + id, Props: props}
}

// indexRow is a Relationships index row.
func indexRow(rk string) transform.Row {
	return transform.Row{Table: transform.TableRelationships, PartitionKey: "GLOBAL", RowKey: rk,
		Props: map[string]transform.Value{"ExecutionId": transform.String(rk[strings.LastIndexByte(rk, ':')+1:])}}
}

// factsFor transforms an execution row as run does and returns its facts.
func factsFor(t *testing.T, row transform.Row) execFacts {
	t.Helper()
	o := transform.Transform(row, transform.BlobFacts{}, transform.Options{Now: accessNow}.WithDefaults())
	return factsOf(row, o)
}

func s(v string) *string { return &v }

const (
	orgPK  = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
	recent = "2026-11-20T10:00:00"
	old    = "2026-10-01T03:00:00" // expired at accessNow
)

// TestClassifyIndex is the decision table of one index row against its
// execution: dangling, stale per key field, or nothing.
func TestClassifyIndex(t *testing.T) {
	alice := execRow("GLOBAL", "e1", "alice@contoso.example", "get_user_licenses", "f-1", "Success", recent)
	scheduler := execRow(orgPK, "e2", "system:scheduler", "sync:users", "", "Running", recent)
	orgPrefixed := execRow("org-"+orgPK, "e3", "bob@contoso.example", "onboard_user", "", "Failed", recent)
	expired := execRow("GLOBAL", "e4", "alice@contoso.example", "purge", "", "Success", old)
	noUser := execRow(orgPK, "e5", "", "import_contacts", "", "Pending", recent)
	numericStatus := execRow(orgPK, "e6", "bob@contoso.example", "import_contacts", "", "", recent)
	numericStatus.Props["Status"] = transform.Value{Type: transform.EdmInt32, Int: 2}
	deadLetter := execRow(orgPK, "e7", "bob@contoso.example", "import_contacts", "", "Failed", recent)
	deadLetter.Props["InputData"] = transform.String("{'not': json}")

	stale := func(rk, id, field, index string, exec *string) Finding {
		return Finding{Kind: FindingStale, Index: s(rk), ExecutionID: id, Field: field, IndexValue: s(index), ExecutionValue: exec}
	}
	cases := []struct {
		name string
		rk   string
		exec *transform.Row // nil: no such execution
		want []Finding
	}{
		{"userexec matches", "userexec:alice@contoso.example:e1", &alice, nil},
		{"userexec: a user id with ':' matches", "userexec:system:scheduler:e2", &scheduler, nil},
		{"userexec: a user id with ':' differs", "userexec:system:cron:e2", &scheduler,
			[]Finding{stale("userexec:system:cron:e2", "e2", FieldExecutedBy, "system:cron", s("system:scheduler"))}},
		{"userexec: another user", "userexec:mallory@contoso.example:e1", &alice,
			[]Finding{stale("userexec:mallory@contoso.example:e1", "e1", FieldExecutedBy, "mallory@contoso.example", s("alice@contoso.example"))}},
		{"userexec: a user id differing only in case", "userexec:Alice@contoso.example:e1", &alice,
			[]Finding{stale("userexec:Alice@contoso.example:e1", "e1", FieldExecutedBy, "Alice@contoso.example", s("alice@contoso.example"))}},
		{"userexec: the execution has no ExecutedBy", "userexec:alice@contoso.example:e5", &noUser,
			[]Finding{stale("userexec:alice@contoso.example:e5", "e5", FieldExecutedBy, "alice@contoso.example", nil)}},
		{"workflowexec: GLOBAL", "workflowexec:get_user_licenses:GLOBAL:e1", &alice, nil},
		{"workflowexec: a plain partition, a plain PartitionKey", "workflowexec:sync:users:" + orgPK + ":e2", &scheduler, nil},
		{"workflowexec: an org- partition, a plain PartitionKey", "workflowexec:sync:users:org-" + orgPK + ":e2", &scheduler, nil},
		{"workflowexec: a plain partition, an org- PartitionKey", "workflowexec:onboard_user:" + orgPK + ":e3", &orgPrefixed, nil},
		{"workflowexec: another workflow", "workflowexec:sync_users:" + orgPK + ":e2", &scheduler,
			[]Finding{stale("workflowexec:sync_users:"+orgPK+":e2", "e2", FieldWorkflowName, "sync_users", s("sync:users"))}},
		{"workflowexec: another partition", "workflowexec:get_user_licenses:" + orgPK + ":e1", &alice,
			[]Finding{stale("workflowexec:get_user_licenses:"+orgPK+":e1", "e1", FieldScope, "org-"+orgPK, s("GLOBAL"))}},
		{"workflowexec: both differ", "workflowexec:purge:SYSTEM:e1", &alice, []Finding{
			stale("workflowexec:purge:SYSTEM:e1", "e1", FieldWorkflowName, "purge", s("get_user_licenses")),
			stale("workflowexec:purge:SYSTEM:e1", "e1", FieldScope, "SYSTEM", s("GLOBAL"))}},
		{"formexec matches", "formexec:f-1:e1", &alice, nil},
		{"formexec: another form", "formexec:f-2:e1", &alice,
			[]Finding{stale("formexec:f-2:e1", "e1", FieldFormID, "f-2", s("f-1"))}},
		{"formexec: the execution has no form", "formexec:f-1:e2", &scheduler,
			[]Finding{stale("formexec:f-1:e2", "e2", FieldFormID, "f-1", nil)}},
		{"status matches", "status:Running:e2", &scheduler, nil},
		{"status: an old status", "status:Pending:e2", &scheduler,
			[]Finding{stale("status:Pending:e2", "e2", FieldStatus, "Pending", s("Running"))}},
		{"status: not a string on the execution", "status:2:e6", &numericStatus,
			[]Finding{stale("status:2:e6", "e6", FieldStatus, "2", nil)}},
		{"an expired execution's index matches", "userexec:alice@contoso.example:e4", &expired, nil},
		{"an expired execution's index is judged like any other", "status:Running:e4", &expired,
			[]Finding{stale("status:Running:e4", "e4", FieldStatus, "Running", s("Success"))}},
		{"a dead-lettered execution's index matches", "status:Failed:e7", &deadLetter, nil},
		{"dangling", "workflowexec:purge:" + orgPK + ":e9", nil,
			[]Finding{{Kind: FindingDangling, Index: s("workflowexec:purge:" + orgPK + ":e9"), ExecutionID: "e9", Field: FieldExecutionID, IndexValue: s("e9")}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ix, ok := transform.ParseIndex(c.rk)
			if !ok {
				t.Fatalf("ParseIndex(%q) failed", c.rk)
			}
			var e *execFacts
			if c.exec != nil {
				f := factsFor(t, *c.exec)
				e = &f
			}
			got := classifyIndex(c.rk, ix, e)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %s\nwant %s", fakes.JSON(got), fakes.JSON(c.want))
			}
		})
	}
	// The facts say which executions are migrated.
	for _, c := range []struct {
		row  transform.Row
		want bool
	}{{alice, true}, {expired, false}, {deadLetter, false}} {
		if got := factsFor(t, c.row).migrated; got != c.want {
			t.Errorf("%s: migrated %v, want %v", c.row.RowKey, got, c.want)
		}
	}
}

// TestClassifyUnindexed is the decision table of one execution once every
// index row is known.
func TestClassifyUnindexed(t *testing.T) {
	migrated := execFacts{executedBy: optString{"system:scheduler", true}, workflowName: optString{"sync_users", true}, scope: "GLOBAL", migrated: true}
	noUser := migrated
	noUser.executedBy = optString{}
	notMigrated := migrated
	notMigrated.migrated = false // expired or dead-lettered
	byUser := Finding{Kind: FindingUnindexed, ExecutionID: "e1", Field: FieldExecutedBy, ExecutionValue: s("system:scheduler")}
	byWorkflow := Finding{Kind: FindingUnindexed, ExecutionID: "e1", Field: FieldWorkflowName, ExecutionValue: s("sync_users")}
	for _, c := range []struct {
		name                 string
		e                    execFacts
		hasUser, hasWorkflow bool
		want                 []Finding
	}{
		{"both rows", migrated, true, true, nil},
		{"no userexec row", migrated, false, true, []Finding{byUser}},
		{"no workflowexec row", migrated, true, false, []Finding{byWorkflow}},
		{"neither", migrated, false, false, []Finding{byUser, byWorkflow}},
		{"no userexec row, no ExecutedBy", noUser, false, true, []Finding{{Kind: FindingUnindexed, ExecutionID: "e1", Field: FieldExecutedBy}}},
		{"not migrated (expired or dead-lettered), neither row", notMigrated, false, false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := classifyUnindexed("e1", c.e, c.hasUser, c.hasWorkflow)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %s\nwant %s", fakes.JSON(got), fakes.JSON(c.want))
			}
		})
	}
}

// feed streams rows through an accessIndex as the row reader does:
// Entities first, every row, with the sample decided by keep; it returns
// the result.
func feed(t *testing.T, a *accessIndex, w *work, rows []transform.Row, keep func(transform.Row) bool) (AccessPatterns, int) {
	t.Helper()
	opts := transform.Options{Now: accessNow}.WithDefaults()
	ids := transform.NewIDSet()
	for i, row := range rows {
		o := ids.Check(transform.Transform(row, transform.BlobFacts{}, opts))
		switch {
		case row.Table == transform.TableEntities && o.Kind == "execution":
			must(t, a.addExecution(row, uint64(i+1), o, keep(row)))
		case o.Disposition == transform.DispositionDroppedIndex:
			must(t, a.addIndex(row, uint64(i+1), keep(row)))
		}
	}
	r, dangling, err := a.result(w)
	must(t, err)
	return r, dangling
}

// newTestWork returns a work of sizes z that the test removes.
func newTestWork(t *testing.T, z sizes) *work {
	w := newWork(t.TempDir(), z)
	t.Cleanup(func() { _ = w.close() })
	return w
}

func all(transform.Row) bool { return true }

// TestAccessIndex streams executions and index rows through the compact
// index: findings as rows go by, the unindexed pass at the end, both ids
// of an execution whose property and RowKey differ, flags set by rows
// outside the sample, the first row of an id keeping it.
func TestAccessIndex(t *testing.T) {
	contradicting := execRow("GLOBAL", "p-1", "alice@contoso.example", "w", "", "Success", recent)
	contradicting.RowKey = "execution:8205000000000_k-1" // property p-1, RowKey k-1: a dead letter
	rows := []transform.Row{
		execRow("GLOBAL", "e1", "alice@contoso.example", "w", "", "Success", recent),
		execRow(orgPK, "e2", "system:scheduler", "sync", "", "Failed", recent),
		execRow("GLOBAL", "e3", "bob@contoso.example", "w", "", "Success", old), // expired, no index rows
		execRow("GLOBAL", "e4", "bob@contoso.example", "w", "", "Success", recent),
		execRow("GLOBAL", "e5", "bob@contoso.example", "w", "", "Success", recent), // outside the sample, no index rows
		execRow(orgPK, "e1", "carol@contoso.example", "x", "", "Failed", recent),   // the same id again
		contradicting,
		indexRow("status:Success:e1"),
		indexRow("status:Success:k-1"),
		indexRow("status:Success:p-1"),
		indexRow("status:Running:e2"),
		indexRow("userexec:alice@contoso.example:e1"),
		indexRow("userexec:system:scheduler:e2"),
		indexRow("userexec:ghost@contoso.example:e9"),
		indexRow("workflowexec:w:GLOBAL:e1"),
		indexRow("workflowexec:sync:org-" + orgPK + ":e2"),
		indexRow("workflowexec:w:GLOBAL:e4"), // outside the sample: sets the flag, not judged
		indexRow("workflowexec:w:" + orgPK + ":e1"),
		indexRow("userexec:malformed"), // kept in tables
	}
	for _, z := range []sizes{{}, tiny} {
		w := newTestWork(t, z)
		a := newAccessIndex(true, w)
		outside := map[string]bool{"workflowexec:w:GLOBAL:e4": true, rows[4].RowKey: true}
		got, dangling := feed(t, a, w, rows, func(r transform.Row) bool { return !outside[r.RowKey] })
		if dangling != 1 {
			t.Errorf("%d sampled dangling rows (run's warning), want 1", dangling)
		}
		want := AccessPatterns{Checked: true, Dangling: 1, Stale: 2, Unindexed: 1, Findings: []Finding{
			{Kind: FindingDangling, Index: s("userexec:ghost@contoso.example:e9"), ExecutionID: "e9", Field: FieldExecutionID, IndexValue: s("e9")},
			{Kind: FindingStale, Index: s("status:Running:e2"), ExecutionID: "e2", Field: FieldStatus, IndexValue: s("Running"), ExecutionValue: s("Failed")},
			{Kind: FindingStale, Index: s("workflowexec:w:" + orgPK + ":e1"), ExecutionID: "e1", Field: FieldScope, IndexValue: s("org-" + orgPK), ExecutionValue: s("GLOBAL")},
			{Kind: FindingUnindexed, ExecutionID: "e4", Field: FieldExecutedBy, ExecutionValue: s("bob@contoso.example")},
		}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("result\n got %s\nwant %s", fakes.JSON(got), fakes.JSON(want))
		}
		if a.kept != 6 {
			t.Errorf("%d execution records, want 6 (the second e1 is not kept)", a.kept)
		}
	}
	// Nothing is judged when a table is left out.
	w := newTestWork(t, sizes{})
	off := newAccessIndex(false, w)
	if r, _ := feed(t, off, w, rows, all); r.Checked || r.Dangling+r.Stale+r.Unindexed != 0 || len(r.Findings) != 0 || off.kept != 0 {
		t.Errorf("not checked: %s", fakes.JSON(r))
	}
}

// TestAccessIndexLimits: counts are exact beyond the listed rows: every
// dangling and stale row up to MaxAccessRows each, the first
// ShownDifferences unindexed executions; a row stale in two fields is
// listed whole and counted once.
func TestAccessIndexLimits(t *testing.T) {
	var rows []transform.Row
	const n = MaxAccessRows + 5
	for i := range n {
		rows = append(rows, execRow("GLOBAL", fmt.Sprintf("e%04d", i), "alice@contoso.example", "w", "", "Success", recent))
	}
	for i := range n {
		rows = append(rows, indexRow(fmt.Sprintf("workflowexec:v:SYSTEM:e%04d", i)), indexRow(fmt.Sprintf("status:Failed:x%04d", i)))
	}
	w := newTestWork(t, sizes{})
	r, _ := feed(t, newAccessIndex(true, w), w, rows, all)
	if r.Dangling != n || r.Stale != n || r.Unindexed != n {
		t.Fatalf("counts %d dangling, %d stale, %d unindexed; want %d each", r.Dangling, r.Stale, r.Unindexed, n)
	}
	perKind := map[FindingKind]int{}
	for _, g := range accessRows(r.Findings) {
		perKind[g[0].Kind]++
		if g[0].Kind == FindingStale && len(g) != 2 {
			t.Errorf("stale row %s has %d findings, want 2 (workflowName and scope)", *g[0].Index, len(g))
		}
	}
	if want := map[FindingKind]int{FindingDangling: MaxAccessRows, FindingStale: MaxAccessRows, FindingUnindexed: ShownDifferences}; !reflect.DeepEqual(perKind, want) {
		t.Errorf("listed %v, want %v", perKind, want)
	}
	if last := r.Findings[len(r.Findings)-1]; last.ExecutionID != fmt.Sprintf("e%04d", ShownDifferences-1) {
		t.Errorf("last unindexed listed %s, want the %dth execution in read order", last.ExecutionID, ShownDifferences)
	}
	sum := r.firstOfEach(3)
	if g := accessRows(sum.Findings); len(g) != 9 || sum.Dangling != n || len(sum.Findings) != 3+6+3 {
		t.Errorf("first 3 of each: %d rows, %d findings, dangling %d", len(g), len(sum.Findings), sum.Dangling)
	}
}

// TestAccessPatternsText: the counts line, one line per index row or
// execution, values as JSON, "(none)" for a missing value, and the
// sentence when the check did not run.
func TestAccessPatternsText(t *testing.T) {
	a := AccessPatterns{Checked: true, Dangling: 1, Stale: 2, Unindexed: 1, Findings: []Finding{
		{Kind: FindingDangling, Index: s("userexec:ghost:e9"), ExecutionID: "e9", Field: FieldExecutionID, IndexValue: s("e9")},
		{Kind: FindingStale, Index: s("workflowexec:v:SYSTEM:e1"), ExecutionID: "e1", Field: FieldWorkflowName, IndexValue: s("v"), ExecutionValue: s("w")},
		{Kind: FindingStale, Index: s("workflowexec:v:SYSTEM:e1"), ExecutionID: "e1", Field: FieldScope, IndexValue: s("SYSTEM"), ExecutionValue: s("GLOBAL")},
		{Kind: FindingStale, Index: s("formexec:f:e2"), ExecutionID: "e2", Field: FieldFormID, IndexValue: s("f")},
		{Kind: FindingUnindexed, ExecutionID: "e3", Field: FieldExecutedBy, ExecutionValue: s("o'brien@contoso.example")},
		{Kind: FindingUnindexed, ExecutionID: "e3", Field: FieldWorkflowName, ExecutionValue: s("w")},
	}}
	var b bytes.Buffer
	a.writeText(&b, 1)
	want := `access patterns (data quality, not failures): 1 dangling and 2 stale index row(s), 1 unindexed execution(s)
dangling index rows (no such execution: listed before cutover, gone after) (1):
  index userexec:ghost:e9: execution e9 is not in Entities
stale index rows (listed under the index's value before cutover, under the execution's after) (2):
  index workflowexec:v:SYSTEM:e1: workflowName: index "v", execution "w"; scope: index "SYSTEM", execution "GLOBAL"
  index formexec:f:e2: formId: index "f", execution (none)
unindexed executions (missing from that user's or workflow's list before cutover, in it after) (1):
  execution e3: no userexec row (executedBy "o'brien@contoso.example"); no workflowexec row (workflowName "w")
`
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	a.writeText(&b, 0.5)
	if !strings.HasPrefix(b.String(), "access patterns (data quality, not failures): 1 dangling and 2 stale index row(s), 1 unindexed execution(s) of the sample\n") {
		t.Errorf("sampled: %s", b.String())
	}
	b.Reset()
	AccessPatterns{}.writeText(&b, 1)
	if b.String() != "access patterns: not checked (they need both Entities and Relationships; --tables left one out)\n" {
		t.Errorf("not checked: %q", b.String())
	}
}

// A whole Run in memory: the access patterns reach the report (every
// kind), the dangling rows count as run's warning, and they leave OK
// alone; without Relationships nothing is checked.
func TestAccessPatternsRun(t *testing.T) {
	entities := []transform.Row{
		execRow("GLOBAL", "e1", "alice@contoso.example", "w", "", "Success", recent),
		execRow("GLOBAL", "e2", "bob@contoso.example", "w", "", "Success", recent),
	}
	relationships := []transform.Row{
		indexRow("userexec:alice@contoso.example:e1"),
		indexRow("workflowexec:w:GLOBAL:e1"),
		indexRow("userexec:alice@contoso.example:e2"),
		indexRow("status:Success:e8"),
	}
	for i := range entities {
		entities[i].Timestamp = accessNow.Add(-time.Hour) // as stored: the migrated doc records it
	}
	opts := transform.Options{Now: accessNow}
	var docs [][]byte
	for _, row := range entities {
		docs = append(docs, transform.Transform(row, transform.BlobFacts{}, opts.WithDefaults()).DocJSON)
	}
	v := inMemory(map[string][]transform.Row{transform.TableEntities: entities, transform.TableRelationships: relationships},
		map[string][][]byte{transform.ContainerExecutions: docs})
	r, err := v.Run(context.Background(), Options{Transform: opts, Tables: []string{transform.TableEntities, transform.TableRelationships}})
	if err != nil {
		t.Fatal(err)
	}
	ap := r.AccessPatterns
	if !r.OK || !ap.Checked || ap.Dangling != 1 || ap.Stale != 1 || ap.Unindexed != 1 || r.Warnings[transform.ReasonDanglingIndex] != 1 {
		t.Errorf("ok %v, access patterns %s, warnings %v", r.OK, fakes.JSON(ap), r.Warnings)
	}
	var kinds []string
	for _, f := range ap.Findings {
		kinds = append(kinds, string(f.Kind)+" "+f.ExecutionID+" "+f.Field)
	}
	if want := []string{"dangling e8 executionId", "stale e2 executedBy", "unindexed e2 workflowName"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("findings %q, want %q", kinds, want)
	}
	r, err = v.Run(context.Background(), Options{Transform: opts, Tables: []string{transform.TableEntities}})
	if err != nil {
		t.Fatal(err)
	}
	if r.AccessPatterns.Checked || len(r.AccessPatterns.Findings) != 0 {
		t.Errorf("without Relationships: %s", fakes.JSON(r.AccessPatterns))
	}
}
