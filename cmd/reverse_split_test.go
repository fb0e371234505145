package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/transform"
)

// TestReverseFollowThroughASplit holds `reverse --follow` to a partition
// split (the fault proxy's, as the service does it: the old range's
// change feed answers 410 with substatus 1002, the ranges list its two
// children, each serves its half from the old range's continuation on).
// The application starts executions in Cosmos DB; the range most of them
// live in splits in the middle of a pass, between two of its pages, while
// the application's next changes wait in it; then it changes docs in both
// children. Every change, before and after the split, is written back
// once: the rows are exactly the application's, the docs synced are
// exactly its writes (the passes read each change again, as unchanged, and
// write nothing for it), no pass fails, SIGINT ends it with exit 0. Then,
// with reverse stopped, the application changes docs in both children, and
// a reverse started again from the same --since and --state-dir writes
// exactly those; one more writes nothing.
func TestReverseFollowThroughASplit(t *testing.T) {
	// One doc a page: a pass reads a range in many requests, so that the
	// split comes between two of them.
	e := newReverseEnvWith(t, faultproxy.Config{ChangeFeed: &faultproxy.ChangeFeed{Ranges: 2, PageBytes: 1}})
	bin := testenv.Build(t)
	since := e.since()
	before := e.snapshot()
	app := &splitApp{e: e, before: before, execs: map[string]*appExecution{}}
	f := startProcess(t, bin, e.env, e.reverseArgs(since, "--follow", "--interval", "1s", "--output", "json")...)

	for range 8 {
		app.start(app.newID(""))
	}
	app.waitWritten(t, f)

	// The split, armed for the second page read with a continuation of the
	// range most executions live in: in the middle of that range in a pass.
	rng := app.busiestRange(t)
	split, err := e.proxy.SplitAfter(e.db, transform.ContainerExecutions, rng, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range app.ids[:3] {
		app.complete(id)
	}
	for range 4 {
		app.start(app.newID(""))
	}
	var children [2]string
	select {
	case children = <-split:
	case <-time.After(followInStep):
		t.Fatalf("range %s did not split within %s (no pass read it)", rng, followInStep)
	}
	if e.proxy.Gone() == 0 {
		t.Fatalf("range %s split into %v, but no read was answered 410", rng, children)
	}
	app.waitWritten(t, f)

	// After it: changes in both children.
	for _, c := range children {
		for range 3 {
			app.start(app.newID(c))
		}
		app.complete(app.runningIn(t, c))
	}
	lastChange := time.Now()
	app.waitWritten(t, f)
	writeStopWindow(t, f.out, lastChange, func() {})
	stopFollowing(t, f.interrupt, f.done, f.errOut)

	passes, summary := passLines(t, f.out.String())
	var s struct {
		Totals migrate.ReverseCounts `json:"totals"`
	}
	if err := json.Unmarshal([]byte(summary), &s); err != nil {
		t.Fatalf("summary %q: %v", summary, err)
	}
	t.Logf("%d passes, %d reads answered 410; totals %+v", len(passes), e.proxy.Gone(), s.Totals)
	if s.Totals.Synced != int64(app.writes) || s.Totals.Conflicts != 0 || s.Totals.DeadLetters != 0 || s.Totals.Unchanged == 0 {
		t.Errorf("totals %+v: want %d docs synced (the application's writes, each once), no conflict or dead letter, and the changes read again unchanged",
			s.Totals, app.writes)
	}
	after := e.snapshot()
	app.wantRows(t, "after --follow", after)

	// Stopped: the application changes docs in both children; reverse
	// from the same --since writes those, and only those.
	writes := app.writes
	for _, c := range children {
		for range 2 {
			app.start(app.newID(c))
		}
		app.complete(app.runningIn(t, c))
	}
	code, sum := reverseOnce(t, bin, e, since)
	if code != ExitOK || sum.Totals.Synced != int64(app.writes-writes) || sum.Totals.Conflicts != 0 {
		t.Errorf("reverse after the split: exit %d totals %+v, want 0 and the %d changes made while it was stopped synced", code, sum.Totals, app.writes-writes)
	}
	final := e.snapshot()
	app.wantRows(t, "after reverse started again", final)
	if code, sum := reverseOnce(t, bin, e, since); code != ExitOK || sum.Totals.Writes() != 0 || sum.Totals.Synced != 0 {
		t.Errorf("one more reverse: exit %d totals %+v, want nothing written", code, sum.Totals)
	}
	if got := changedRows(final, e.snapshot()); len(got) > 0 {
		t.Errorf("one more reverse changed rows: %q", got)
	}
}

// splitApp is the application of TestReverseFollowThroughASplit: it starts
// and completes executions in Cosmos DB, and knows the rows they must
// come back as.
type splitApp struct {
	e      *reverseEnv
	before map[string]transform.Row // the tables before it wrote
	execs  map[string]*appExecution
	ids    []string // in the order started
	writes int      // docs written
	n      int      // ids made
}

// appExecution is one execution the application started.
type appExecution struct {
	started   time.Time
	completed bool
}

// newID returns an id for a new execution, in range rng of the
// executions container ("": any).
func (a *splitApp) newID(rng string) string {
	for {
		a.n++
		id := fmt.Sprintf("5d170000-0000-4000-8000-%012d", a.n)
		if rng == "" || a.rangeOf(id) == rng {
			return id
		}
	}
}

func (a *splitApp) rangeOf(id string) string {
	a.e.t.Helper()
	r, err := a.e.proxy.RangeOf(a.e.db, transform.ContainerExecutions, id)
	if err != nil {
		a.e.t.Fatal(err)
	}
	return r
}

// start starts the execution id (Running).
func (a *splitApp) start(id string) {
	started := newExecStarted.Add(time.Duration(len(a.ids)) * time.Second)
	a.e.appWrite(transform.ContainerExecutions, newExecution(id, "Alice Admin", started))
	a.execs[id] = &appExecution{started: started}
	a.ids = append(a.ids, id)
	a.writes++
}

// complete completes the execution id, as the application does: it reads
// the doc and writes it back with its status.
func (a *splitApp) complete(id string) {
	doc := a.e.readDoc(transform.ContainerExecutions, "org-"+orgID, id)
	doc["status"], doc["completedAt"], doc["durationMs"] = "Success", "2026-11-21T12:00:00.0000000Z", 1000
	a.e.appWrite(transform.ContainerExecutions, doc)
	a.execs[id].completed = true
	a.writes++
}

// runningIn returns a running execution in range rng.
func (a *splitApp) runningIn(t *testing.T, rng string) string {
	t.Helper()
	for _, id := range a.ids {
		if !a.execs[id].completed && a.rangeOf(id) == rng {
			return id
		}
	}
	t.Fatalf("no running execution in range %s", rng)
	return ""
}

// busiestRange is the range of the executions container that holds most
// of the executions.
func (a *splitApp) busiestRange(t *testing.T) string {
	t.Helper()
	count := map[string]int{}
	best := ""
	for _, id := range a.ids {
		r := a.rangeOf(id)
		if count[r]++; best == "" || count[r] > count[best] {
			best = r
		}
	}
	if count[best] < 3 {
		t.Fatalf("executions by range %v: the test wants at least 3 in one", count)
	}
	return best
}

// keys are the rows the executions must have added, as snapshot keys:
// each one's Entities row and index rows (a completed one's status index
// is gone).
func (a *splitApp) keys() []string {
	var keys []string
	for _, id := range a.ids {
		x := a.execs[id]
		for _, k := range executionKeys(id, x.started) {
			if !x.completed || k != "Relationships GLOBAL status:Running:"+id {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// inStep says what the rows lack ("" when they hold every execution's
// rows at its latest status, and no other change since a.before).
func (a *splitApp) inStep(rows map[string]transform.Row) string {
	got, want := changedRows(a.before, rows), a.keys()
	missing := slices.DeleteFunc(slices.Clone(want), func(k string) bool { return slices.Contains(got, k) })
	extra := slices.DeleteFunc(slices.Clone(got), func(k string) bool { return slices.Contains(want, k) })
	if len(missing)+len(extra) > 0 {
		return fmt.Sprintf("rows the application's changes make, missing: %q; rows added, changed or deleted that they do not make (or not any more): %q", missing, extra)
	}
	for _, id := range a.ids {
		x := a.execs[id]
		status := "Running"
		if x.completed {
			status = "Success"
		}
		if got := rows[executionKeys(id, x.started)[0]].Props["Status"].Str; got != status {
			return fmt.Sprintf("execution %s: Status %q, want %q", id, got, status)
		}
	}
	return ""
}

// wantRows checks that rows are in step with the application.
func (a *splitApp) wantRows(t *testing.T, when string, rows map[string]transform.Row) {
	t.Helper()
	if d := a.inStep(rows); d != "" {
		t.Errorf("%s: %s", when, d)
	}
}

// waitWritten waits until the tables are in step with the application
// (at most followInStep), failing the test when they are not by then or
// the process f ended.
func (a *splitApp) waitWritten(t *testing.T, f *process) {
	t.Helper()
	deadline := time.Now().Add(followInStep)
	for {
		d := a.inStep(a.e.snapshot())
		if d == "" {
			return
		}
		select {
		case <-f.exited:
			t.Fatalf("reverse --follow ended before the tables were in step (%s); stdout:\n%s\nstderr:\n%s", d, f.out, f.errOut)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not in step %s after the application's writes: %s", followInStep, d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// process is a command run from the built binary.
type process struct {
	out, errOut *testenv.Buffer
	done        chan int      // its exit code
	exited      chan struct{} // closed when it ended
	interrupt   func()        // sends it SIGINT
}

// startProcess starts bin with args and the environment env (added to
// the test's).
func startProcess(t *testing.T, bin string, env map[string]string, args ...string) *process {
	t.Helper()
	c := exec.Command(bin, args...)
	c.Env = os.Environ()
	for k, v := range env {
		c.Env = append(c.Env, k+"="+v)
	}
	p := &process{out: &testenv.Buffer{}, errOut: &testenv.Buffer{}, done: make(chan int, 1), exited: make(chan struct{})}
	c.Stdout, c.Stderr = p.out, p.errOut
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	p.interrupt = func() { _ = c.Process.Signal(os.Interrupt) }
	t.Cleanup(func() { _ = c.Process.Kill() })
	go func() {
		err := c.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
			p.done <- 0
		case errors.As(err, &ee):
			p.done <- ee.ExitCode()
		default:
			p.done <- -1
		}
		close(p.exited)
	}()
	return p
}

// reverseOnce runs `reverse --since since --output json` from the built
// binary (a process of its own: the SDK's caches start empty) and
// returns its exit code and summary.
func reverseOnce(t *testing.T, bin string, e *reverseEnv, since string) (int, migrate.ReverseSummary) {
	t.Helper()
	p := startProcess(t, bin, e.env, e.reverseArgs(since, "--output", "json")...)
	var code int
	select {
	case code = <-p.done:
	case <-time.After(followInStep):
		t.Fatalf("reverse did not end within %s", followInStep)
	}
	return code, lastSummary[migrate.ReverseSummary](t, p.out.String(), p.errOut.String())
}
