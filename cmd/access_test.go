package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
	"github.com/bifrost/bifrost-migrate/verify"
)

// The access-pattern tests: the fixtures, with the rows run dead-letters
// deleted (so that verify can pass), and known index problems seeded the
// way Bifrost's best-effort index writes leave them.

// Fixture ids the seeded cases use.
const (
	org        = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
	orgB       = "2f1a9c4e-8b3d-4e6f-a1c2-5d7e9f0b3a68"
	execAlice  = "23a49d34-736e-5da6-b534-a6707efd1911" // GLOBAL, alice.admin, get_user_licenses, form d4c3…, Success
	execSched  = "f196c930-994e-59b6-bcb8-3b14ae5042c9" // GLOBAL, system:scheduler, nightly_user_sync, Success
	execFailed = "f98ef3b3-d081-5f09-a013-babce214a8a6" // GLOBAL, alice.admin, get_user_licenses, Failed
	execObrien = "34c65a68-8220-5701-a0fa-f13a9666fdf2" // org, o'brien, reset_user_password, Success
	execOnb    = "45c309b9-0c9a-5ada-b688-a7ec35d55b75" // org, o'brien, onboard_user, Failed
	execAudit  = "2cc7e420-f55d-55c6-88fe-65ac4f412803" // org, o'brien, export_audit_log, Success
	execOld    = "32a4e65e-d5a9-50b1-ad96-15f83090963c" // GLOBAL, system:scheduler, Success, expired
	execBadIn  = "9b653c33-0cdd-5bd2-8422-0ed441813a00" // orgB, zoë, import_contacts, Failed: dead-lettered, so deleted
	execGone   = "5effe395-907c-5b5e-8c21-1a59b41c41f2" // the fixtures' dangling workflowexec
	// Executions the seeds add.
	execNoIdx  = "a1c0ffee-0000-5000-8000-000000000001" // org, o'brien, onboard_user, Failed: only a status row
	execNoWf   = "a1c0ffee-0000-5000-8000-000000000003" // GLOBAL, alice.admin, get_user_licenses, Failed: no workflowexec row
	execGhost  = "0f0f0f0f-0000-5000-8000-000000000009" // named by an index row only
	formOther  = "e5d4c3b2-0a9f-4e8d-9c7b-6a5f4e3d2c1b"
	userAlice  = "alice.admin@contoso.example"
	userObrien = "o'brien@contoso.example"
)

