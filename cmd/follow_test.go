package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// executionRows returns n execution rows of the env's Entities table that
// run migrated as docs.
func (e *replayEnv) executionRows(n int) []transform.Row {
	e.t.Helper()
	var rows []transform.Row
	topts := transform.Options{Now: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}.WithDefaults()
	r := azure.NewTableReader(e.acct, azure.Options{})
	err := store.Scan(context.Background(), r, e.prefix, transform.TableEntities, store.Query{}, store.Cursor{}, func(p store.Page) error {
		for _, row := range p.Rows {
			if transform.Kind(row.RowKey) == "execution" && len(rows) < n &&
				transform.Transform(row, transform.BlobFacts{}, topts).Disposition == transform.DispositionDoc {
				rows = append(rows, row)
			}
		}
		return nil
	})
	if err != nil || len(rows) < n {
		e.t.Fatalf("%d execution rows (err %v), want %d", len(rows), err, n)
	}
	return rows
}

// TestReplayFollow: `replay --follow --interval 2s` keeps Cosmos DB in step
// while the application changes 8 execution rows and adds 8 over 8 s:
// within followInStep of the last change verify finds every doc as run
// would write it; a SIGINT ends it with exit 0 within 10 s; stdout holds one pass line per
// pass, then the summary.
func TestReplayFollow(t *testing.T) {
	e := newReplayEnv(t)
	rows := e.executionRows(8)
	since := e.since()

	out, errOut, interrupt, done := startFollowing(t, e.env, append([]string{"--output", "json"}, e.replayArgs("--since", since, "--follow", "--interval", "2s")...))

	// The application: a change or an addition every half second.
	for i := range 16 {
		row := rows[i/2]
		if i%2 == 0 {
			e.mergeRow(transform.TableEntities, row.PartitionKey, row.RowKey, map[string]any{
				"Status": "Failed", "ErrorMessage": fmt.Sprintf("changed while following (%d)", i)})
		} else {
			e.newExecution(row, fmt.Sprintf("f0110000-0000-4000-8000-%012d", i))
		}
		time.Sleep(500 * time.Millisecond)
	}
	lastChange := time.Now()

	// The runbook: writes are stopped; wait for a pass that began after
	// the last write and wrote nothing, then verify.
	window := writeStopWindow(t, out, lastChange, func() {
		code, _, r := e.verify()
		if code == ExitFatal || r == nil || r.Totals.Missing+r.Totals.Different+r.Totals.Orphans != 0 {
			t.Errorf("verify after a pass with nothing to apply: exit %d", code)
		}
	})
	t.Logf("write-stop window (replay --follow --interval 2s): %.1fs from the last write to a clean verify", window.Seconds())

	// Checked at least once: the write-stop window above may already have
	// taken longer than the bound on a loaded machine.
	inStep := false
	for {
		code, _, r := e.verify()
		if code != ExitFatal && r != nil && r.Totals.Missing+r.Totals.Different+r.Totals.Orphans == 0 {
			inStep = true
			break
		}
		if time.Since(lastChange) >= followInStep {
			break
		}
		time.Sleep(time.Second)
	}
	if !inStep {
		_, stdout, _ := e.verify()
		t.Errorf("%s after the last change, verify still finds differences:\n%s", followInStep, stdout)
	}
	t.Logf("in step %.1fs after the last change", time.Since(lastChange).Seconds())

	stopFollowing(t, interrupt, done, errOut)
	passes, summary := passLines(t, out.String())
	var written int64
	for _, p := range passes {
		written += p.Written
	}
	// How many passes fit in the 8 s depends on the machine's speed (a
	// loaded machine ran 3): at least two show that it follows.
	if len(passes) < 2 || written < 16 || summary == "" {
		t.Errorf("%d pass lines writing %d docs; want one line per pass (at least 2), the 16 changes written, and the summary last", len(passes), written)
	}
}

// followInStep bounds the time from the application's last write to a
// --follow in step with it: a bound that catches a follow that stopped
// following, not a measure (a pass every 2 s takes seconds; on a loaded
// 2-core machine, with verify, up to about 20 s). The tests log the time
// they measured.
const followInStep = 60 * time.Second

// writeStopWindow is the runbook's write-stop window: from the
// application's last write (lastChange) to the end of verify, which runs
// once a pass that began after lastChange wrote nothing (out holds
// --output json). It fails the test when no such pass comes within
// followInStep.
func writeStopWindow(t *testing.T, out *testenv.Buffer, lastChange time.Time, verify func()) time.Duration {
	t.Helper()
	for time.Since(lastChange) < followInStep {
		for _, l := range strings.Split(out.String(), "\n") {
			var p struct {
				Type    string    `json:"type"`
				Started time.Time `json:"started"`
				Written int64     `json:"written"`
			}
			if json.Unmarshal([]byte(l), &p) == nil && p.Type == "pass" && p.Started.After(lastChange) && p.Written == 0 {
				verify()
				return time.Since(lastChange)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("no pass with nothing to apply within %s of the last write", followInStep)
	return 0
}

// startFollowing runs the command of args (a --follow) in-process with
// the settings env, until interrupt (SIGINT) or the end of the test. It
// returns the command's stdout and stderr, interrupt, and the channel its
// exit status arrives on.
func startFollowing(t *testing.T, env map[string]string, args []string) (out *testenv.Buffer, errOut *bytes.Buffer, interrupt context.CancelFunc, done <-chan int) {
	t.Helper()
	f, _, errOut := newTestFactory(env)
	out = &testenv.Buffer{}
	f.Out = out
	ctx, interrupt := context.WithCancel(context.Background())
	t.Cleanup(interrupt)
	exit := make(chan int, 1)
	go func() { exit <- Execute(ctx, f, args) }()
	return out, errOut, interrupt, exit
}

// stopFollowing interrupts a --follow (SIGINT: interrupt) and checks that
// it exits 0 within 10 s.
func stopFollowing(t *testing.T, interrupt func(), done <-chan int, errOut fmt.Stringer) {
	t.Helper()
	stopped := time.Now()
	interrupt()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Errorf("exit %d, want 0; stderr:\n%s", code, errOut)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("--follow did not stop within 10 s of SIGINT")
	}
	t.Logf("stopped %.1fs after SIGINT", time.Since(stopped).Seconds())
}

// passLineOut is what the tests read of a {"type":"pass"} line.
type passLineOut struct {
	Pass    int   `json:"pass"`
	Written int64 `json:"written"`
}

// passLines checks --follow's --output json: status lines, then one pass
// line per pass in order, then the summary last; it returns the passes and
// the summary line.
func passLines(t *testing.T, stdout string) (passes []passLineOut, summary string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	for i, l := range lines {
		var p struct {
			Type string `json:"type"`
			passLineOut
		}
		if err := json.Unmarshal([]byte(l), &p); err != nil || p.Type == "" {
			t.Fatalf("stdout line %d is not a JSON object with a type: %q", i+1, l)
		}
		switch {
		case p.Type == "pass" && p.Pass == len(passes)+1:
			passes = append(passes, p.passLineOut)
		case p.Type == "summary" && i == len(lines)-1:
			summary = l
		case p.Type == "status":
		default:
			t.Errorf("stdout line %d out of place: %s", i+1, l)
		}
	}
	return passes, summary
}
