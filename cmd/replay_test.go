package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/internal/recorder"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/migrate"
)

// Integration tests of `replay` against the emulators: the fixtures are
// migrated with `run` into a database of the test's own (verifyEnv: its
// own table prefix, database and blob container), then the "application"
// changes rows in the tables (aztables) and docs in Cosmos DB (azcosmos),
// and replay must bring Cosmos DB to what `verify` expects — or report
// conflicts and leave them alone.

// replayEnv is a verifyEnv whose fixtures `run` migrated (into the
// env's state directory, which replay and verify are given too).
type replayEnv struct {
	*verifyEnv
	tables *aztables.ServiceClient
}

// Rows and docs the tests change.
const (
	aliceRK  = "user:alice.admin@contoso.example"
	aliceID  = "user-alice.admin@contoso.example"
	smtpRK   = "config:smtp_host"
	smtpID   = "config-smtp-host"
	roleOrg  = "2f1a9c4e-8b3d-4e6f-a1c2-5d7e9f0b3a68"
	roleRK   = "role:c8e9f0a1-2b3c-4d5e-9f0a-1b2c3d4e5f60"
	roleID   = "role-c8e9f0a1-2b3c-4d5e-9f0a-1b2c3d4e5f60"
	newRK    = "user:new.hire@contoso.example"
	newID    = "user-new.hire@contoso.example"
	newCfgRK = "config:replay_added"
	newCfgID = "config-replay-added"
)

func newReplayEnv(t *testing.T) *replayEnv {
	e := newMigratedEnv(t)
	code, stdout, r := e.verify()
	wantOnlyDeadLetters(t, "verify after run", code, stdout, r)
	return e
}

// newMigratedEnv is a replayEnv whose fixtures `run` migrated, before
// any verify.
func newMigratedEnv(t *testing.T) *replayEnv {
	t.Parallel()
	e := &replayEnv{verifyEnv: newVerifyEnv(t)}
	var err error
	if e.tables, err = azure.NewTablesClient(e.acct, azure.Options{}); err != nil {
		t.Fatal(err)
	}
	e.loadFixtures()
	// The fixtures have dead letters by design: run exits 3.
	if code, stdout, stderr := e.cli("run", "--database", e.db, "--table-prefix", e.prefix, "--blob-container", e.blobs,
		"--state-dir", e.stateDir, "--quiet"); code != ExitPartial {
		t.Fatalf("run: exit %d, want 3:\n%s\n%s", code, stdout, stderr)
	}
	return e
}

// since returns the start of a replay window: every row loaded so far is
// older than it.
func (e *replayEnv) since() string {
	time.Sleep(20 * time.Millisecond) // Timestamps have millisecond resolution in Azurite
	s := time.Now().UTC().Format(time.RFC3339Nano)
	time.Sleep(20 * time.Millisecond)
	return s
}

// mergeRow changes (or adds) properties of a row, as the application
// does on Table Storage.
func (e *replayEnv) mergeRow(table, pk, rk string, props map[string]any) {
	e.t.Helper()
	props["PartitionKey"], props["RowKey"] = pk, rk
	b, err := json.Marshal(props)
	if err != nil {
		e.t.Fatal(err)
	}
	_, err = e.tables.NewClient(e.prefix+table).UpsertEntity(context.Background(), b, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeMerge})
	if err != nil {
		e.t.Fatalf("upsert %s %s/%s: %v", table, pk, rk, err)
	}
}

func (e *replayEnv) deleteRow(table, pk, rk string) {
	e.t.Helper()
	if _, err := e.tables.NewClient(e.prefix+table).DeleteEntity(context.Background(), pk, rk, nil); err != nil {
		e.t.Fatalf("delete %s %s/%s: %v", table, pk, rk, err)
	}
}