// seedAccessCases loads the fixtures into e, deletes the rows run
// dead-letters, and seeds the known cases: index rows that point at no
// execution, that name another user (one whose id contains ':'), another
// workflow, another partition (and one whose partition is spelled with
// "org-", which is not a finding), another form or an old status (one of
// an expired execution, one whose current status row is gone), and
// executions without a userexec or workflowexec row. It returns what
// verify must find: every dangling and stale row in the order verify
// reads them (Relationships in RowKey order), then the unindexed
// executions in Entities' order.
func seedAccessCases(e *verifyEnv) verify.AccessPatterns {
	t := e.t
	t.Helper()
	e.loadFixtures()
	if n := e.dropDeadLetterRows(); n != fixtureDeadLetters {
		t.Fatalf("deleted %d dead-letter rows, want %d", n, fixtureDeadLetters)
	}
	ctx := context.Background()
	tw, _ := e.writers()
	exec := func(pk, id, user, workflow, status string, started time.Time) {
		rk := fmt.Sprintf("execution:%d_%s", 9999999999999-started.UnixMilli(), id)
		row := map[string]any{"PartitionKey": pk, "RowKey": rk, "ExecutionId": id, "WorkflowName": workflow,
			"ExecutedBy": user, "ExecutedByName": user, "Status": status, "InputData": "{}",
			"StartedAt": started.Format("2006-01-02T15:04:05"), "CompletedAt": started.Add(5 * time.Second).Format("2006-01-02T15:04:05"),
			"DurationMs": 5000, "DurationMs@odata.type": "Edm.Int32", "ErrorMessage": "step 2 failed"}
		b, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.UpsertBatch(ctx, e.prefix+"Entities", pk, [][]byte{b}, []string{rk}); err != nil {
			t.Fatal(err)
		}
	}
	exec(org, execNoIdx, userObrien, "onboard_user", "Failed", time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC))
	exec("GLOBAL", execNoWf, userAlice, "get_user_licenses", "Failed", time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC))
	var rows [][]byte
	var keys []string
	for _, rk := range []string{
		"userexec:ghost@contoso.example:" + execGhost,
		"userexec:mallory@contoso.example:" + execObrien,
		"userexec:system:cron:" + execSched,
		"workflowexec:offboard_user:" + org + ":" + execOnb,
		"workflowexec:get_user_licenses:" + org + ":" + execFailed,
		"workflowexec:onboard_user:org-" + org + ":" + execOnb, // the same scope: not a finding
		"formexec:" + formOther + ":" + execAlice,
		"status:Running:" + execObrien,
		"status:Running:" + execOld,
		"status:Pending:" + execAudit,
		"userexec:" + userAlice + ":" + execNoWf,
		"status:Failed:" + execNoWf,
		"status:Failed:" + execNoIdx,
	} {
		b, err := json.Marshal(map[string]string{"PartitionKey": "GLOBAL", "RowKey": rk, "ExecutionId": rk[strings.LastIndexByte(rk, ':')+1:]})
		if err != nil {
			t.Fatal(err)
		}
		rows, keys = append(rows, b), append(keys, rk)
	}
	if err := tw.UpsertBatch(ctx, e.prefix+"Relationships", "GLOBAL", rows, keys); err != nil {
		t.Fatal(err)
	}
	svc, err := azure.NewTablesClient(e.acct, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// An index write that failed: the status row of the current status,
	// and alice's userexec row of a failed execution.
	for _, rk := range []string{"status:Success:" + execAudit, "userexec:" + userAlice + ":" + execFailed} {
		if _, err := svc.NewClient(e.prefix+"Relationships").DeleteEntity(ctx, "GLOBAL", rk, nil); err != nil {
			t.Fatalf("delete %s: %v", rk, err)
		}
	}

	dangling := func(rk, id string) verify.Finding {
		return verify.Finding{Kind: verify.FindingDangling, Index: &rk, ExecutionID: id, Field: verify.FieldExecutionID, IndexValue: &id}
	}
	stale := func(rk, id, field, index, exec string) verify.Finding {
		return verify.Finding{Kind: verify.FindingStale, Index: &rk, ExecutionID: id, Field: field, IndexValue: &index, ExecutionValue: &exec}
	}
	unindexed := func(id, field, exec string) verify.Finding {
		return verify.Finding{Kind: verify.FindingUnindexed, ExecutionID: id, Field: field, ExecutionValue: &exec}
	}
	return verify.AccessPatterns{Checked: true, Dangling: 5, Stale: 8, Unindexed: 3, Findings: []verify.Finding{
		// The dead-lettered execution's rows point at a row that is gone.
		dangling("status:Failed:"+execBadIn, execBadIn),
		dangling("userexec:ghost@contoso.example:"+execGhost, execGhost),
		dangling("userexec:zoë.müller@fabrikam.example:"+execBadIn, execBadIn),
		dangling("workflowexec:import_contacts:"+orgB+":"+execBadIn, execBadIn),
		dangling("workflowexec:purge_old_mailboxes:"+org+":"+execGone, execGone),
		stale("formexec:"+formOther+":"+execAlice, execAlice, verify.FieldFormID, formOther, "d4c3b2a1-9f8e-4d7c-8b6a-5f4e3d2c1b0a"),
		stale("status:Pending:"+execAudit, execAudit, verify.FieldStatus, "Pending", "Success"),
		stale("status:Running:"+execOld, execOld, verify.FieldStatus, "Running", "Success"),
		stale("status:Running:"+execObrien, execObrien, verify.FieldStatus, "Running", "Success"),
		stale("userexec:mallory@contoso.example:"+execObrien, execObrien, verify.FieldExecutedBy, "mallory@contoso.example", userObrien),
		stale("userexec:system:cron:"+execSched, execSched, verify.FieldExecutedBy, "system:cron", "system:scheduler"),
		stale("workflowexec:get_user_licenses:"+org+":"+execFailed, execFailed, verify.FieldScope, "org-"+org, "GLOBAL"),
		stale("workflowexec:offboard_user:"+org+":"+execOnb, execOnb, verify.FieldWorkflowName, "offboard_user", "onboard_user"),
		// Entities' order: partition 7c9e… before GLOBAL; in GLOBAL the
		// newer execution first (its RowKey's reverse timestamp).
		unindexed(execNoIdx, verify.FieldExecutedBy, userObrien),
		unindexed(execNoIdx, verify.FieldWorkflowName, "onboard_user"),
		unindexed(execNoWf, verify.FieldWorkflowName, "get_user_licenses"),
		unindexed(execFailed, verify.FieldExecutedBy, userAlice),
	}}
}

