package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// Integration tests of `reverse` against the emulators (SPEC §15): the
// fixtures are migrated with `run` (replayEnv), then the "application"
// writes docs in Cosmos DB straight to the stand-in, and reverse, reaching
// Cosmos DB through the fault proxy's change-feed simulation (the stand-in
// has no change feed), must write back exactly the rows the Table-based
// application would have written — and nothing else.

// Docs and rows the tests change, besides the replay tests' ones.
const (
	orgID      = roleOrg
	runningID  = "0c537813-4b06-5b2c-8e7c-f7706176ae40" // Running in the fixtures
	runningRK  = "execution:8204781399999_" + runningID
	zoe        = "zoë.müller@fabrikam.example"
	newExecID  = "5b0e2d1c-7a4f-4c3e-9b8a-6f5e4d3c2b1a"
	newExecWF  = "get_user_licenses"
	aliceEmail = "alice.admin@contoso.example"
)

// newExecStarted is when the application started the new execution.
var newExecStarted = time.Date(2026, 11, 21, 11, 0, 0, 500_000_000, time.UTC)

// reverseEnv is a replayEnv whose commands reach Cosmos DB through a
// proxy that simulates the change feed (with two feed ranges).
type reverseEnv struct {
	*replayEnv
	proxy *faultproxy.Proxy
}

// newReverseEnv migrates the fixtures and puts the proxy in front of the
// stand-in for every later command. match, when not nil, is the proxy's
// Config.Match (tests count or time requests with it).
func newReverseEnv(t *testing.T, match func(*http.Request) bool) *reverseEnv {
	return newReverseEnvWith(t, faultproxy.Config{ChangeFeed: &faultproxy.ChangeFeed{Ranges: 2}, Match: match})
}

// newReverseEnvWith is newReverseEnv with the proxy's configuration cfg
// (its Target set to the stand-in).
func newReverseEnvWith(t *testing.T, cfg faultproxy.Config) *reverseEnv {
	e := &reverseEnv{replayEnv: newReplayEnv(t)}
	cosmos := testenv.Cosmos(t)
	cfg.Target = cosmos.Endpoint
	p, err := faultproxy.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	e.proxy = p
	env := map[string]string{}
	for k, v := range e.env {
		env[k] = v
	}
	e.env = env
	e.env["CosmosDBConnection"] = "AccountEndpoint=" + p.URL() + ";AccountKey=" + cosmos.Key + ";"
	return e
}

// reverseArgs are reverse's arguments with the env's names.
func (e *reverseEnv) reverseArgs(since string, extra ...string) []string {
	return append([]string{"reverse", "--since", since, "--database", e.db, "--table-prefix", e.prefix,
		"--blob-container", e.blobs, "--state-dir", e.stateDir, "--quiet"}, extra...)
}

// reverse runs reverse --output json and returns the exit code, the
// summary and stderr.
func (e *reverseEnv) reverse(since string, extra ...string) (int, migrate.ReverseSummary, string) {
	e.t.Helper()
	code, stdout, stderr := e.cli(e.reverseArgs(since, append([]string{"--output", "json"}, extra...)...)...)
	checkJSONRun(e.t, "reverse "+strings.Join(extra, " "), code, stdout, stderr, true) // the output convention
	return code, lastSummary[migrate.ReverseSummary](e.t, stdout, stderr), stderr
}

// reverseAgain runs reverse of the same window again and fails the test
// unless it exits with code, writes nothing (conflicts: the conflicts it
// still finds) and leaves the rows as they were in after. It returns the summary.
func (e *reverseEnv) reverseAgain(t *testing.T, since string, code int, conflicts int64, after map[string]transform.Row) migrate.ReverseSummary {
	t.Helper()
	got, s, stderr := e.reverse(since)
	if got != code || s.Totals.Writes() != 0 || s.Totals.Synced != 0 || s.Totals.Conflicts != conflicts {
		t.Errorf("reverse again: exit %d totals %+v, want %d, nothing written and %d conflict(s):\n%s", got, s.Totals, code, conflicts, stderr)
	}
	if changed := changedRows(after, e.snapshot()); len(changed) > 0 {
		t.Errorf("reverse again changed rows: %q", changed)
	}
	return s
}

// appWrite writes doc as the application does on Cosmos DB: the whole doc,
// its system properties left to the service.
func (e *reverseEnv) appWrite(container string, doc map[string]any) {
	e.t.Helper()
	for _, p := range []string{"_rid", "_self", "_etag", "_attachments", "_ts"} {
		delete(doc, p)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.upsert(container, doc["scope"].(string), b); err != nil {
		e.t.Fatalf("the application's write of %s/%v: %v", container, doc["id"], err)
	}
}

// snapshot returns every row of the three tables, by "table pk rk".
func (e *reverseEnv) snapshot() map[string]transform.Row {
	e.t.Helper()
	reader := azure.NewTableReader(e.acct, azure.Options{})
	rows := map[string]transform.Row{}
	for _, table := range []string{transform.TableConfig, transform.TableEntities, transform.TableRelationships} {
		err := store.Scan(context.Background(), reader, e.prefix, table, store.Query{}, store.Cursor{}, func(p store.Page) error {
			for _, r := range p.Rows {
				r.Table = table
				rows[table+" "+r.PartitionKey+" "+r.RowKey] = r
			}
			return nil
		})
		if err != nil {
			e.t.Fatal(err)
		}
	}
	return rows
}

// prefixQuery lists the RowKeys of Relationships' GLOBAL partition that
// start with prefix, the way the Table-based application reads its
// indexes (RowKey ge prefix and lt prefix with its last character
// incremented).
func (e *reverseEnv) prefixQuery(prefix string) []string {
	e.t.Helper()
	end := prefix[:len(prefix)-1] + string(rune(prefix[len(prefix)-1]+1))
	filter := fmt.Sprintf("PartitionKey eq 'GLOBAL' and RowKey ge '%s' and RowKey lt '%s'",
		strings.ReplaceAll(prefix, "'", "''"), strings.ReplaceAll(end, "'", "''"))
	pager := e.tables.NewClient(e.prefix + transform.TableRelationships).NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter})
	var keys []string
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			e.t.Fatalf("prefix query %q: %v", prefix, err)
		}
		for _, raw := range page.Entities {
			var ent struct{ RowKey string }
			if err := json.Unmarshal(raw, &ent); err != nil {
				e.t.Fatal(err)
			}
			keys = append(keys, ent.RowKey)
		}
	}
	return keys
}