// rawDoc reads a doc's exact JSON (system properties included); found
// is false when it does not exist.
func (e *replayEnv) rawDoc(container, scope, id string) (doc []byte, found bool) {
	e.t.Helper()
	r, err := azure.NewDocReader(e.cosmos, e.db)
	if err != nil {
		e.t.Fatal(err)
	}
	doc, found, err = r.Read(context.Background(), container, scope, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return doc, found
}

// replay runs `replay` with the env's names and --output json, and
// returns the exit code, the summary and stderr.
func (e *replayEnv) replay(transport http.RoundTripper, args ...string) (int, migrate.ReplaySummary, string) {
	e.t.Helper()
	code, stdout, stderr := e.cliWith(transport, append(e.replayArgs("--output", "json"), args...)...)
	return code, replaySummaryOf(e.t, stdout, stderr), stderr
}

func (e *replayEnv) replayArgs(extra ...string) []string {
	return append([]string{"replay", "--database", e.db, "--table-prefix", e.prefix, "--blob-container", e.blobs,
		"--state-dir", e.stateDir, "--quiet"}, extra...)
}

// replaySummaryOf returns the summary of replay's --output json.
func replaySummaryOf(t *testing.T, stdout, stderr string) migrate.ReplaySummary {
	t.Helper()
	return lastSummary[migrate.ReplaySummary](t, stdout, stderr)
}

// wantTotals compares the counts that matter with want.
func wantTotals(t *testing.T, what string, got, want migrate.ReplayCounts) {
	t.Helper()
	if got != want {
		t.Errorf("%s: totals\n got %+v\nwant %+v", what, got, want)
	}
}

// TestReplayAfterRollback is the rollback story: rows changed, added and
// deleted in the tables after the migration are replayed; verify is
// clean afterwards (the deleted row's doc only with --prune); replaying
// the same window again writes nothing.
func TestReplayAfterRollback(t *testing.T) {
	e := newReplayEnv(t)
	since := e.since()
	e.mergeRow("Entities", "GLOBAL", aliceRK, map[string]any{"DisplayName": "Alice Admin (renamed on tables)"})
	e.mergeRow("Config", "GLOBAL", smtpRK, map[string]any{"Value": "smtp2.contoso.example", "Description": "moved during the rollback"})
	e.mergeRow("Entities", "GLOBAL", newRK, map[string]any{"Email": "new.hire@contoso.example", "DisplayName": "New Hire", "UserType": "PLATFORM", "IsActive": true})
	e.mergeRow("Config", "GLOBAL", newCfgRK, map[string]any{"Value": "42", "Type": "int"})
	e.deleteRow("Entities", roleOrg, roleRK)

	// Before replay verify sees what the rollback left behind.
	if code, _, r := e.verify(); code != ExitPartial || r.Totals.Missing != 2 || r.Totals.Different != 2 || r.Totals.Orphans != 1 {
		t.Fatalf("verify before replay: exit %d totals %+v, want 2 missing, 2 different, 1 orphan", code, r.Totals)
	}

	code, s, stderr := e.replay(nil, "--since", since)
	if code != ExitOK {
		t.Fatalf("replay: exit %d: %s", code, stderr)
	}
	wantTotals(t, "replay", s.Totals, migrate.ReplayCounts{Rows: 4, Created: 2, Replaced: 2})
	if _, found := e.rawDoc("entities", "org-"+roleOrg, roleID); !found {
		t.Errorf("replay without --prune deleted %s", roleID)
	}
	// Everything but the deleted row's doc is as verify expects.
	if code, _, r := e.verify(); code != ExitPartial || r.Totals.Missing+r.Totals.Different != 0 || r.Totals.Orphans != 1 || r.Orphans[0].ID != roleID {
		t.Fatalf("verify after replay: exit %d totals %+v orphans %+v, want only the orphan %s", code, r.Totals, r.Orphans, roleID)
	}

	// The same window again: nothing is written, not even a blob.
	rec := recorder.New(nil)
	code, s, stderr = e.replay(rec, "--since", since)
	if code != ExitOK {
		t.Fatalf("second replay: exit %d: %s", code, stderr)
	}
	wantTotals(t, "second replay", s.Totals, migrate.ReplayCounts{Rows: 4, Unchanged: 4})
	// Without --prune replay sends no query: every POST would be a create.
	if w := rec.Writes(); len(w) != 0 || rec.Count(http.MethodGet) == 0 {
		t.Errorf("second replay sent writes %v (requests by method %v), want none", w, rec.ByMethod())
	}

	// --prune removes the doc whose row is gone, and only it.
	code, s, stderr = e.replay(nil, "--since", since, "--prune")
	if code != ExitOK {
		t.Fatalf("replay --prune: exit %d: %s", code, stderr)
	}
	wantTotals(t, "replay --prune", s.Totals, migrate.ReplayCounts{Rows: 4, Unchanged: 4, Pruned: 1})
	if got := s.Tables[1].Kinds["role"].Pruned; got != 1 {
		t.Errorf("Entities role pruned %d, want 1", got)
	}
	if _, found := e.rawDoc("entities", "org-"+roleOrg, roleID); found {
		t.Errorf("replay --prune left %s", roleID)
	}
	code, stdout, r := e.verify()
	wantOnlyDeadLetters(t, "verify after replay --prune", code, stdout, r)

	// And once more with --prune: no write, no delete.
	rec = recorder.New(nil)
	code, s, _ = e.replay(rec, "--since", since, "--prune")
	if code != ExitOK || s.Totals.Writes() != 0 {
		t.Errorf("third replay: exit %d totals %+v, want no writes", code, s.Totals)
	}
	if n := rec.Count(http.MethodDelete) + rec.Count(http.MethodPut); n != 0 {
		t.Errorf("third replay sent %d PUT/DELETE requests (%v)", n, rec.ByMethod())
	}
}

// TestReplayConflictsAndForce: docs the application changed in Cosmos DB
// (one it changed, one it wrote itself, one holding a secret) whose rows
// also changed are conflicts: listed with their differing fields (secrets
// redacted), left exactly as they were, exit 4; --force overwrites them.
func TestReplayConflictsAndForce(t *testing.T) {
	e := newReplayEnv(t)
	since := e.since()
	// The application changed alice in Cosmos DB before the rollback...
	doc := e.readDoc("entities", "GLOBAL", aliceID)
	doc["displayName"] = "Alice (edited in Cosmos DB)"
	e.replaceDoc("entities", doc)
	// ...wrote a new user there itself...
	if err := e.upsert("entities", "GLOBAL", []byte(`{"id":"`+newID+`","scope":"GLOBAL","type":"user","email":"new.hire@contoso.example","displayName":"Cosmos Hire"}`)); err != nil {
		t.Fatal(err)
	}
	// ...and changed a secret reference.
	secret := e.readDoc("entities", "GLOBAL", "config-graph-client-secret")
	secret["secretRef"] = "FAKE-SECRET-edited-in-cosmos"
	e.replaceDoc("entities", secret)
	// After the rollback the same things changed on the tables.
	e.mergeRow("Entities", "GLOBAL", aliceRK, map[string]any{"DisplayName": "Alice (edited on tables)"})
	e.mergeRow("Entities", "GLOBAL", newRK, map[string]any{"Email": "new.hire@contoso.example", "DisplayName": "Tables Hire", "UserType": "PLATFORM", "IsActive": true})
	e.mergeRow("Config", "GLOBAL", "config:graph_client_secret", map[string]any{"Value": "FAKE-SECRET-edited-on-tables"})

	before := map[string][]byte{}
	for _, id := range []string{aliceID, newID, "config-graph-client-secret"} {
		before[id], _ = e.rawDoc("entities", "GLOBAL", id)
	}

	// Text output: the conflicts with their fields.
	code, stdout, stderr := e.cli(e.replayArgs("--since", since)...)
	if code != ExitConflicts {
		t.Fatalf("replay: exit %d, want 4:\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"conflicts: 3 left unresolved, 0 overwritten or deleted with --force\n",
		"  entities/GLOBAL/config-graph-client-secret ← Config GLOBAL/config:graph_client_secret\n" +
			"    the application changed the doc after it was migrated; not written\n" +
			`    secretRef: tables "***", cosmos "***"` + "\n",
		"  entities/GLOBAL/" + aliceID + " ← Entities GLOBAL/" + aliceRK + "\n" +
			"    the application changed the doc after it was migrated; not written\n" +
			`    displayName: tables "Alice (edited on tables)", cosmos "Alice (edited in Cosmos DB)"` + "\n",
		"  entities/GLOBAL/" + newID + " ← Entities GLOBAL/" + newRK + "\n" +
			"    the application wrote the doc (it has no _migration); not written\n" +
			// By meaning: a field null on one side and absent on the
			// other is no difference.
			`    displayName: tables "Tables Hire", cosmos "Cosmos Hire"` + "\n" +
			"    isActive: tables true, cosmos (absent)\n" +
			`    userType: tables "PLATFORM", cosmos (absent)` + "\n",
		"replay: 3 conflict(s) left unresolved\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks\n%s\ngot:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "bifrost-migrate: 3 conflict(s) left unresolved") {
		t.Errorf("stderr: %s", stderr)
	}
	if strings.Contains(stdout+stderr, "FAKE-SECRET") {
		t.Errorf("a secret reached the output:\n%s", stdout)
	}
	for id, b := range before {
		if after, _ := e.rawDoc("entities", "GLOBAL", id); !bytes.Equal(after, b) {
			t.Errorf("%s changed:\nbefore %s\nafter  %s", id, b, after)
		}
	}

	// JSON output carries the same.
	code, s, _ := e.replay(nil, "--since", since)
	if code != ExitConflicts || s.Totals.Conflicts != 3 || len(s.Conflicts) != 3 {
		t.Fatalf("replay --output json: exit %d totals %+v conflicts %d", code, s.Totals, len(s.Conflicts))
	}
	c := s.Conflicts[1] // in row key order: Config first, then alice, then new.hire
	if c.ID != aliceID || !c.Migrated || c.Resolution != "not written" || len(c.Fields) != 1 || c.Fields[0].Path != "displayName" ||
		string(c.Fields[0].Tables) != `"Alice (edited on tables)"` || string(c.Fields[0].Cosmos) != `"Alice (edited in Cosmos DB)"` {
		t.Errorf("conflict %s", fakes.JSON(c))
	}
	if c := s.Conflicts[2]; c.ID != newID || c.Migrated {
		t.Errorf("conflict %s, want the app-written doc", fakes.JSON(c))
	}

	// --force overwrites them, with If-Match, and verify is clean.
	code, s, stderr = e.replay(nil, "--since", since, "--force")
	if code != ExitOK {
		t.Fatalf("replay --force: exit %d: %s", code, stderr)
	}
	wantTotals(t, "replay --force", s.Totals, migrate.ReplayCounts{Rows: 3, Forced: 3})
	if len(s.Conflicts) != 3 || s.Conflicts[0].Resolution != "overwritten (--force)" {
		t.Errorf("forced conflicts %s", fakes.JSON(s.Conflicts))
	}
	code, stdout, r := e.verify()
	wantOnlyDeadLetters(t, "verify after --force", code, stdout, r)
}

// racingDocs is the DocStore of replay with a concurrent writer: the first
// time replay reads one of the docs in race, the writer changes that doc
// through the SDK before replay gets the read back, so replay's replace
// with the etag it read fails with 412.
type racingDocs struct {
	migrate.DocStore
	t     *testing.T
	e     *replayEnv
	mu    sync.Mutex
	race  map[string]func(doc map[string]any) // id → the writer's change
	raced map[string]bool
}

func (d *racingDocs) Read(ctx context.Context, container, scope, id string) ([]byte, string, bool, float64, error) {
	doc, etag, found, ru, err := d.DocStore.Read(ctx, container, scope, id)
	d.mu.Lock()
	change, ok := d.race[id]
	first := ok && !d.raced[id]
	d.raced[id] = d.raced[id] || ok
	d.mu.Unlock()
	if first && found && err == nil {
		var m map[string]any
		if err := json.Unmarshal(doc, &m); err != nil {
			d.t.Error(err)
		}
		for _, p := range []string{"_rid", "_self", "_etag", "_ts", "_attachments"} {
			delete(m, p)
		}
		change(m)
		b, _ := json.Marshal(m)
		c, _ := d.e.cosmos.NewContainer(d.e.db, container)
		if _, err := c.ReplaceItem(ctx, azcosmos.NewPartitionKeyString(scope), id, b, nil); err != nil {
			d.t.Errorf("concurrent writer: %v", err)
		}
	}
	return doc, etag, found, ru, err
}

// TestReplayTakesThe412Path: a writer changes docs between replay's read
// and its replace. One writer only rewrites the doc (a new _etag, the
// same content): replay reads again and replaces it. The other is the
// application changing the content: replay reads again and reports a
// conflict. Both 412s are counted; the end state is right.
func TestReplayTakesThe412Path(t *testing.T) {
	e := newReplayEnv(t)
	since := e.since()
	e.mergeRow("Entities", "GLOBAL", aliceRK, map[string]any{"DisplayName": "Alice (edited on tables)"})
	e.mergeRow("Config", "GLOBAL", smtpRK, map[string]any{"Description": "edited on tables"})

	docs := &racingDocs{t: t, e: e, raced: map[string]bool{}, race: map[string]func(map[string]any){
		aliceID: func(map[string]any) {}, // same content, new _etag
		smtpID:  func(m map[string]any) { m["description"] = "edited in Cosmos DB meanwhile" },
	}}
	f, out, errOut := newTestFactory(e.env)
	f.Global = GlobalOptions{Database: e.db, Output: "json", Quiet: true}
	c := NewCmdReplay(f, func(ctx context.Context, o *ReplayOptions) error {
		connect := o.Connect
		o.Connect = func(ctx context.Context) (replayServices, error) {
			s, err := connect(ctx)
			docs.DocStore = s.deps.Docs
			s.deps.Docs = docs
			return s, err
		}
		return replayRun(ctx, o)
	})
	c.SetArgs([]string{"--since", since, "--table-prefix", e.prefix, "--blob-container", e.blobs, "--state-dir", e.stateDir})
	c.SetOut(out)
	c.SetErr(errOut)
	c.SilenceUsage, c.SilenceErrors = true, true // as under the root command
	err := c.ExecuteContext(context.Background())
	if code := exitCode(err, false); code != ExitConflicts {
		t.Fatalf("replay: exit %d (%v), want 4:\n%s", code, err, out)
	}
	s := replaySummaryOf(t, out.String(), errOut.String())
	wantTotals(t, "replay", s.Totals, migrate.ReplayCounts{Rows: 2, Replaced: 1, Conflicts: 1, PreconditionFailed: 2})
	if len(s.Conflicts) != 1 || s.Conflicts[0].ID != smtpID || fakes.JSON(s.Conflicts[0].Fields) !=
		`[{"path":"description","tables":"edited on tables","cosmos":"edited in Cosmos DB meanwhile"}]` {
		t.Errorf("conflicts %s", fakes.JSON(s.Conflicts))
	}
	if d := e.readDoc("entities", "GLOBAL", smtpID); d["description"] != "edited in Cosmos DB meanwhile" {
		t.Errorf("the application's change was overwritten: %v", d["description"])
	}
	// Everything but the application's change is as verify expects.
	code, _, r := e.verify()
	if code != ExitPartial || r.Totals.Different != 1 || r.Totals.Missing+r.Totals.Orphans != 0 || r.Differences[0].Doc.ID != smtpID {
		t.Errorf("verify: exit %d totals %+v differences %s, want only %s different", code, r.Totals, fakes.JSON(r.Differences), smtpID)
	}
}

// TestReplayDryRunWritesNothing: a dry run (with --prune and --force)
// reports what would happen and sends no write at all.
func TestReplayDryRunWritesNothing(t *testing.T) {
	e := newReplayEnv(t)
	since := e.since()
	e.mergeRow("Entities", "GLOBAL", aliceRK, map[string]any{"DisplayName": "Alice (edited on tables)"})
	e.mergeRow("Entities", "GLOBAL", newRK, map[string]any{"Email": "new.hire@contoso.example"})
	e.deleteRow("Entities", roleOrg, roleRK)
	rec := recorder.New(nil)
	code, s, stderr := e.replay(rec, "--since", since, "--dry-run")
	if code != ExitOK || !s.DryRun {
		t.Fatalf("dry run: exit %d: %s", code, stderr)
	}
	wantTotals(t, "dry run", s.Totals, migrate.ReplayCounts{Rows: 2, Created: 1, Replaced: 1})
	if w := rec.Writes(); len(w) != 0 {
		t.Errorf("dry run sent writes %v", w)
	}
	// With --prune it queries (POST) but neither writes nor deletes.
	rec = recorder.New(nil)
	code, s, stderr = e.replay(rec, "--since", since, "--dry-run", "--prune")
	if code != ExitOK {
		t.Fatalf("dry run --prune: exit %d: %s", code, stderr)
	}
	wantTotals(t, "dry run --prune", s.Totals, migrate.ReplayCounts{Rows: 2, Created: 1, Replaced: 1, Pruned: 1})
	if n := rec.Count(http.MethodPut) + rec.Count(http.MethodDelete); n != 0 {
		t.Errorf("dry run --prune sent %d PUT/DELETE (%v)", n, rec.ByMethod())
	}
	if code, _, r := e.verify(); code != ExitPartial || r.Totals.Missing != 1 || r.Totals.Different != 1 || r.Totals.Orphans != 1 {
		t.Errorf("verify after dry runs: totals %+v, want the changes still unreplayed", r.Totals)
	}
}

// TestReplayUsageErrors: replay's and reverse's usage errors, found before
// anything is read or written (no account is configured), exit 2 with
// the sentence that says what to fix.
func TestReplayUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"replay"}, "bifrost-migrate: --since is required: an RFC 3339 time such as 2025-11-20T14:00:00Z\n"},
		{[]string{"replay", "--since", "yesterday"}, `bifrost-migrate: --since "yesterday": want an RFC 3339 time such as 2025-11-20T14:00:00Z` + "\n"},
		{[]string{"replay", "--since", "2025-11-20 14:00:00"}, `bifrost-migrate: --since "2025-11-20 14:00:00": want an RFC 3339 time such as 2025-11-20T14:00:00Z` + "\n"},
		{[]string{"replay", "--since", "2025-11-20T14:00:00Z", "--tables", "Users"}, `bifrost-migrate: --tables "Users": want Config, Entities or Relationships, comma-separated` + "\n"},
		{[]string{"replay", "--since", "2025-11-20T14:00:00Z", "--execution-ttl", "forever"}, `bifrost-migrate: --execution-ttl "forever": want remaining, full or none` + "\n"},
		{[]string{"reverse"}, "bifrost-migrate: --since is required: an RFC 3339 time such as 2025-11-20T14:00:00Z\n"},
		{[]string{"reverse", "--since", "yesterday"}, `bifrost-migrate: --since "yesterday": want an RFC 3339 time such as 2025-11-20T14:00:00Z` + "\n"},
		{[]string{"reverse", "--since", "2025-11-20T14:00:00Z", "--follow", "--prune"}, "bifrost-migrate: --follow cannot be combined with --dry-run or --prune (run them once, before or after following)\n"},
		{[]string{"reverse", "--since", "2025-11-20T14:00:00Z", "--follow", "--skew", "-1s"}, "bifrost-migrate: --skew \"-1s\": want a duration of 0s or more\n"},
		{[]string{"reverse", "--since", "2025-11-20T14:00:00Z", "--concurrency", "0"}, "bifrost-migrate: --concurrency \"0\": want a whole number, 1 or more\n"},
		{[]string{"reverse", "--since", "2025-11-20T14:00:00Z", "--blob-threshold", "0"}, "bifrost-migrate: --blob-threshold \"0\": want a positive number of bytes\n"},
	} {
		f, out, errOut := newTestFactory(nil)
		if code := Execute(context.Background(), f, tc.args); code != ExitUsage {
			t.Errorf("%v: exit %d, want 2 (%s)", tc.args, code, errOut)
		}
		if !strings.HasPrefix(errOut.String(), tc.want) || out.Len() != 0 {
			t.Errorf("%v: stderr %q, want prefix %q (stdout %q)", tc.args, errOut, tc.want, out)
		}
	}
}