// runAll migrates e with the real `run`, which must succeed (no dead
// letters are left).
func (e *verifyEnv) runAll() {
	e.t.Helper()
	code, _, stderr := e.cli("run", "--database", e.db, "--table-prefix", e.prefix, "--blob-container", e.blobs,
		"--state-dir", e.stateDir, "--quiet")
	if code != ExitOK {
		e.t.Fatalf("run: exit %d: %s", code, stderr)
	}
}

// TestVerifyAccessPatterns: on seeded data verify counts and lists exactly
// the seeded dangling, stale and unindexed cases, prints them, and still
// exits 0, since every doc matches; --output json lists the first 20 of
// each kind; --tables without Relationships says the check did not run.
func TestVerifyAccessPatterns(t *testing.T) {
	t.Parallel()
	e := newVerifyEnv(t)
	want := seedAccessCases(e)
	e.runAll()
	code, stdout, r := e.verify()
	if code != ExitOK || !r.OK {
		t.Fatalf("exit %d ok %v, want 0 (findings are not failures):\n%s", code, r.OK, stdout)
	}
	if got := r.AccessPatterns; !reflect.DeepEqual(got, want) {
		t.Errorf("access patterns\n got %s\nwant %s", fakes.JSON(got), fakes.JSON(want))
	}
	if r.Warnings[transform.ReasonDanglingIndex] != want.Dangling {
		t.Errorf("dangling-index warnings %d, want %d", r.Warnings[transform.ReasonDanglingIndex], want.Dangling)
	}
	for _, line := range []string{
		"access patterns (data quality, not failures): 5 dangling and 8 stale index row(s), 3 unindexed execution(s)\n",
		"  index userexec:system:cron:" + execSched + `: executedBy: index "system:cron", execution "system:scheduler"` + "\n",
		"  index workflowexec:get_user_licenses:" + org + ":" + execFailed + `: scope: index "org-` + org + `", execution "GLOBAL"` + "\n",
		"  execution " + execNoIdx + `: no userexec row (executedBy "o'brien@contoso.example"); no workflowexec row (workflowName "onboard_user")` + "\n",
		"  index userexec:ghost@contoso.example:" + execGhost + ": execution " + execGhost + " is not in Entities\n",
	} {
		if !strings.Contains(stdout, line) {
			t.Errorf("stdout lacks %q:\n%s", line, stdout)
		}
	}
	if !strings.HasSuffix(stdout, "\nverify: OK\n") {
		t.Errorf("stdout does not end in verify: OK:\n%s", stdout)
	}

	code, stdout, stderr := e.cli("verify", "--database", e.db, "--table-prefix", e.prefix, "--blob-container", e.blobs,
		"--state-dir", e.stateDir, "--quiet", "--output", "json")
	var sum verify.Report
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || code != ExitOK {
		t.Fatalf("--output json: exit %d, %v: %s", code, err, stderr)
	}
	if !reflect.DeepEqual(sum.AccessPatterns, want) {
		t.Errorf("--output json access patterns\n got %s\nwant %s", fakes.JSON(sum.AccessPatterns), fakes.JSON(want))
	}
	// The JSON carries null where SPEC §12 says so.
	var raw struct {
		AccessPatterns struct{ Findings []map[string]any } `json:"accessPatterns"`
	}
	if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
		t.Fatal(err)
	}
	if f := raw.AccessPatterns.Findings[len(raw.AccessPatterns.Findings)-1]; f["index"] != nil || f["indexValue"] != nil || len(f) != 6 {
		t.Errorf("unindexed finding %v, want the six fields with index and indexValue null", f)
	}

	code, stdout, r = e.verify("--tables", "Config,Entities")
	if code != ExitOK || r.AccessPatterns.Checked || len(r.AccessPatterns.Findings) != 0 ||
		!strings.Contains(stdout, "access patterns: not checked (they need both Entities and Relationships; --tables left one out)\n") {
		t.Errorf("--tables Config,Entities: exit %d, %s:\n%s", code, fakes.JSON(r.AccessPatterns), stdout)
	}
}