// lastSummary returns the summary line of a command's --output json,
// which comes after progress, status and warning lines and before an
// error line when the command failed.
func lastSummary[S any](t *testing.T, stdout, stderr string) S {
	t.Helper()
	lines := parseJSONLines(t, stdout)
	end := len(lines) - 1
	if end > 0 && lines[end].Type == ui.LineError {
		end--
	}
	var s S
	if end < 0 || lines[end].Type != ui.LineSummary {
		t.Fatalf("stdout does not end with a summary (and an error line):\n%s\nstderr:\n%s", stdout, stderr)
	}
	for _, l := range lines[:end] {
		if l.Type != ui.LineProgress && l.Type != ui.LineStatus && l.Type != ui.LineWarning {
			t.Fatalf("stdout line before the summary is not progress, status or a warning: %s\nstderr:\n%s", l.Raw, stderr)
		}
	}
	if err := json.Unmarshal([]byte(lines[end].Raw), &s); err != nil {
		t.Fatalf("summary: %v\n%s", err, lines[end].Raw)
	}
	return s
}

// wantRow checks that the table holds exactly want (annotated JSON, as
// the Python SDK sends it), property by property with Edm types.
func wantRow(t *testing.T, rows map[string]transform.Row, table, want string) {
	t.Helper()
	w, err := transform.DecodeEntity(table, []byte(want))
	if err != nil {
		t.Fatalf("expected row %s: %v", want, err)
	}
	got, ok := rows[table+" "+w.PartitionKey+" "+w.RowKey]
	if !ok {
		t.Errorf("%s %s/%s: missing", table, w.PartitionKey, w.RowKey)
		return
	}
	if d := transform.DiffRows(got, w); len(d) > 0 {
		t.Errorf("%s %s/%s: properties %v differ\n got %s\nwant %s", table, w.PartitionKey, w.RowKey, d, transform.EncodeEntity(got), want)
	}
}