// TestReplayClosedTablesPort: replay against a tables endpoint where
// nothing listens is exit 1 with a sentence naming the endpoint, and
// stdout claims nothing (no summary, no "OK").
func TestReplayClosedTablesPort(t *testing.T) {
	t.Parallel()
	e := newVerifyEnv(t)
	_, bw := e.writers()
	if err := bw.CreateContainer(context.Background()); err != nil {
		t.Fatal(err)
	}
	closed := "http://" + testenv.ClosedPort(t) + "/" + e.acct.Name
	conn := "DefaultEndpointsProtocol=http;AccountName=" + e.acct.Name + ";AccountKey=" + e.acct.Key +
		";BlobEndpoint=" + e.acct.BlobEndpoint + ";TableEndpoint=" + closed + ";"
	for _, output := range []string{"text", "json"} {
		f, out, errOut := newTestFactory(map[string]string{"BIFROST_TABLES_CONNECTION": conn, "CosmosDBConnection": e.env["CosmosDBConnection"]})
		code := Execute(context.Background(), f, []string{"--output", output, "replay", "--database", e.db, "--blob-container", e.blobs,
			"--state-dir", e.stateDir, "--since", "2026-11-20T00:00:00Z"})
		want := "bifrost-migrate: cannot use Table Storage at " + strings.TrimPrefix(strings.TrimSuffix(closed, "/"+e.acct.Name), "http://") +
			": connection refused; check " + tablesSettings
		if code != ExitFatal || lastLine(errOut.String()) != want {
			t.Errorf("--output %s: exit %d, stderr:\n%s\nwant exit 1 and last line\n%s", output, code, errOut, want)
		}
		if strings.Contains(out.String(), "OK") || output == "text" && out.Len() != 0 {
			t.Errorf("--output %s: stdout claims something:\n%s", output, out)
		}
		if output == "json" {
			// Only the error line, with the sentence stderr ends with.
			lines := checkJSONRun(t, "replay --output json", code, out.String(), errOut.String(), false)
			if len(lines) != 1 || "bifrost-migrate: "+lines[0].str("message") != want {
				t.Errorf("--output json: stdout:\n%s", out)
			}
		}
		if strings.Contains(errOut.String(), "OK") {
			t.Errorf("--output %s: stderr says OK:\n%s", output, errOut)
		}
	}
}

