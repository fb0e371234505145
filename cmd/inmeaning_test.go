package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
	"github.com/bifrost/bifrost-migrate/internal/recorder"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/transform"
	"github.com/bifrost/bifrost-migrate/verify"
)

// Proof both ways (SPEC §12, judged by meaning): after a cutover the
// application writes docs in its own forms, reverse writes them back, and
// verify must then say "in sync" when both sides mean the same — and
// still find every value that differs.

// TestVerifyInSyncAfterReverse is the rollback as the application writes
// it: in Cosmos DB it completes the Running execution with a
// JavaScript toISOString() timestamp and errorType null, renames a user,
// and starts an execution with Python isoformat() timestamps, its null
// fields left out and no ttl; reverse writes them back; verify is then
// clean (the fixtures' own dead letters aside), counts the doc without
// ttl, and replay finds everything unchanged. A changed value, or an
// instant one millisecond off, is still a difference.
func TestVerifyInSyncAfterReverse(t *testing.T) {
	e := newReverseEnv(t, nil)
	since := e.since()

	running := e.readDoc(transform.ContainerExecutions, "org-"+orgID, runningID)
	running["status"] = "Success"
	running["completedAt"] = "2026-11-21T00:10:00.250Z" // toISOString()
	running["durationMs"] = 1200250
	running["errorType"] = nil
	e.appWrite(transform.ContainerExecutions, running)

	alice := e.readDoc(transform.ContainerEntities, "GLOBAL", aliceID)
	alice["displayName"] = "Alice Renamed"
	e.appWrite(transform.ContainerEntities, alice)

	started := time.Date(2026, 11, 21, 11, 0, 0, 500_000_000, time.UTC)
	created := map[string]any{
		"id": newExecID, "type": "execution", "scope": "org-" + orgID, "executionId": newExecID,
		"workflowName": newExecWF, "executedBy": aliceEmail, "executedByName": "Alice Renamed",
		"status": "Success", "inputData": map[string]any{"top": 5}, "resultInBlob": false,
		"durationMs":  2000,
		"startedAt":   "2026-11-21T11:00:00.500000",       // isoformat() of a naive UTC time
		"completedAt": "2026-11-21T11:00:02.500000+00:00", // isoformat() with its offset
	}
	e.appWrite(transform.ContainerExecutions, created)

	if code, s, stderr := e.reverse(since); code != ExitOK || s.Totals.Synced != 3 {
		t.Fatalf("reverse: exit %d totals %+v, want 0 and 3 docs synced:\n%s", code, s.Totals, stderr)
	}
	code, stdout, r := e.verify()
	wantOnlyDeadLetters(t, "verify after reverse", code, stdout, r)
	if r.DocsWithoutTTL["executions"] != 1 || r.DocsWithoutTTL["entities"] != 0 || len(r.WithoutTTL) != 1 || r.WithoutTTL[0].ID != newExecID {
		t.Errorf("docs without ttl %v %v, want the application's new execution", r.DocsWithoutTTL, r.WithoutTTL)
	}
	wantLine := "docs without ttl (entities 0, executions 1): written by the application after migration, each lives by the container's defaultTtl from its last write; judged by content, not a difference:\n" +
		"  executions/org-" + orgID + "/" + newExecID + " (row Entities " + orgID + "/" +
		fmt.Sprintf("execution:%d_%s", 9999999999999-started.UnixMilli(), newExecID) + ")\n"
	if !strings.Contains(stdout, wantLine) {
		t.Errorf("verify's text does not name the doc without ttl:\n%s", stdout)
	}

	// replay of the same window: everything is in sync, and nothing is
	// said to differ.
	rcode, rs, rstderr := e.replay(nil, "--since", since)
	if rcode != ExitOK || rs.Totals.Writes() != 0 || rs.Totals.Conflicts != 0 || len(rs.Warnings) != 0 {
		t.Errorf("replay after reverse: exit %d, totals %+v, warnings %v, want 0, no write, no warning:\n%s", rcode, rs.Totals, rs.Warnings, rstderr)
	}

	// Tamper detection keeps its strength.
	for _, tc := range []struct {
		field, value string
		want         verify.Difference
	}{
		{"status", "Failed", verify.Difference{Path: "status", Problem: verify.ProblemValue, Expected: raw(`"Success"`), Actual: raw(`"Failed"`)}},
		{"completedAt", "2026-11-21T00:10:00.251Z", verify.Difference{Path: "completedAt", Problem: verify.ProblemValue,
			Expected: raw(`"2026-11-21T00:10:00.2500000Z"`), Actual: raw(`"2026-11-21T00:10:00.251Z"`)}},
	} {
		doc := e.readDoc(transform.ContainerExecutions, "org-"+orgID, runningID)
		was := doc[tc.field]
		doc[tc.field] = tc.value
		e.replaceDoc(transform.ContainerExecutions, doc)
		code, _, r := e.verify()
		tc.want.Doc = verify.DocRef{Table: transform.TableEntities, PartitionKey: orgID, RowKey: runningRK,
			Container: transform.ContainerExecutions, Scope: "org-" + orgID, ID: runningID}
		wantDifferences(t, code, r, tc.want)
		doc[tc.field] = was
		e.replaceDoc(transform.ContainerExecutions, doc)
	}
}