// TestAccessPatternsThroughCosmosQueries reads the plan's three access
// patterns through the Cosmos DB SQL query path of the Go SDK, after a
// real `run`, and shows that they give the Table-based answers except
// exactly where verify reported a finding:
//
//  1. a user's executions, newest first: SELECT * FROM c WHERE
//     c.executedBy = @u ORDER BY c.startedAt DESC (cross-partition);
//  2. a workflow's failed executions in a scope: c.workflowName = @w AND
//     c.scope = @s AND c.status = 'Failed' (in partition @s);
//  3. per-scope counts by status: SELECT VALUE COUNT(1) ... WHERE c.scope
//     = @s AND c.status = @x (in partition @s), one query per status
//     found in the scope; the stand-in does not parse GROUP BY, so the
//     statuses of a scope come from a projection of that partition.
//
// The Table-based answers are computed as Bifrost computes them: prefix
// queries on Relationships (userexec:{user}:, workflowexec:{workflow}:{partition}:,
// status:{status}:) joined to the execution rows of Entities. A user's
// list shows what the index rows name, a row without an execution
// included (its userexec row carries the workflow and start time); the
// other two need the execution's status or scope, so such a row drops
// out. Executions past the 14-day retention are left out of the Table
// answers: the migration does not write them, by design, and Bifrost's
// retention deletes them.
//
// Every difference must be explained by a finding, and every finding that
// bears on a query (its execution within retention) must show up as a
// difference of that query.
func TestAccessPatternsThroughCosmosQueries(t *testing.T) {
	t.Parallel()
	e := newVerifyEnv(t)
	seedAccessCases(e)
	e.runAll()
	code, stdout, r := e.verify()
	if code != ExitOK {
		t.Fatalf("verify: exit %d:\n%s", code, stdout)
	}
	ap := r.AccessPatterns
	if ap.Dangling+ap.Stale > 2*verify.MaxAccessRows || ap.Unindexed > verify.ShownDifferences {
		t.Fatalf("the report does not list every finding: %d dangling, %d stale, %d unindexed", ap.Dangling, ap.Stale, ap.Unindexed)
	}
	byIndex := map[string][]verify.Finding{}
	byExec := map[string][]verify.Finding{}
	for _, f := range ap.Findings {
		if f.Index != nil {
			byIndex[*f.Index] = append(byIndex[*f.Index], f)
		}
		byExec[f.ExecutionID] = append(byExec[f.ExecutionID], f)
	}
	explainedByExec := func(id, field, value string, kinds ...verify.FindingKind) bool {
		for _, f := range byExec[id] {
			if f.Field == field && f.ExecutionValue != nil && *f.ExecutionValue == value && slices.Contains(kinds, f.Kind) {
				return true
			}
		}
		return false
	}
	explainedByIndex := func(rk string, fields ...string) bool {
		for _, f := range byIndex[rk] {
			if slices.Contains(fields, f.Field) {
				return true
			}
		}
		return false
	}

	src := readTableSide(t, e)
	ctx := context.Background()
	docs, err := azure.NewDocReader(e.cosmos, e.db)
	if err != nil {
		t.Fatal(err)
	}
	type docFacts struct{ id, scope, status, executedBy, workflowName string }
	var all []docFacts
	err = docs.QueryAll(ctx, "executions", "SELECT c.executionId, c.scope, c.status, c.executedBy, c.workflowName FROM c", nil, 0, func(b []byte) error {
		var d struct{ ExecutionID, Scope, Status, ExecutedBy, WorkflowName string }
		if err := json.Unmarshal(b, &d); err != nil {
			return err
		}
		all = append(all, docFacts{d.ExecutionID, d.Scope, d.Status, d.ExecutedBy, d.WorkflowName})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// 1. A user's executions, newest first.
	users := map[string]bool{}
	for _, d := range all {
		users[d.executedBy] = true
	}
	for _, ix := range src.index {
		if ix.Kind == "userexec" {
			users[ix.Key] = true
		}
	}
	diff1 := map[[2]string]string{} // (user, execution) → "table" or "cosmos": the side it is only on
	for _, u := range sortedKeys(users) {
		var table []string // in RowKey order, then sorted newest first
		for _, rk := range src.rowKeys {
			if !strings.HasPrefix(rk, "userexec:"+u+":") {
				continue
			}
			id := src.index[rk].ExecutionID
			if x, ok := src.execs[id]; ok && x.expired {
				continue
			}
			table = append(table, id)
		}
		sort.SliceStable(table, func(i, j int) bool { return src.execs[table[i]].started.After(src.execs[table[j]].started) })
		var cosmos []string
		var started []time.Time
		err := docs.QueryAll(ctx, "executions", "SELECT * FROM c WHERE c.executedBy = @u ORDER BY c.startedAt DESC",
			[]store.QueryParam{{Name: "@u", Value: u}}, 0, func(b []byte) error {
				var d struct{ ExecutionID, StartedAt string }
				if err := json.Unmarshal(b, &d); err != nil {
					return err
				}
				ts, ok := transform.ParseTimestamp(d.StartedAt)
				if !ok {
					return fmt.Errorf("doc %s: startedAt %q", d.ExecutionID, d.StartedAt)
				}
				cosmos, started = append(cosmos, d.ExecutionID), append(started, ts)
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.IsSortedFunc(started, func(a, b time.Time) int { return b.Compare(a) }) {
			t.Errorf("user %s: Cosmos DB's ORDER BY startedAt DESC gave %v", u, started)
		}
		onlyTable, onlyCosmos, common := setDiff(table, cosmos)
		if !slices.Equal(common(table), common(cosmos)) {
			t.Errorf("user %s: the executions on both sides are in another order: tables %v, Cosmos DB %v", u, common(table), common(cosmos))
		}
		for _, id := range onlyTable {
			diff1[[2]string{u, id}] = "table"
			if !explainedByIndex("userexec:"+u+":"+id, verify.FieldExecutionID, verify.FieldExecutedBy) {
				t.Errorf("user %s: execution %s is listed by the tables only, and verify reported no finding on userexec:%s:%s", u, id, u, id)
			}
		}
		for _, id := range onlyCosmos {
			diff1[[2]string{u, id}] = "cosmos"
			if !explainedByExec(id, verify.FieldExecutedBy, u, verify.FindingStale, verify.FindingUnindexed) {
				t.Errorf("user %s: execution %s is listed by Cosmos DB only, and verify reported no finding on it", u, id)
			}
		}
	}

	// 2. A workflow's failed executions in a scope.
	pairs := map[[2]string]bool{}
	for _, d := range all {
		pairs[[2]string{d.workflowName, d.scope}] = true
	}
	for _, ix := range src.index {
		if ix.Kind == "workflowexec" {
			pairs[[2]string{ix.Key, transform.Scope(ix.Partition)}] = true
		}
	}
	diff2 := map[[3]string]string{} // (workflow, scope, execution) → side
	for _, p := range sortedPairs(pairs) {
		w, s := p[0], p[1]
		var table []string
		for _, rk := range src.rowKeys {
			ix := src.index[rk]
			// The rows of the prefix queries workflowexec:{w}:{partition}:,
			// one for each way the scope's partition is written (SPEC §12
			// compares them as scopes).
			if ix.Kind != "workflowexec" || ix.Key != w || transform.Scope(ix.Partition) != s {
				continue
			}
			if x, ok := src.execs[ix.ExecutionID]; ok && !x.expired && x.status == "Failed" && !slices.Contains(table, ix.ExecutionID) {
				table = append(table, ix.ExecutionID)
			}
		}
		var cosmos []string
		c := e.container("executions")
		pager := c.NewQueryItemsPager("SELECT c.executionId FROM c WHERE c.workflowName = @w AND c.scope = @s AND c.status = 'Failed'",
			azcosmos.NewPartitionKeyString(s), &azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@w", Value: w}, {Name: "@s", Value: s}}})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range page.Items {
				var d struct{ ExecutionID string }
				if err := json.Unmarshal(b, &d); err != nil {
					t.Fatal(err)
				}
				cosmos = append(cosmos, d.ExecutionID)
			}
		}
		onlyTable, onlyCosmos, _ := setDiff(table, cosmos)
		for _, id := range onlyTable {
			diff2[[3]string{w, s, id}] = "table"
			found := false
			for _, rk := range src.rowKeys {
				ix := src.index[rk]
				if ix.Kind == "workflowexec" && ix.Key == w && transform.Scope(ix.Partition) == s && ix.ExecutionID == id &&
					explainedByIndex(rk, verify.FieldWorkflowName, verify.FieldScope) {
					found = true
				}
			}
			if !found {
				t.Errorf("workflow %s in %s: failed execution %s is listed by the tables only, and verify reported no finding on its workflowexec row", w, s, id)
			}
		}
		for _, id := range onlyCosmos {
			diff2[[3]string{w, s, id}] = "cosmos"
			if !explainedByExec(id, verify.FieldWorkflowName, w, verify.FindingStale, verify.FindingUnindexed) &&
				!explainedByExec(id, verify.FieldScope, s, verify.FindingStale) {
				t.Errorf("workflow %s in %s: failed execution %s is listed by Cosmos DB only, and verify reported no finding on it", w, s, id)
			}
		}
	}

	// 3. Per-scope counts by status.
	type cell struct{ scope, status string }
	// The rows of the prefix queries status:{status}:, one per status.
	tableTuples := map[[3]string]bool{} // (execution, scope, status)
	for _, rk := range src.rowKeys {
		ix := src.index[rk]
		if ix.Kind != "status" {
			continue
		}
		if x, ok := src.execs[ix.ExecutionID]; ok && !x.expired {
			tableTuples[[3]string{ix.ExecutionID, x.scope, ix.Key}] = true
		}
	}
	cosmosTuples := map[[3]string]bool{}
	scopes := map[string]bool{}
	for _, d := range all {
		scopes[d.scope] = true
	}
	cells := map[cell]bool{}
	for s := range scopes {
		pager := e.container("executions").NewQueryItemsPager("SELECT c.executionId, c.status FROM c WHERE c.scope = @s",
			azcosmos.NewPartitionKeyString(s), &azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@s", Value: s}}})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range page.Items {
				var d struct{ ExecutionID, Status string }
				if err := json.Unmarshal(b, &d); err != nil {
					t.Fatal(err)
				}
				cosmosTuples[[3]string{d.ExecutionID, s, d.Status}] = true
				cells[cell{s, d.Status}] = true
			}
		}
	}
	for tu := range tableTuples {
		cells[cell{tu[1], tu[2]}] = true
	}
	for c := range cells {
		var n []int
		pager := e.container("executions").NewQueryItemsPager("SELECT VALUE COUNT(1) FROM c WHERE c.scope = @s AND c.status = @x",
			azcosmos.NewPartitionKeyString(c.scope), &azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@s", Value: c.scope}, {Name: "@x", Value: c.status}}})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range page.Items {
				var v int
				if err := json.Unmarshal(b, &v); err != nil {
					t.Fatalf("COUNT: %s: %v", b, err)
				}
				n = append(n, v)
			}
		}
		cosmosCount, tableCount, onlyTable, onlyCosmos := 0, 0, 0, 0
		for tu := range cosmosTuples {
			if tu[1] == c.scope && tu[2] == c.status {
				cosmosCount++
				if !tableTuples[tu] {
					onlyCosmos++
				}
			}
		}
		for tu := range tableTuples {
			if tu[1] == c.scope && tu[2] == c.status {
				tableCount++
				if !cosmosTuples[tu] {
					onlyTable++
				}
			}
		}
		if len(n) != 1 || n[0] != cosmosCount {
			t.Errorf("%s %s: COUNT(1) gave %v, the projection %d", c.scope, c.status, n, cosmosCount)
		}
		if cosmosCount != tableCount-onlyTable+onlyCosmos {
			t.Errorf("%s %s: Cosmos DB counts %d, the tables %d, with %d only in the tables and %d only in Cosmos DB", c.scope, c.status, cosmosCount, tableCount, onlyTable, onlyCosmos)
		}
		if onlyTable+onlyCosmos > 0 {
			t.Logf("%s %s: the tables count %d, Cosmos DB %d", c.scope, c.status, tableCount, cosmosCount)
		}
	}
	diff3 := map[[3]string]string{}
	for tu := range tableTuples {
		if !cosmosTuples[tu] {
			diff3[tu] = "table"
			if !explainedByIndex("status:"+tu[2]+":"+tu[0], verify.FieldStatus) {
				t.Errorf("execution %s counts as %s in %s in the tables only, and verify reported no finding on status:%s:%s", tu[0], tu[2], tu[1], tu[2], tu[0])
			}
		}
	}
	for tu := range cosmosTuples {
		if !tableTuples[tu] {
			diff3[tu] = "cosmos"
			if !explainedByExec(tu[0], verify.FieldStatus, tu[2], verify.FindingStale) {
				t.Errorf("execution %s counts as %s in %s in Cosmos DB only, and verify reported no finding on it", tu[0], tu[2], tu[1])
			}
		}
	}

	// Conversely, every finding on an execution within retention changes
	// the answer of the queries it bears on.
	for _, f := range ap.Findings {
		x, exists := src.execs[f.ExecutionID]
		if exists && x.expired {
			continue // not in either answer
		}
		var ix transform.IndexRow
		if f.Index != nil {
			ix, _ = transform.ParseIndex(*f.Index)
		}
		switch {
		case f.Kind == verify.FindingUnindexed && f.ExecutionValue == nil:
			t.Errorf("unindexed finding %s without a value: the seeds set every property", fakes.JSON(f))
		case f.Kind == verify.FindingUnindexed && f.Field == verify.FieldExecutedBy:
			wantSide(t, diff1[[2]string{*f.ExecutionValue, f.ExecutionID}], "cosmos", f)
		case f.Kind == verify.FindingUnindexed && f.Field == verify.FieldWorkflowName:
			if x.status == "Failed" {
				wantSide(t, diff2[[3]string{*f.ExecutionValue, x.scope, f.ExecutionID}], "cosmos", f)
			}
		case ix.Kind == "userexec":
			wantSide(t, diff1[[2]string{ix.Key, f.ExecutionID}], "table", f)
		case ix.Kind == "workflowexec" && f.Kind == verify.FindingStale:
			if x.status == "Failed" {
				wantSide(t, diff2[[3]string{ix.Key, transform.Scope(ix.Partition), f.ExecutionID}], "table", f)
			}
		case ix.Kind == "status" && f.Kind == verify.FindingStale:
			wantSide(t, diff3[[3]string{f.ExecutionID, x.scope, ix.Key}], "table", f)
		}
	}
	// The seeds make each query differ both ways.
	for name, n := range map[string][2]int{"1": sides(diff1), "2": sides(diff2), "3": sides(diff3)} {
		if n[0] == 0 || n[1] == 0 {
			t.Errorf("query %s: %d difference(s) only in the tables, %d only in Cosmos DB; the seeds make both sides differ", name, n[0], n[1])
		}
	}
}

// wantSide checks that the finding f put its execution on side only.
func wantSide(t *testing.T, got, side string, f verify.Finding) {
	t.Helper()
	if got != side {
		t.Errorf("finding %s changes no answer (want the execution listed only by %s)", fakes.JSON(f), side)
	}
}

func sides[K comparable](m map[K]string) [2]int {
	var n [2]int
	for _, s := range m {
		if s == "table" {
			n[0]++
		} else {
			n[1]++
		}
	}
	return n
}

// setDiff returns what is only in a, only in b, and a function that keeps
// the elements of a list that are in both, in its order.
func setDiff(a, b []string) (onlyA, onlyB []string, common func([]string) []string) {
	for _, x := range a {
		if !slices.Contains(b, x) {
			onlyA = append(onlyA, x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			onlyB = append(onlyB, x)
		}
	}
	common = func(l []string) []string {
		var out []string
		for _, x := range l {
			if slices.Contains(a, x) && slices.Contains(b, x) {
				out = append(out, x)
			}
		}
		return out
	}
	return onlyA, onlyB, common
}

func sortedPairs(m map[[2]string]bool) [][2]string {
	out := make([][2]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0]+"\x00"+out[i][1] < out[j][0]+"\x00"+out[j][1] })
	return out
}

