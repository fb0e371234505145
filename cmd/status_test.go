package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/verify"
)

// TestNextStep: the next step status names, rule by rule.
func TestNextStep(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 14, 0, 0, 0, time.UTC)
	at := func(min int) *time.Time { v := t0.Add(time.Duration(min) * time.Minute); return &v }
	code := func(c int) *int { return &c }
	complete := runStatus{State: phaseComplete, RunID: "r1", Started: at(0), Updated: at(10), Ended: at(10)}
	verified := func(ended int, ok, partial bool) *verify.Record {
		v := &verify.RecordEntry{Ended: at(ended).Format(time.RFC3339Nano), OK: ok, Partial: partial}
		r := &verify.Record{Version: 1, Last: v}
		if !partial {
			r.LastFull = v
		}
		return r
	}
	window := func(state string, started, ended int, exit *int, conflicts int64) *windowStatus {
		w := &windowStatus{State: state, PassRecord: migrate.PassRecord{PID: 42, Started: *at(started), Since: t0, Passes: 1,
			Last: migrate.PassFigure{Ended: *at(ended)}, ConflictsLeft: conflicts, ExitCode: exit}}
		if exit != nil {
			w.Ended = at(ended)
		}
		return w
	}
	for _, c := range []struct {
		name string
		r    statusReport
		want string
	}{
		{"the lock held by a process that has not recorded itself", statusReport{Run: complete, Lock: lockStatus{Held: true}},
			"wait: another process holds the state directory; status again shows how far it got"},
		{"the lock held", statusReport{Run: complete, Lock: lockStatus{Held: true, PID: 7, Command: "replay"}},
			"wait: bifrost-migrate replay (PID 7) holds the state directory; status again shows how far it got"},
		{"no run", statusReport{Run: runStatus{State: phaseNone}},
			"bifrost-migrate run --dry-run, then run (no migration here yet; or give the --state-dir of the one you mean)"},
		{"state.json unreadable", statusReport{StateDir: "s", Run: runStatus{State: phaseUnreadable}},
			"none until s/state.json can be read (see the error)"},
		{"run interrupted, default options", statusReport{StateDir: migrate.DefaultStateDir, Run: runStatus{State: phaseInterrupted}},
			"bifrost-migrate run: run again to resume"},
		{"run interrupted, its options and state directory", statusReport{StateDir: "/my state", Run: runStatus{State: phaseInterrupted, resume: []string{"--execution-ttl full", "--database other"}}},
			"bifrost-migrate run --state-dir '/my state' --execution-ttl full --database other: run again to resume"},
		{"complete, never verified", statusReport{Run: complete}, "bifrost-migrate verify"},
		{"verified before the run ended", statusReport{Run: complete, Verify: verified(5, true, false)}, "bifrost-migrate verify"},
		{"a partial verify since", statusReport{Run: complete, Verify: verified(20, true, true)},
			"bifrost-migrate verify: a full check (the last one was partial)"},
		{"verify found mismatches", statusReport{Run: complete, Verify: verified(20, false, false)},
			"read what verify found (its --report, docs/operations.md, 5. Verify) before cutting over"},
		{"verify OK", statusReport{Run: complete, Verify: verified(20, true, false)},
			"cut over: bifrost-migrate replay --since 2026-11-20T14:00:00Z --follow (docs/operations.md, 6. Cut over)"},
		{"a replay --follow at work", statusReport{Run: complete, Verify: verified(20, true, false), Replay: window(phaseInProgress, 30, 31, nil, 0)},
			"wait: bifrost-migrate replay --follow (PID 42) is at work; SIGINT ends it after the pass in progress"},
		{"a replay killed", statusReport{Run: complete, Replay: window(phaseInterrupted, 30, 31, nil, 0)},
			"bifrost-migrate replay --since 2026-11-20T14:00:00Z: run it again to finish (it stopped before its end)"},
		{"a reverse interrupted by SIGINT", statusReport{Run: complete, Reverse: window(phaseEnded, 30, 31, code(ExitInterrupted), 0)},
			"bifrost-migrate reverse --since 2026-11-20T14:00:00Z: run it again to finish (it stopped before its end)"},
		{"a replay with conflicts", statusReport{Run: complete, Verify: verified(40, true, false), Replay: window(phaseEnded, 30, 31, code(ExitConflicts), 2)},
			"resolve the 2 conflict(s) replay left: see docs/rollback.md (4. Reading a conflict)"},
		{"the later of replay and reverse counts", statusReport{Run: complete, Verify: verified(40, true, false),
			Replay: window(phaseEnded, 20, 21, code(ExitConflicts), 2), Reverse: window(phaseEnded, 30, 31, code(ExitOK), 0)},
			"bifrost-migrate replay --since <the time the application went back to the tables> before cutting over again: see docs/rollback.md (3. Replay)"},
		{"written since the last verify", statusReport{Run: complete, Verify: verified(20, true, false), Replay: window(phaseEnded, 30, 31, code(ExitOK), 0)},
			"bifrost-migrate verify"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.r.StateDir == "" {
				c.r.StateDir = migrate.DefaultStateDir
			}
			if got := nextStep(c.r); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

// A resumed run must repeat the options whose saved values differ from
// run's defaults (the accounts come from the settings, not from flags).
func TestStatusResumeFlags(t *testing.T) {
	f, _, _ := newTestFactory(nil)
	defaults := runFlagDefaults(f, NewRootCmd(f))
	st := &migrate.State{RunID: "r1", Fingerprint: "blob-threshold=32768;execution-ttl=full;relationships=keep;strict=true;tables=Config,Entities,Relationships;table-prefix=t1;" +
		"target=cosmos=http://127.0.0.1:1/;database=other;tables=http://127.0.0.1:2/devstoreaccount1;blobs=http://127.0.0.1:3/devstoreaccount1/execution-data"}
	r := newRunStatus(statusFacts{dir: "s", run: st}, defaults)
	if got, want := strings.Join(r.resume, " "), "--execution-ttl full --strict --database other"; got != want {
		t.Errorf("resume flags %q, want %q", got, want)
	}
}

// statusOffline runs status with args in-process, every service at a
// closed port and a transport that fails the test on any request; it
// returns the exit status, stdout and stderr.
func statusOffline(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	tables, blobs, cosmos := closedPort(t), closedPort(t), closedPort(t)
	f, out, errOut := newTestFactory(map[string]string{
		"BIFROST_TABLES_CONNECTION": storageAt(tables, blobs),
		"CosmosDBConnection":        "AccountEndpoint=http://" + cosmos + "/;AccountKey=" + azure.EmulatorCosmosKey + ";",
	})
	f.Transport = testenv.NoRequests{T: t}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	code := Execute(ctx, f, append([]string{"status"}, args...))
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("status took %v", d)
	}
	return code, out.String(), errOut.String()
}

// wantLines checks that text has each of the lines, whole.
func wantLines(t *testing.T, what, text string, lines ...string) {
	t.Helper()
	have := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		have[l] = true
	}
	for _, l := range lines {
		if !have[l] {
			t.Errorf("%s: no line\n%s\nin:\n%s", what, l, text)
		}
	}
}