// TestReplaySummaryLastLine: the last line of replay's summary says how
// it ended; after an error it never says OK, and it suggests running
// again only when that can finish the work.
func TestReplaySummaryLastLine(t *testing.T) {
	s := migrate.ReplaySummary{Tables: []migrate.ReplayTableSummary{{Table: "Config"}}, WindowSummary: migrate.WindowSummary{Since: "2026-11-20T00:00:00Z"}}
	withConflict := s
	withConflict.Totals.Conflicts = 2
	for _, tc := range []struct {
		name string
		s    migrate.ReplaySummary
		end  ending
		want string
	}{
		{"done", s, endedDone, "replay: OK"},
		{"done with conflicts", withConflict, endedDone, "replay: 2 conflict(s) left unresolved"},
		{"failed", s, endedFailed, "replay: not complete: stopped by the error reported on stderr"},
		{"throttled", s, endedTransient, "replay: not complete: run it again with the same --since to finish"},
		{"interrupted", withConflict, endedInterrupted, "replay: not complete: run it again with the same --since to finish"},
	} {
		var b bytes.Buffer
		if err := writeReplayText(&b, tc.s, ui.RUReport{}, tc.end); err != nil {
			t.Fatal(err)
		}
		if got := lastLine(b.String()); got != tc.want {
			t.Errorf("%s: last line %q, want %q", tc.name, got, tc.want)
		}
		if tc.end != endedDone && strings.Contains(b.String(), "OK") {
			t.Errorf("%s: says OK:\n%s", tc.name, b.String())
		}
		b.Reset()
		if err := writeReplayJSON(ui.NewJSONLines(&b), tc.s, ui.RUReport{}, tc.end); err != nil {
			t.Fatal(err)
		}
		var j struct{ Complete bool }
		if err := json.Unmarshal(b.Bytes(), &j); err != nil || j.Complete != (tc.end == endedDone) {
			t.Errorf("%s: json complete %v (%v), want %v", tc.name, j.Complete, err, tc.end == endedDone)
		}
	}
}