// tableSide is the whole of the env's Relationships index rows and its
// execution rows, read back from the tables.
type tableSide struct {
	rowKeys []string                      // index rows, in RowKey order
	index   map[string]transform.IndexRow // by RowKey
	execs   map[string]tableExec          // by each id of the row
}

type tableExec struct {
	scope, status string
	started       time.Time
	expired       bool
}

func readTableSide(t *testing.T, e *verifyEnv) tableSide {
	t.Helper()
	ctx := context.Background()
	reader := azure.NewTableReader(e.acct, azure.Options{})
	src := tableSide{index: map[string]transform.IndexRow{}, execs: map[string]tableExec{}}
	err := store.Scan(ctx, reader, e.prefix, "Relationships", store.Query{}, store.Cursor{}, func(p store.Page) error {
		for _, row := range p.Rows {
			if ix, ok := transform.ParseIndex(row.RowKey); ok {
				src.rowKeys = append(src.rowKeys, row.RowKey)
				src.index[row.RowKey] = ix
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = store.Scan(ctx, reader, e.prefix, "Entities", store.Query{}, store.Cursor{}, func(p store.Page) error {
		for _, row := range p.Rows {
			row.Table = transform.TableEntities
			if transform.Kind(row.RowKey) != "execution" {
				continue
			}
			started, ok := transform.ParseTimestamp(row.Props["StartedAt"].Str)
			if !ok {
				return fmt.Errorf("%s: StartedAt %q", row.RowKey, row.Props["StartedAt"].Str)
			}
			o := transform.Transform(row, transform.BlobFacts{}, transform.Options{Now: testNow})
			x := tableExec{scope: transform.Scope(row.PartitionKey), status: row.Props["Status"].Str, started: started,
				expired: o.Disposition == transform.DispositionExpired}
			prop, fromKey := transform.ExecutionIDs(row)
			for _, id := range []string{prop, fromKey} {
				if id != "" {
					src.execs[id] = x
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return src
}