// TestVerifyReplayReverseUseTheMigrationsOptions: after `run
// --execution-ttl full`, plain verify, replay and reverse take full from
// the state directory and say so; an option given with another value is
// a warning naming both for verify, and refused by replay and reverse.
func TestVerifyReplayReverseUseTheMigrationsOptions(t *testing.T) {
	e := newVerifyEnv(t)
	e.loadFixtures()
	common := []string{"--database", e.db, "--table-prefix", e.prefix, "--blob-container", e.blobs, "--state-dir", e.stateDir}
	if code, stdout, stderr := e.cli(append([]string{"run", "--execution-ttl", "full", "--quiet"}, common...)...); code != ExitPartial {
		t.Fatalf("run: exit %d, want 3:\n%s\n%s", code, stdout, stderr)
	}
	st, err := migrate.LoadState(e.stateDir)
	if err != nil || st == nil {
		t.Fatalf("state: %v %v", st, err)
	}
	// (--table-prefix is given, and the same: not taken)
	taken := fmt.Sprintf("the migration's options (run %s in %s): --execution-ttl full, --blob-threshold 32768, --relationships keep, no --strict",
		st.RunID, e.stateDir)

	report := filepath.Join(t.TempDir(), "v.json")
	code, stdout, stderr := e.cli(append([]string{"verify", "--report", report}, common...)...)
	if !slices.Contains(strings.Split(stderr, "\n"), "verify: "+taken) {
		t.Errorf("verify does not say where its options come from; stderr:\n%s", stderr)
	}
	var r verify.Report
	if b, err := os.ReadFile(report); err != nil || json.Unmarshal(b, &r) != nil {
		t.Fatalf("report: %v", err)
	}
	// Under full, the execution that remaining calls expired is a doc.
	wantOnlyDeadLetters(t, "verify with the migration's options", code, stdout, &r)
	if r.Settings.ExecutionTTL != "full" || r.Totals.Expired != 0 || r.Totals.ExpiredPresent != 0 {
		t.Errorf("settings %+v totals %+v, want execution ttl full and nothing expired", r.Settings, r.Totals)
	}

	// An option given with another value: verify warns, naming both.
	_, _, stderr = e.cli(append([]string{"verify", "--execution-ttl", "remaining", "--sample", "0.01"}, common...)...)
	want := fmt.Sprintf("verify: --execution-ttl remaining where the migration used --execution-ttl full (run %s in %s): this verdict is computed with the options given, not the migration's",
		st.RunID, e.stateDir)
	if !slices.Contains(strings.Split(stderr, "\n"), want) {
		t.Errorf("stderr lacks\n%s\ngot:\n%s", want, stderr)
	}

	// replay takes them too, and refuses another value before any
	// request.
	// (exit 3: the fixtures' dead letters are in the window)
	code, stdout, stderr = e.cli(append([]string{"replay", "--since", "2026-11-20T00:00:00Z", "--dry-run"}, common...)...)
	if code != ExitPartial || !slices.Contains(strings.Split(stderr, "\n"), "replay: "+taken) {
		t.Errorf("replay: exit %d, stderr:\n%s\n%s", code, stderr, stdout)
	}
	for _, command := range []string{"replay", "reverse"} {
		rec := recorder.New(nil)
		code, stdout, stderr = e.cliWith(rec, append([]string{command, "--since", "2026-11-20T00:00:00Z", "--execution-ttl", "none", "--blob-threshold", "1024"}, common...)...)
		want := fmt.Sprintf("bifrost-migrate: --execution-ttl none where the migration used --execution-ttl full and --blob-threshold 1024 where the migration used --blob-threshold 32768 (run %s in %s): %s would write in another form than the migration did; leave those flags out to use the migration's, or give the --state-dir of the migration you mean\n"+
			"Run 'bifrost-migrate %s --help' for usage.\n", st.RunID, e.stateDir, command, command)
		if code != ExitUsage || stdout != "" || stderr != want || len(rec.Requests()) != 0 {
			t.Errorf("%s with other options: exit %d, %d request(s), stdout %q, stderr:\n%s\nwant exit 2, no request and:\n%s", command, code, len(rec.Requests()), stdout, stderr, want)
		}
	}

	// reverse takes them (through the change-feed simulation).
	cosmos := testenv.Cosmos(t)
	p, err := faultproxy.Start(faultproxy.Config{Target: cosmos.Endpoint, ChangeFeed: &faultproxy.ChangeFeed{Ranges: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	e.env = withEnv(e.env, "CosmosDBConnection", "AccountEndpoint="+p.URL()+";AccountKey="+cosmos.Key+";")
	code, stdout, stderr = e.cli(append([]string{"reverse", "--since", time.Now().UTC().Format(time.RFC3339)}, common...)...)
	if code != ExitOK || !slices.Contains(strings.Split(stderr, "\n"), "reverse: "+taken) {
		t.Errorf("reverse: exit %d, stderr:\n%s\n%s", code, stderr, stdout)
	}
}

// raw is a JSON value of a Difference.
func raw(s string) json.RawMessage { return json.RawMessage(s) }

// withEnv returns env with key set to value, env itself unchanged.
func withEnv(env map[string]string, key, value string) map[string]string {
	out := map[string]string{key: value}
	for k, v := range env {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// TestVerifyNoRunSaysSo: verify with no run in the state directory says so
// in one line, still verifies, and points at no file that does not
// exist.
func TestVerifyNoRunSaysSo(t *testing.T) {
	e := migratedFixtures(t)
	empty := filepath.Join(t.TempDir(), "no-run")
	code, stdout, stderr := e.cli("verify", "--database", e.db, "--table-prefix", e.prefix, "--blob-container", e.blobs, "--state-dir", empty)
	want := "verify: no migration in " + empty + " (no state.json): verify uses --execution-ttl remaining, --blob-threshold 32768, --relationships keep, no --strict and --table-prefix " +
		e.prefix + "; give the run's --state-dir to use its options"
	if code != ExitPartial || !slices.Contains(strings.Split(stderr, "\n"), want) {
		t.Errorf("exit %d, stderr lacks\n%s\ngot:\n%s", code, want, stderr)
	}
	for _, out := range []string{stdout, stderr} {
		if strings.Contains(out, filepath.Join(empty, migrate.DeadLetterFile)) {
			t.Errorf("output points at %s, which does not exist:\n%s", filepath.Join(empty, migrate.DeadLetterFile), out)
		}
	}
	if !strings.Contains(stdout, "verify: 6 row(s) not migrated; 0 missing, 0 different, 0 orphan doc(s)") {
		t.Errorf("verify did not verify what is there:\n%s", stdout)
	}
}

// report0 is a file in dir, where a folder is wanted.
func report0(dir string) string { return filepath.Join(dir, "a-file") }

// TestVerifyOutputPathsCheckedFirst: a --report, --log-file or (replay,
// reverse) --state-dir that cannot be written fails at once, naming the
// path, before any request; a report that still fails at the end leaves
// the verdict printed, and the exit says the report was not written.
func TestVerifyOutputPathsCheckedFirst(t *testing.T) {
	e := migratedFixtures(t)
	dir := t.TempDir()
	if err := os.WriteFile(report0(dir), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	common := []string{"--database", e.db, "--table-prefix", e.prefix, "--blob-container", e.blobs}
	state := []string{"--state-dir", e.stateDir}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"verify", "--state-dir", e.stateDir, "--report", filepath.Join(dir, "missing", "v.json")},
			"bifrost-migrate: --report " + filepath.Join(dir, "missing", "v.json") + ": cannot write there: no such file or directory\n"},
		{[]string{"verify", "--state-dir", e.stateDir, "--report", dir}, "bifrost-migrate: --report " + dir + ": is a folder; give a file name\n"},
		{[]string{"--log-file", filepath.Join(dir, "missing", "v.log"), "verify", "--state-dir", e.stateDir},
			"bifrost-migrate: --log-file " + filepath.Join(dir, "missing", "v.log") + ": no such file or directory\n"},
		// replay and reverse write their lock and dead letters there.
		{[]string{"replay", "--since", "2026-11-20T00:00:00Z", "--state-dir", filepath.Join(report0(dir), "state")},
			"bifrost-migrate: --state-dir " + filepath.Join(report0(dir), "state") + ": cannot create it: " + report0(dir) + " is not a directory\n"},
		{[]string{"reverse", "--since", "2026-11-20T00:00:00Z", "--state-dir", filepath.Join(report0(dir), "state")},
			"bifrost-migrate: --state-dir " + filepath.Join(report0(dir), "state") + ": cannot create it: " + report0(dir) + " is not a directory\n"},
	} {
		rec := recorder.New(nil)
		start := time.Now()
		code, stdout, stderr := e.cliWith(rec, append(tc.args, common...)...)
		sub := tc.args[0]
		if sub == "--log-file" {
			sub = tc.args[2]
		}
		want := tc.want + "Run 'bifrost-migrate " + sub + " --help' for usage.\n"
		if code != ExitUsage || stdout != "" || stderr != want || len(rec.Requests()) != 0 {
			t.Errorf("%q: exit %d, %d request(s), stdout %q, stderr:\n%s\nwant exit 2, no request and:\n%s", tc.args, code, len(rec.Requests()), stdout, stderr, want)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("%q took %s to fail", tc.args, d)
		}
	}

	// The folder is writable, but the report's temporary file cannot be
	// created there: found out only at the end.
	report := filepath.Join(dir, "late.json")
	if err := os.Mkdir(report+".tmp", 0o755); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := e.cli(append(append([]string{"verify", "--report", report, "--quiet"}, common...), state...)...)
	if !strings.Contains(stdout, "verify: 6 row(s) not migrated; 0 missing, 0 different, 0 orphan doc(s)\n") {
		t.Errorf("the verdict is not printed:\n%s", stdout)
	}
	want := "bifrost-migrate: verify found 6 row(s) not migrated (dead letters; `bifrost-migrate run --dry-run` lists them), 0 missing, 0 different and 0 orphan doc(s); " +
		"but the report was not written: --report " + report + ": is a directory\n"
	if code != ExitFatal || stderr != want {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and:\n%s", code, stderr, want)
	}
}