// changedRows returns the keys of rows added, changed (Timestamp or ETag)
// or deleted between two snapshots, sorted.
func changedRows(before, after map[string]transform.Row) []string {
	var keys []string
	for k, a := range after {
		if b, ok := before[k]; !ok || !b.Timestamp.Equal(a.Timestamp) || b.ETag != a.ETag {
			keys = append(keys, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// applicationWrites is the story of the cutover: in Cosmos DB the
// application renames a user, completes the Running execution and starts
// a new one (the plan's doc schema).
func (e *reverseEnv) applicationWrites() {
	alice := e.readDoc(transform.ContainerEntities, "GLOBAL", aliceID)
	alice["displayName"] = "Alice Renamed"
	e.appWrite(transform.ContainerEntities, alice)

	running := e.readDoc(transform.ContainerExecutions, "org-"+orgID, runningID)
	running["status"] = "Success"
	running["completedAt"] = "2026-11-21T00:10:00.2500000Z"
	running["durationMs"] = 1200250
	running["result"] = map[string]any{"mailboxes": 3, "note": "é"}
	running["resultType"] = "json"
	running["resultSize"] = 34 // the length of its JSON text, as the plan's schema says
	e.appWrite(transform.ContainerExecutions, running)

	e.appWrite(transform.ContainerExecutions, newExecution(newExecID, "Alice Renamed", newExecStarted))
}

// newExecution is an execution the application starts in Cosmos DB, in
// the plan's doc schema: Running, for alice, in orgID.
func newExecution(id, byName string, started time.Time) map[string]any {
	return map[string]any{
		"id": id, "type": "execution", "scope": "org-" + orgID,
		"executionId": id, "workflowName": newExecWF, "formId": nil,
		"executedBy": aliceEmail, "executedByName": byName,
		"status": "Running", "inputData": map[string]any{"user": "bob@contoso.example", "top": 5},
		"result": nil, "resultType": nil, "resultInBlob": false, "resultSize": nil, "resultBlobPath": nil,
		"errorMessage": nil, "durationMs": nil,
		"startedAt": started.Format("2006-01-02T15:04:05.0000000Z"), "completedAt": nil,
		"logsBlobPath": nil, "variablesBlobPath": nil, "snapshotBlobPath": nil, "ttl": 1209600,
	}
}

// executionKeys are the rows reverse writes for a Running execution of
// newExecution: its Entities row and its userexec, workflowexec and
// status index rows, as snapshot keys.
func executionKeys(id string, started time.Time) []string {
	return []string{
		fmt.Sprintf("Entities %s execution:%d_%s", orgID, 9999999999999-started.UnixMilli(), id),
		"Relationships GLOBAL status:Running:" + id,
		"Relationships GLOBAL userexec:" + aliceEmail + ":" + id,
		"Relationships GLOBAL workflowexec:" + newExecWF + ":" + orgID + ":" + id,
	}
}

// TestReverseAfterCutover is the rollback story (SPEC §15): what the
// application wrote in Cosmos DB comes back as exactly the rows the
// Table-based application would have written, its indexes included; no
// other row is touched; the Table-based access patterns find the new
// execution; a second reverse writes nothing; verify agrees.
func TestReverseAfterCutover(t *testing.T) {
	e := newReverseEnv(t, nil)
	since := e.since()
	before := e.snapshot()
	e.applicationWrites()

	code, s, stderr := e.reverse(since)
	if code != ExitOK {
		t.Fatalf("reverse: exit %d, want 0:\n%s", code, stderr)
	}
	if s.Totals.Synced != 3 || s.Totals.Conflicts != 0 || s.Totals.DeadLetters != 0 {
		t.Errorf("totals %+v, want 3 docs synced, no conflict, no dead letter", s.Totals)
	}
	after := e.snapshot()

	newRK := fmt.Sprintf("execution:%d_%s", 9999999999999-newExecStarted.UnixMilli(), newExecID)
	wantChanged := []string{
		"Entities " + orgID + " " + newRK,
		"Entities " + orgID + " " + runningRK,
		"Entities GLOBAL " + aliceRK,
		"Relationships GLOBAL status:Running:" + newExecID,
		"Relationships GLOBAL status:Running:" + runningID,
		"Relationships GLOBAL userexec:" + aliceEmail + ":" + newExecID,
		"Relationships GLOBAL userexec:" + zoe + ":" + runningID,
		"Relationships GLOBAL workflowexec:" + newExecWF + ":" + orgID + ":" + newExecID,
		"Relationships GLOBAL workflowexec:export_mailbox_inventory:" + orgID + ":" + runningID,
	}
	slices.Sort(wantChanged)
	if got := changedRows(before, after); !slices.Equal(got, wantChanged) {
		t.Errorf("rows reverse added, changed or deleted:\n got %q\nwant %q", got, wantChanged)
	}
	if _, ok := after["Relationships GLOBAL status:Running:"+runningID]; ok {
		t.Error("the completed execution's status:Running index row is still there")
	}

	// The rows, as the Python SDK would have sent them: only the renamed
	// property changes; the others keep their text and Edm type.
	wantRow(t, after, "Entities", `{"PartitionKey":"GLOBAL","RowKey":"`+aliceRK+`","Email":"alice.admin@contoso.example",`+
		`"DisplayName":"Alice Renamed","UserType":"PLATFORM","IsPlatformAdmin":true,"IsActive":true,"LastLogin":"2026-11-21T08:01:02.030405",`+
		`"CreatedAt":"2024-01-15T09:00:00","EntraUserId@odata.type":"Edm.Guid","EntraUserId":"8f14e45f-ceea-4e7a-9b1c-2a3b4c5d6e7f",`+
		`"LastEntraIdSync@odata.type":"Edm.DateTime","LastEntraIdSync":"2026-11-21T02:00:03.1234567Z"}`)
	wantRow(t, after, "Entities", `{"PartitionKey":"`+orgID+`","RowKey":"`+runningRK+`","ExecutionId":"`+runningID+`",`+
		`"WorkflowName":"export_mailbox_inventory","ExecutedBy":"`+zoe+`","ExecutedByName":"Zoë Müller","Status":"Success",`+
		`"InputData":"{\"includeArchived\": false}","Result":"{\"mailboxes\": 3, \"note\": \"\\u00e9\"}","ResultInBlob":false,`+
		`"StartedAt":"2026-11-20T23:50:00","CompletedAt":"2026-11-21T00:10:00.250000","DurationMs":1200250}`)
	wantRow(t, after, "Entities", `{"PartitionKey":"`+orgID+`","RowKey":"`+newRK+`","ExecutionId":"`+newExecID+`",`+
		`"WorkflowName":"`+newExecWF+`","ExecutedBy":"`+aliceEmail+`","ExecutedByName":"Alice Renamed","Status":"Running",`+
		`"InputData":"{\"top\": 5, \"user\": \"bob@contoso.example\"}","ResultInBlob":false,"StartedAt":"2026-11-21T11:00:00.500000"}`)
	// The index rows, with the display properties the repository copies.
	done := `"ExecutionId":"` + runningID + `","OrganizationId":"` + orgID + `","WorkflowName":"export_mailbox_inventory",` +
		`"ExecutedByName":"Zoë Müller","Status":"Success","StartedAt":"2026-11-20T23:50:00","CompletedAt":"2026-11-21T00:10:00.250000","DurationMs":1200250`
	wantRow(t, after, "Relationships", `{"PartitionKey":"GLOBAL","RowKey":"userexec:`+zoe+`:`+runningID+`",`+done+`}`)
	wantRow(t, after, "Relationships", `{"PartitionKey":"GLOBAL","RowKey":"workflowexec:export_mailbox_inventory:`+orgID+`:`+runningID+`","ExecutedBy":"`+zoe+`",`+
		strings.Replace(done, `"WorkflowName":"export_mailbox_inventory",`, "", 1)+`}`)
	started := `"ExecutionId":"` + newExecID + `","OrganizationId":"` + orgID + `","ExecutedByName":"Alice Renamed","Status":"Running","StartedAt":"2026-11-21T11:00:00.500000"`
	wantRow(t, after, "Relationships", `{"PartitionKey":"GLOBAL","RowKey":"userexec:`+aliceEmail+`:`+newExecID+`","WorkflowName":"`+newExecWF+`",`+started+`}`)
	wantRow(t, after, "Relationships", `{"PartitionKey":"GLOBAL","RowKey":"workflowexec:`+newExecWF+`:`+orgID+`:`+newExecID+`","ExecutedBy":"`+aliceEmail+`",`+started+`}`)
	wantRow(t, after, "Relationships", `{"PartitionKey":"GLOBAL","RowKey":"status:Running:`+newExecID+`","WorkflowName":"`+newExecWF+`","ExecutedBy":"`+aliceEmail+`",`+
		started+`,"UpdatedAt":"2026-11-21T12:00:00"}`)

	// The Table-based application's access patterns find the new
	// execution, and no longer list the completed one as running.
	for prefix, want := range map[string]string{
		"userexec:" + aliceEmail + ":":                  newExecID,
		"workflowexec:" + newExecWF + ":" + orgID + ":": newExecID,
		"status:Running:":                               newExecID,
	} {
		keys := e.prefixQuery(prefix)
		if !slices.ContainsFunc(keys, func(k string) bool { return strings.HasSuffix(k, ":"+want) }) {
			t.Errorf("prefix query %q: %q, want the new execution %s", prefix, keys, want)
		}
	}
	if keys := e.prefixQuery("status:Running:"); slices.ContainsFunc(keys, func(k string) bool { return strings.HasSuffix(k, runningID) }) {
		t.Errorf("prefix query status:Running: still lists the completed execution: %q", keys)
	}

	// A second reverse of the same window writes nothing.
	e.reverseAgain(t, since, ExitOK, 0, after)
	// The tables and Cosmos DB agree again (the fixtures' dead letters
	// aside).
	code, stdout, r := e.verify()
	wantOnlyDeadLetters(t, "verify after reverse", code, stdout, r)
}

// TestReverseConflictAndForce: a row changed in the tables after it was
// migrated while the application changed its doc too is a conflict: not
// written, listed with the differing properties (names, never values),
// exit 4, while the other docs are written back; --force writes it with
// If-Match, and a reverse after that writes nothing.
func TestReverseConflictAndForce(t *testing.T) {
	e := newReverseEnv(t, nil)
	since := e.since()
	e.applicationWrites()
	// The same user changed on the tables too (a rollback's stray write).
	e.mergeRow(transform.TableEntities, "GLOBAL", aliceRK, map[string]any{"DisplayName": "Alice (edited on tables)"})
	before := e.snapshot()
	aliceKey := "Entities GLOBAL " + aliceRK
	aliceDoc, _ := e.rawDoc(transform.ContainerEntities, "GLOBAL", aliceID)

	code, stdout, stderr := e.cli(e.reverseArgs(since)...)
	if code != ExitConflicts {
		t.Fatalf("reverse: exit %d, want 4:\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"conflicts: 1 left unresolved, 0 written with --force\n",
		"  entities/GLOBAL/" + aliceID + " → Entities GLOBAL/" + aliceRK + "\n" +
			"    the row changed in the tables after the doc was migrated, and the application changed the doc too; not written\n" +
			"    properties: DisplayName\n",
		"reverse: 1 conflict(s) left unresolved\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks\n%s\ngot:\n%s", want, stdout)
		}
	}
	if want := "bifrost-migrate: 1 conflict(s) left unresolved: rows that changed in the tables too were not written; see the list, then rerun with --force to write the Cosmos DB version\n"; !strings.HasSuffix(stderr, want) {
		t.Errorf("stderr ends with\n%s\nwant\n%s", stderr, want)
	}
	after := e.snapshot()
	if a, b := after[aliceKey], before[aliceKey]; a.ETag != b.ETag || a.Props["DisplayName"].Str != "Alice (edited on tables)" {
		t.Errorf("the conflicting row changed: %s", transform.EncodeEntity(a))
	}
	if doc, _ := e.rawDoc(transform.ContainerEntities, "GLOBAL", aliceID); string(doc) != string(aliceDoc) {
		t.Errorf("the conflicting doc changed:\nbefore %s\nafter  %s", aliceDoc, doc)
	}
	// The other docs were written back all the same.
	if got := after["Entities "+orgID+" "+runningRK].Props["Status"].Str; got != "Success" {
		t.Errorf("the completed execution's row has Status %q, want Success", got)
	}

	// JSON: the same conflict, and again nothing is written for it.
	code, s, _ := e.reverse(since)
	if code != ExitConflicts || s.Totals.Conflicts != 1 || len(s.Conflicts) != 1 || s.Totals.Writes() != 0 {
		t.Fatalf("reverse --output json: exit %d totals %+v conflicts %s", code, s.Totals, fakes.JSON(s.Conflicts))
	}
	if c := s.Conflicts[0]; c.ID != aliceID || c.Table != "Entities" || c.RowKey != aliceRK || c.Resolution != migrate.NotWritten ||
		!slices.Equal(c.Properties, []string{"DisplayName"}) {
		t.Errorf("conflict %s", fakes.JSON(c))
	}

	// --force writes the Cosmos DB version.
	code, s, stderr = e.reverse(since, "--force")
	if code != ExitOK || s.Totals.Forced != 1 || s.Totals.RowsWritten != 1 {
		t.Fatalf("reverse --force: exit %d totals %+v:\n%s", code, s.Totals, stderr)
	}
	forced := e.snapshot()
	if got := forced[aliceKey].Props["DisplayName"].Str; got != "Alice Renamed" {
		t.Errorf("after --force DisplayName is %q, want the Cosmos DB version", got)
	}
	if got := changedRows(after, forced); !slices.Equal(got, []string{aliceKey}) {
		t.Errorf("--force changed %q, want only the conflicting row", got)
	}
	if code, s, _ := e.reverse(since); code != ExitOK || s.Totals.Writes() != 0 {
		t.Errorf("reverse after --force: exit %d totals %+v, want nothing to write", code, s.Totals)
	}
}

// Zoë is a user of organization orgID: her doc's scope is org-orgID, her
// row's PartitionKey orgID.
const (
	zoeRK    = "user:" + zoe
	zoeID    = "user-" + zoe
	zoeScope = "org-" + orgID
)

// appRenames renames the user of doc scope/id as an application that
// reads the doc into its own model and writes the model back: without
// _migration, a field the model does not know.
func (e *reverseEnv) appRenames(scope, id, name string) {
	e.t.Helper()
	doc := e.readDoc(transform.ContainerEntities, scope, id)
	delete(doc, "_migration")
	doc["displayName"] = name
	e.appWrite(transform.ContainerEntities, doc)
}

// TestReverseAppModelWithoutMigration is the rollback after the
// application wrote its own model back (SPEC §15): after the cutover T it
// renames two users by reading each doc into its model and writing the
// model back, which drops _migration; the tables change the second user's
// row after T too. reverse --since T writes the first user's row (the
// DisplayName the application wrote, the other properties as they were)
// and records the sync on its doc, and exits 4 for the second, whose row
// and doc it leaves exactly as they were; a second reverse writes nothing.
func TestReverseAppModelWithoutMigration(t *testing.T) {
	e := newReverseEnv(t, nil)
	since := e.since()
	e.appRenames("GLOBAL", aliceID, "Alice (app model)")
	e.appRenames(zoeScope, zoeID, "Zoë (app model)")
	e.mergeRow(transform.TableEntities, orgID, zoeRK, map[string]any{"DisplayName": "Zoë (edited on tables)"})
	before := e.snapshot()
	zoeDoc, _ := e.rawDoc(transform.ContainerEntities, zoeScope, zoeID)
	aliceKey, zoeKey := "Entities GLOBAL "+aliceRK, "Entities "+orgID+" "+zoeRK

	code, s, stderr := e.reverse(since)
	if code != ExitConflicts || s.Totals.Synced != 1 || s.Totals.Conflicts != 1 || len(s.Conflicts) != 1 {
		t.Fatalf("reverse: exit %d totals %+v conflicts %s, want exit 4, alice synced and zoë a conflict:\n%s", code, s.Totals, fakes.JSON(s.Conflicts), stderr)
	}
	if c := s.Conflicts[0]; c.ID != zoeID || c.RowKey != zoeRK || c.Resolution != migrate.NotWritten || !slices.Equal(c.Properties, []string{"DisplayName"}) ||
		c.Reason != "the application wrote the doc without _migration, and the row changed in the tables after --since" {
		t.Errorf("conflict %s, want zoë's, not written, DisplayName", fakes.JSON(c))
	}
	after := e.snapshot()
	if got := changedRows(before, after); !slices.Equal(got, []string{aliceKey}) {
		t.Errorf("rows reverse changed: %q, want only alice's", got)
	}
	if d := transform.DiffRows(before[aliceKey], after[aliceKey]); !slices.Equal(d, []string{"DisplayName"}) || after[aliceKey].Props["DisplayName"].Str != "Alice (app model)" {
		t.Errorf("alice's row: properties %v changed, DisplayName %q; want only DisplayName, as the application wrote it", d, after[aliceKey].Props["DisplayName"].Str)
	}
	b, a := before[zoeKey], after[zoeKey]
	if d := transform.DiffRows(b, a); len(d) > 0 || a.ETag != b.ETag || !a.Timestamp.Equal(b.Timestamp) || a.Props["DisplayName"].Str != "Zoë (edited on tables)" {
		t.Errorf("zoë's row was touched: properties %v differ, ETag %s → %s, Timestamp %s → %s", d, b.ETag, a.ETag, b.Timestamp, a.Timestamp)
	}
	if doc, _ := e.rawDoc(transform.ContainerEntities, zoeScope, zoeID); string(doc) != string(zoeDoc) {
		t.Errorf("zoë's doc changed:\nbefore %s\nafter  %s", zoeDoc, doc)
	}

	// The sync is recorded on alice's doc: _migration names her row, its
	// new Timestamp and the doc's hash.
	raw, _ := e.rawDoc(transform.ContainerEntities, "GLOBAL", aliceID)
	doc, err := transform.DecodeDocOrdered(raw)
	if err != nil {
		t.Fatal(err)
	}
	m, ok, err := transform.DocMigration(doc)
	hash, herr := transform.Hash(doc)
	want := transform.Migration{Table: transform.TableEntities, PartitionKey: "GLOBAL", RowKey: aliceRK,
		Timestamp: transform.FormatTimestamp(after[aliceKey].Timestamp), Hash: hash}
	if err != nil || herr != nil || !ok || m != want {
		t.Errorf("alice's doc records %+v (%v, %v), want %+v:\n%s", m, err, herr, want, raw)
	}

	// Again: alice's doc is unchanged since its sync, zoë's still a
	// conflict; nothing is written.
	e.reverseAgain(t, since, ExitConflicts, 1, after)
}

// TestReverseFollowAppModel: `reverse --follow` while the application
// writes its own model back (no _migration). A user renamed twice, a pass
// between, is written back twice: the row the first pass wrote is the
// follow's own, no conflict. A user whose row another writer changed in
// the tables after --since is a conflict, though by then the passes'
// watermark (--skew 1ms) is past that change: every pass judges against
// --since. The follow ends with exit 4 for it alone, its row untouched.
func TestReverseFollowAppModel(t *testing.T) {
	e := newReverseEnv(t, nil)
	since := e.since()
	out, errOut, interrupt, done := startFollowing(t, e.env, append(e.reverseArgs(since, "--follow", "--interval", "1s", "--skew", "1ms"), "--output", "json"))
	aliceKey, zoeKey := "Entities GLOBAL "+aliceRK, "Entities "+orgID+" "+zoeRK
	// rowSays waits for the row at key to say name (a hang bound:
	// followInStep).
	rowSays := func(key, name string) {
		t.Helper()
		for start := time.Now(); time.Since(start) < followInStep; time.Sleep(200 * time.Millisecond) {
			if e.snapshot()[key].Props["DisplayName"].Str == name {
				return
			}
		}
		interrupt()
		t.Fatalf("%s does not say DisplayName %q after %s:\n%s", key, name, followInStep, out.String())
	}

	e.appRenames("GLOBAL", aliceID, "Alice v1")
	rowSays(aliceKey, "Alice v1")
	e.mergeRow(transform.TableEntities, orgID, zoeRK, map[string]any{"DisplayName": "Zoë (edited on tables)"})
	zoeBefore := e.snapshot()[zoeKey]
	time.Sleep(1100 * time.Millisecond) // _ts has whole seconds: alice's next write is stamped after zoë's row changed
	e.appRenames("GLOBAL", aliceID, "Alice v2")
	rowSays(aliceKey, "Alice v2") // the passes' watermark is now past zoë's row change
	e.appRenames(zoeScope, zoeID, "Zoë (app model)")
	writeStopWindow(t, out, time.Now(), func() {}) // a pass that read zoë's doc and wrote nothing

	interrupt()
	select {
	case code := <-done:
		if code != ExitConflicts {
			t.Errorf("exit %d, want 4; stderr:\n%s", code, errOut)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("--follow did not stop within 10 s of SIGINT")
	}
	type summaryLine struct {
		Type      string                    `json:"type"`
		Conflicts []migrate.ReverseConflict `json:"conflicts"`
	}
	var s summaryLine
	for _, l := range strings.Split(out.String(), "\n") {
		var line summaryLine
		if json.Unmarshal([]byte(l), &line) == nil && line.Type == "summary" {
			s = line
		}
	}
	if s.Type != "summary" || len(s.Conflicts) != 1 || s.Conflicts[0].ID != zoeID {
		t.Errorf("summary's conflicts %s, want zoë's alone:\n%s", fakes.JSON(s.Conflicts), out.String())
	}
	after := e.snapshot()
	if z := after[zoeKey]; z.ETag != zoeBefore.ETag || z.Props["DisplayName"].Str != "Zoë (edited on tables)" {
		t.Errorf("zoë's row was written: %s", transform.EncodeEntity(z))
	}
	if got := after[aliceKey].Props["DisplayName"].Str; got != "Alice v2" {
		t.Errorf("alice's row says %q, want Alice v2", got)
	}
}

// TestReversePrune: --prune deletes the rows whose migrated doc the
// application deleted (an execution's index rows with it), and nothing
// else: not the rows of expired executions, of dead letters, or rows the
// Table-based application wrote after --since. Without --prune, and with
// --dry-run, nothing is deleted; the dry run lists the deletes.
func TestReversePrune(t *testing.T) {
	e := newReverseEnv(t, nil)
	since := e.since()
	e.deleteDoc(transform.ContainerEntities, "org-"+roleOrg, roleID)
	e.deleteDoc(transform.ContainerExecutions, "org-"+orgID, runningID)
	// A row written in the tables after --since has no doc, and is no
	// prune's business.
	e.mergeRow(transform.TableEntities, "GLOBAL", newRK, map[string]any{"Email": "new.hire@contoso.example", "DisplayName": "Tables Hire"})
	before := e.snapshot()

	if code, s, stderr := e.reverse(since); code != ExitOK || s.Totals.Writes() != 0 {
		t.Fatalf("reverse without --prune: exit %d totals %+v:\n%s", code, s.Totals, stderr)
	}
	if got := changedRows(before, e.snapshot()); len(got) > 0 {
		t.Fatalf("reverse without --prune changed %q", got)
	}

	want := []string{
		"Entities " + orgID + " " + runningRK,
		"Entities " + roleOrg + " " + roleRK,
		"Relationships GLOBAL status:Running:" + runningID,
		"Relationships GLOBAL userexec:" + zoe + ":" + runningID,
		"Relationships GLOBAL workflowexec:export_mailbox_inventory:" + orgID + ":" + runningID,
	}
	code, s, stderr := e.reverse(since, "--prune", "--dry-run")
	if code != ExitOK || s.Totals.Pruned != 2 || s.Totals.IndexDeleted != 3 {
		t.Fatalf("reverse --prune --dry-run: exit %d totals %+v, want 2 pruned and 3 index rows:\n%s", code, s.Totals, stderr)
	}
	var planned []string
	for _, p := range s.Plan {
		if p.Action != "delete" {
			t.Errorf("planned %+v, want only deletes", p)
		}
		planned = append(planned, p.Table+" "+p.PartitionKey+" "+p.RowKey)
	}
	slices.Sort(planned)
	if !slices.Equal(planned, want) {
		t.Errorf("dry run's plan:\n got %q\nwant %q", planned, want)
	}
	if got := changedRows(before, e.snapshot()); len(got) > 0 {
		t.Fatalf("reverse --prune --dry-run changed %q", got)
	}

	code, s, stderr = e.reverse(since, "--prune")
	if code != ExitOK || s.Totals.Pruned != 2 || s.Totals.IndexDeleted != 3 {
		t.Fatalf("reverse --prune: exit %d totals %+v:\n%s", code, s.Totals, stderr)
	}
	if got := changedRows(before, e.snapshot()); !slices.Equal(got, want) {
		t.Errorf("reverse --prune deleted:\n got %q\nwant %q", got, want)
	}
	if code, s, _ := e.reverse(since, "--prune"); code != ExitOK || s.Totals.Writes() != 0 {
		t.Errorf("a second prune: exit %d totals %+v, want nothing to delete", code, s.Totals)
	}
}

// TestReverseDryRun: --dry-run reads everything and writes nothing — no
// row, no doc, no blob, no dead-letter file — and lists the writes a real
// reverse then does.
func TestReverseDryRun(t *testing.T) {
	e := newReverseEnv(t, nil)
	since := e.since()
	e.applicationWrites()
	before := e.snapshot()
	docs := map[string][]byte{}
	for _, d := range [][3]string{{"entities", "GLOBAL", aliceID}, {"executions", "org-" + orgID, runningID}, {"executions", "org-" + orgID, newExecID}} {
		docs[d[2]], _ = e.rawDoc(d[0], d[1], d[2])
	}

	code, stdout, stderr := e.cli(e.reverseArgs(since, "--dry-run")...)
	if code != ExitOK {
		t.Fatalf("reverse --dry-run: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"DRY RUN: nothing was written", "writes a real reverse would do (9 listed):",
		"  insert Entities " + orgID + "/execution:", "  delete Relationships GLOBAL/status:Running:" + runningID + "\n", "reverse: OK\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if got := changedRows(before, e.snapshot()); len(got) > 0 {
		t.Errorf("the dry run changed rows %q", got)
	}
	for id, b := range docs {
		if after, _ := e.rawDoc(transform.ContainerExecutions, "org-"+orgID, id); id != aliceID && string(after) != string(b) {
			t.Errorf("the dry run changed doc %s", id)
		}
	}
	if a, _ := e.rawDoc(transform.ContainerEntities, "GLOBAL", aliceID); string(a) != string(docs[aliceID]) {
		t.Error("the dry run changed alice's doc")
	}
	if _, err := os.Stat(filepath.Join(e.stateDir, migrate.ReverseDeadLetterFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dry run wrote %s: %v", migrate.ReverseDeadLetterFile, err)
	}

	code, s, stderr := e.reverse(since)
	if code != ExitOK || s.Totals.Writes() != 9 {
		t.Errorf("reverse after the dry run: exit %d totals %+v, want the 9 writes it listed:\n%s", code, s.Totals, stderr)
	}
}

// TestReverseKilledAndRerun: reverse is killed (SIGKILL) after it wrote
// rows for some docs but recorded the sync of only a few; reverse run
// again with the same --since ends with exactly the rows an uninterrupted
// reverse writes (each execution's row and index rows, nothing else), no
// conflict, and a third reverse writes nothing.
func TestReverseKilledAndRerun(t *testing.T) {
	var (
		mu     sync.Mutex
		writes int
		kill   func()
	)
	e := newReverseEnv(t, func(r *http.Request) bool {
		if faultproxy.IsDocWrite(r) {
			mu.Lock()
			writes++
			if writes == 5 && kill != nil {
				kill()
			}
			mu.Unlock()
		}
		return false
	})
	bin := testenv.Build(t)
	since := e.since()
	before := e.snapshot()
	const n = 40
	var want []string
	for i := range n {
		id := fmt.Sprintf("4b111000-0000-4000-8000-%012d", i)
		started := newExecStarted.Add(time.Duration(i) * time.Second)
		e.appWrite(transform.ContainerExecutions, newExecution(id, "Alice Admin", started))
		want = append(want, executionKeys(id, started)...)
	}
	slices.Sort(want)

	c := exec.Command(bin, append(e.reverseArgs(since), "--concurrency", "4")...)
	c.Env = os.Environ()
	for k, v := range e.env {
		c.Env = append(c.Env, k+"="+v)
	}
	var out strings.Builder
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	kill = func() { _ = c.Process.Kill() }
	mu.Unlock()
	err := c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("reverse was not killed (%v):\n%s", err, out.String())
	}
	mid := changedRows(before, e.snapshot())
	t.Logf("killed at the 5th sync record: %d of the %d rows written", len(mid), len(want))
	if len(mid) == 0 || len(mid) == len(want) {
		t.Errorf("killed with %d of %d rows written: the test wants a reverse killed mid-way", len(mid), len(want))
	}

	code, s, stderr := e.reverse(since)
	if code != ExitOK || s.Totals.Conflicts != 0 || s.Totals.Synced+s.Totals.Unchanged < n {
		t.Fatalf("reverse after the kill: exit %d totals %+v:\n%s", code, s.Totals, stderr)
	}
	final := e.snapshot()
	if got := changedRows(before, final); !slices.Equal(got, want) {
		t.Errorf("rows after kill and rerun:\n got %q\nwant %q", got, want)
	}
	if code, s, _ := e.reverse(since); code != ExitOK || s.Totals.Writes() != 0 {
		t.Errorf("third reverse: exit %d totals %+v, want nothing to write", code, s.Totals)
	}
	if got := changedRows(final, e.snapshot()); len(got) > 0 {
		t.Errorf("the third reverse changed %q", got)
	}
	code, stdout, r := e.verify()
	wantOnlyDeadLetters(t, "verify after kill and rerun", code, stdout, r)
}

// TestReverseFollow: `reverse --follow --interval 2s` keeps the tables in
// step while the application, on Cosmos DB, completes executions and
// starts new ones over 8 s (the cutover's other direction). The runbook's
// write-stop window — from the application's last write to a clean verify
// after a pass with nothing to write — is measured; a SIGINT ends it with
// exit 0 within 10 s; stdout holds one pass line per pass, then the
// summary.
func TestReverseFollow(t *testing.T) {
	e := newReverseEnv(t, nil)
	execs := e.executionRows(8)
	since := e.since()

	out, errOut, interrupt, done := startFollowing(t, e.env, append(e.reverseArgs(since, "--follow", "--interval", "2s"), "--output", "json"))

	// The application: a completed execution or a new one every half
	// second.
	for i := range 16 {
		if i%2 == 0 {
			row := execs[i/2]
			id := row.Props["ExecutionId"].Str
			doc := e.readDoc(transform.ContainerExecutions, transform.Scope(row.PartitionKey), id)
			doc["status"], doc["errorMessage"] = "Failed", fmt.Sprintf("failed while following (%d)", i)
			e.appWrite(transform.ContainerExecutions, doc)
		} else {
			id := fmt.Sprintf("f0110000-0000-4000-8000-%012d", i)
			e.appWrite(transform.ContainerExecutions, newExecution(id, "Alice Admin", newExecStarted.Add(time.Duration(i)*time.Second)))
		}
		time.Sleep(500 * time.Millisecond)
	}
	lastChange := time.Now()

	window := writeStopWindow(t, out, lastChange, func() {
		code, stdout, r := e.verify()
		wantOnlyDeadLetters(t, "verify after a pass with nothing to write", code, stdout, r)
	})
	t.Logf("write-stop window (reverse --follow --interval 2s): %.1fs from the last write to a clean verify", window.Seconds())

	stopFollowing(t, interrupt, done, errOut)
	passes, summary := passLines(t, out.String())
	var s struct {
		Totals migrate.ReverseCounts `json:"totals"`
	}
	// How many passes fit in the 8 s depends on the machine's speed (a
	// loaded machine ran 3): at least two show that it follows.
	if err := json.Unmarshal([]byte(summary), &s); err != nil || len(passes) < 2 || s.Totals.Synced < 16 {
		t.Errorf("%d pass lines, %d docs synced (%v); want one line per pass (at least 2) and the 16 changes written back", len(passes), s.Totals.Synced, err)
	}
}

// TestReverseWithoutChangeFeed: reverse against the Cosmos DB stand-in
// itself, which has no change feed, fails at its start-up check: exactly
// one error line on stderr that says what to do (no Go type, no decoder
// message, no status line), nothing on stdout (no summary), exit 1, and
// nothing written; with --output json, stdout holds only the error line.
func TestReverseWithoutChangeFeed(t *testing.T) {
	e := &reverseEnv{replayEnv: newReplayEnv(t)} // no proxy: CosmosDBConnection is the stand-in's
	since := e.since()
	before := e.snapshot()
	args := []string{"reverse", "--since", since, "--database", e.db, "--table-prefix", e.prefix, "--blob-container", e.blobs, "--state-dir", e.stateDir}
	want := "bifrost-migrate: cannot use Cosmos DB at " + hostPort(testenv.Cosmos(t).Endpoint) +
		": it does not serve the change feed as Azure Cosmos DB does (the local stand-in has none), and reverse and verify --since read it; use Azure Cosmos DB or its emulator; check " + cosmosSettings + "\n"

	code, stdout, stderr := e.cli(args...)
	if code != ExitFatal || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 1, no stdout and exactly:\n%s", code, stdout, stderr, want)
	}
	code, stdout, stderr = e.cli(append([]string{"--output", "json"}, args...)...)
	lines := checkJSONRun(t, "reverse --output json", code, stdout, stderr, false)
	if code != ExitFatal || stderr != want || len(lines) != 1 || "bifrost-migrate: "+lines[0].str("message")+"\n" != want {
		t.Errorf("--output json: exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if got := changedRows(before, e.snapshot()); len(got) > 0 {
		t.Errorf("rows changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(e.stateDir, migrate.ReverseDeadLetterFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was written: %v", migrate.ReverseDeadLetterFile, err)
	}
}