// statusOfJSON runs status --output json offline and returns its one
// line, decoded; it fails the test unless stdout is exactly one JSON
// object of type summary.
func statusOfJSON(t *testing.T, dir string) map[string]any {
	t.Helper()
	code, out, errOut := statusOffline(t, "--state-dir", dir, "--output", "json")
	if code != ExitOK || strings.Count(out, "\n") != 1 {
		t.Fatalf("status --output json: exit %d, want 0 and one line:\n%s%s", code, out, errOut)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil || m["type"] != "summary" {
		t.Fatalf("status --output json is not one summary object (%v):\n%s", err, out)
	}
	return m
}

// status on the state directory of a migration, offline (every service
// at a closed port, no request sent): after a finished run; while a
// process holds the lock; with a verify recorded; after a replay pass
// that left a conflict. Each prints its facts and the next step.
func TestStatusOfAMigration(t *testing.T) {
	e := newMigratedEnv(t)
	dir := e.stateDir
	st, err := migrate.LoadState(dir)
	if err != nil || st == nil {
		t.Fatalf("state after run: %v, %v", st, err)
	}
	lock, err := migrate.ReadLock(dir)
	if err != nil {
		t.Fatal(err)
	}

	code, out, errOut := statusOffline(t, "--state-dir", dir)
	if code != ExitOK || errOut != "" {
		t.Errorf("after run: exit %d, stderr %q", code, errOut)
	}
	wantLines(t, "after run", out,
		"state directory: "+dir,
		"run "+st.RunID+": complete",
		"  started "+stamp(st.Started)+", ended "+stamp(st.Updated)+", by bifrost-migrate "+st.ToolVersion,
		"  TABLE          STATE  ROWS  DOC  DROPPED-INDEX  KEPT-IN-TABLES  EXPIRED  DEAD-LETTER",
		"  Config         done   34    30   0              0               0        4",
		"  TOTAL                 140   60   64             9               1        6",
		"  dead letters: 6 in "+filepath.Join(dir, "dead-letter.jsonl"),
		"verify: none recorded (no verify.json)",
		"replay: none recorded",
		"reverse: none recorded",
		fmt.Sprintf("lock: not held (last held by bifrost-migrate run, PID %d, since %s)", os.Getpid(), stamp(lock.Since)),
		"next: bifrost-migrate verify --state-dir "+dir,
	)
	if !strings.Contains(out, "\n  options: --blob-threshold 32768, --execution-ttl remaining, --relationships keep, no --strict, --tables Config,Entities,Relationships, ") {
		t.Errorf("after run: the options are not listed:\n%s", out)
	}
	m := statusOfJSON(t, dir)
	if run, _ := m["run"].(map[string]any); run["state"] != "complete" || run["runId"] != st.RunID || run["deadLetters"] != float64(6) {
		t.Errorf("--output json: run %v", m["run"])
	}

	t.Run("--check probes the endpoints", func(t *testing.T) {
		code, out, errOut := e.cli("status", "--state-dir", dir, "--check", "--database", e.db)
		if code != ExitOK || !strings.Contains(out, "\ncheck: every endpoint answered: tables http://") {
			t.Errorf("--check: exit %d:\n%s%s", code, out, errOut)
		}
		tables := closedPort(t)
		f, out2, errOut2 := newTestFactory(map[string]string{"BIFROST_TABLES_CONNECTION": storageAt(tables, closedPort(t)), "CosmosDBConnection": e.env["CosmosDBConnection"]})
		code = Execute(context.Background(), f, []string{"status", "--state-dir", dir, "--check", "--database", e.db})
		if code != ExitFatal || !strings.Contains(out2.String(), "\ncheck: failed (see the error)\n") ||
			!strings.Contains(errOut2.String(), "cannot use Table Storage at "+tables+": connection refused") {
			t.Errorf("--check, tables at a closed port: exit %d, want 1:\n%s%s", code, out2, errOut2)
		}
	})

	t.Run("a process holds the lock", func(t *testing.T) {
		since := time.Date(2026, 11, 20, 14, 0, 0, 0, time.UTC)
		release, err := migrate.LockStateDir(dir, "replay", since)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		_, out, _ := statusOffline(t, "--state-dir", dir)
		wantLines(t, "lock held", out,
			fmt.Sprintf("lock: held by bifrost-migrate replay (PID %d, since 2026-11-20T14:00:00Z)", os.Getpid()),
			fmt.Sprintf("next: wait: bifrost-migrate replay (PID %d) holds the state directory; status again shows how far it got", os.Getpid()))
		if m := statusOfJSON(t, dir); fmt.Sprint(m["lock"]) != fmt.Sprintf("map[command:replay held:true pid:%d since:2026-11-20T14:00:00Z]", os.Getpid()) {
			t.Errorf("--output json: lock %v", m["lock"])
		}
	})

	t.Run("a verify recorded", func(t *testing.T) {
		// A real verify writes verify.json: the fixtures' dead letters make
		// it exit 3, and status names its verdict and what to do.
		code, stdout, stderr := e.cli("verify", "--database", e.db, "--table-prefix", e.prefix, "--blob-container", e.blobs, "--state-dir", dir)
		if code != ExitPartial {
			t.Fatalf("verify: exit %d, want 3:\n%s%s", code, stdout, stderr)
		}
		defer os.Remove(filepath.Join(dir, verify.RecordFile))
		rec, err := verify.LoadRecord(dir)
		if err != nil || rec == nil || rec.Last == nil {
			t.Fatalf("verify.json after verify: %+v, %v", rec, err)
		}
		if rec.Last.Verdict != lastLine(stdout) {
			t.Errorf("the record's verdict %q is not verify's last line %q", rec.Last.Verdict, lastLine(stdout))
		}
		_, out, _ := statusOffline(t, "--state-dir", dir)
		wantLines(t, "verify recorded", out,
			"verify: last ended "+stamp(rec.Last.EndedAt())+", a full check, by bifrost-migrate "+rec.Last.ToolVersion,
			"  "+rec.Last.Verdict,
			"next: read what verify found (its --report, docs/operations.md, 5. Verify) before cutting over")
	})

	t.Run("a replay pass with a conflict", func(t *testing.T) {
		since := e.since()
		// The application changed alice in Cosmos DB, and then in the
		// tables after a rollback.
		doc := e.readDoc("entities", "GLOBAL", aliceID)
		doc["displayName"] = "Alice (edited in Cosmos DB)"
		e.replaceDoc("entities", doc)
		e.mergeRow("Entities", "GLOBAL", aliceRK, map[string]any{"DisplayName": "Alice (edited on tables)"})
		if code, _, errOut := e.cli(e.replayArgs("--since", since)...); code != ExitConflicts {
			t.Fatalf("replay: exit %d, want 4: %s", code, errOut)
		}
		rec, err := migrate.LoadPassRecord(dir, migrate.ReplayRecordFile)
		if err != nil || rec == nil || rec.ExitCode == nil || rec.Last.LagSeconds == nil {
			t.Fatalf("replay.json: %+v, %v", rec, err)
		}
		_, out, _ := statusOffline(t, "--state-dir", dir)
		wantLines(t, "after replay", out,
			"replay: ended "+stamp(*rec.Ended)+", exit 4; --since "+since+", 1 pass(es), 1 conflict(s) left",
			fmt.Sprintf("  last pass from %s, ended %s: 0 written, 0 unchanged, 1 conflict(s), 0 dead letter(s), lag %.1fs", since, stamp(rec.Last.Ended), *rec.Last.LagSeconds),
			"next: resolve the 1 conflict(s) replay left: see docs/rollback.md (4. Reading a conflict)")
		m := statusOfJSON(t, dir)
		if r, _ := m["replay"].(map[string]any); r["state"] != "ended" || r["conflictsLeft"] != float64(1) || r["exitCode"] != float64(4) {
			t.Errorf("--output json: replay %v", m["replay"])
		}
	})
}

// The text of a state directory with nothing readable in it, and of a
// lock held by a process that recorded nothing: each says so.
func TestStatusTextOfLittle(t *testing.T) {
	var b strings.Builder
	r := statusReport{StateDir: "s", Run: runStatus{State: phaseUnreadable}, Lock: lockStatus{Held: true},
		Unreadable: []string{migrate.StateFile, verify.RecordFile, migrate.ReplayRecordFile}}
	r.Next = nextStep(r)
	if err := writeStatusText(&b, r); err != nil {
		t.Fatal(err)
	}
	want := `state directory: s
run: state.json cannot be read (see the error)
verify: verify.json cannot be read (see the error)
replay: replay.json cannot be read (see the error)
reverse: none recorded
lock: held by a process that has not recorded itself
next: wait: another process holds the state directory; status again shows how far it got
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
