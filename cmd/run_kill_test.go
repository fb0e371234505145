package cmd_test

import (
	"bytes"
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
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/cmd"
	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/transform"
)

// killTrigger decides when to signal the process a resProc runs. Exactly
// one of its fields is set.
type killTrigger struct {
	// request: on the n-th request of any kind through the proxy (1: the
	// first, before anything is read or written).
	request int
	// write: on the n-th doc write through the proxy, before it is
	// forwarded (so n-1 doc writes were sent).
	write int
	// state: when state.json first satisfies it.
	state func(*migrate.State) bool
	// writeDelay, when set, holds every doc write that long in the proxy
	// before forwarding it, so that writes are still in flight whenever a
	// checkpoint is saved; one killed meanwhile is never forwarded.
	writeDelay time.Duration
}

func (k killTrigger) String() string {
	switch {
	case k.request > 0:
		return fmt.Sprintf("request %d", k.request)
	case k.write > 0:
		return fmt.Sprintf("doc write %d", k.write)
	default:
		return "state"
	}
}

// resProc runs the built binary through a counting proxy in front of the
// Cosmos DB stand-in, so that a test can signal it at an exact request.
type resProc struct {
	t     *testing.T
	src   *resSource
	bin   string
	proxy *faultproxy.Proxy

	mu       sync.Mutex
	proc     *os.Process
	trigger  killTrigger
	sig      os.Signal
	requests int
	writes   int
	fired    atomic.Bool
}

func newResProc(t *testing.T, src *resSource, bin string) *resProc {
	t.Helper()
	p := &resProc{t: t, src: src, bin: bin}
	var err error
	p.proxy, err = faultproxy.Start(faultproxy.Config{
		Target: src.cosmos.Endpoint,
		// No rules: Match only counts and fires the trigger.
		Match: func(r *http.Request) bool {
			w := faultproxy.IsDocWrite(r)
			if d := p.onRequest(w); d > 0 && w {
				select {
				case <-time.After(d):
				case <-r.Context().Done(): // the client is gone: forwarding fails
				}
			}
			return false
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.proxy.Close() })
	return p
}

// onRequest counts a request, fires the trigger when it is due and
// returns the delay of doc writes.
func (p *resProc) onRequest(docWrite bool) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests++
	if docWrite {
		p.writes++
	}
	k := p.trigger
	if (k.request > 0 && p.requests == k.request) || (k.write > 0 && docWrite && p.writes == k.write) {
		p.fire()
	}
	return k.writeDelay
}

// fire signals the process once (the caller holds mu).
func (p *resProc) fire() {
	if p.proc != nil && p.fired.CompareAndSwap(false, true) {
		_ = p.proc.Signal(p.sig)
	}
}

// resResult is how one invocation of the binary ended.
type resResult struct {
	code           int
	signaled       bool // killed by the signal
	stdout, stderr string
}

// run runs `run` with args until it ends, sending sig when trigger fires
// (no signal with a zero trigger).
func (p *resProc) run(trigger killTrigger, sig os.Signal, stateDir string, args []string) resResult {
	p.t.Helper()
	c := exec.Command(p.bin, args...)
	c.Env = os.Environ()
	for k, v := range p.src.env(p.proxy.URL()) {
		c.Env = append(c.Env, k+"="+v)
	}
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut

	p.mu.Lock()
	p.trigger, p.sig, p.requests, p.writes = trigger, sig, 0, 0
	p.fired.Store(false)
	p.mu.Unlock()
	if err := c.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.proc = c.Process
	p.mu.Unlock()

	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		if trigger.state == nil {
			return
		}
		p.watchState(stateDir, trigger.state, stopWatch)
	}()
	err := c.Wait()
	close(stopWatch)
	<-watched
	p.mu.Lock()
	p.proc = nil
	p.mu.Unlock()

	r := resResult{stdout: out.String(), stderr: errOut.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.signaled = true
		}
	default:
		p.t.Fatalf("run: %v", err)
	}
	return r
}

// watchState reads state.json every millisecond and fires the trigger when
// it first satisfies cond. (It is replaced by rename, so every read sees a
// whole state.)
func (p *resProc) watchState(dir string, cond func(*migrate.State) bool, stop <-chan struct{}) {
	var last []byte
	for {
		select {
		case <-stop:
			return
		case <-time.After(time.Millisecond):
		}
		b, err := os.ReadFile(filepath.Join(dir, migrate.StateFile))
		if err != nil || bytes.Equal(b, last) {
			continue
		}
		last = b
		var st migrate.State
		if json.Unmarshal(b, &st) != nil {
			continue
		}
		if cond(&st) {
			p.mu.Lock()
			p.fire()
			p.mu.Unlock()
			return
		}
	}
}

// tableRows returns the rows checkpointed for table.
func tableRows(st *migrate.State, table string) int64 {
	for _, ts := range st.Tables {
		if ts.Table == table {
			return ts.Rows
		}
	}
	return 0
}

// TestRunKillAndResume kills the built binary (SIGKILL) at different moments
// of a run over the fixtures and 3,000 generated executions with their
// 12,000 index rows, reruns it (killing some reruns again) until it exits,
// and checks that the end is the clean run's: the same exit status and
// counts, the same dead letters with no line twice, the same blobs, and the
// same docs — every doc id of both containers, none missing, none extra.
// Then it interrupts a run with SIGINT: exit 130, the state saved, and a
// rerun that says it resumes and ends the same way.
func TestRunKillAndResume(t *testing.T) {
	t.Parallel()
	const n = 3000
	type scenario struct {
		name string
		// kills are the triggers of the successive invocations; the one
		// after the last runs to its end.
		kills []killTrigger
	}
	entitiesDone := func(st *migrate.State) bool {
		for _, ts := range st.Tables {
			if ts.Table == transform.TableEntities {
				return ts.Done
			}
		}
		return false
	}
	scenarios := []scenario{
		{"before any state", []killTrigger{{request: 1}}},
		{"first doc write, before the first checkpoint", []killTrigger{{write: 1}}},
		{"mid page, first Entities pages", []killTrigger{{write: 500}}},
		{"mid page, later Entities pages", []killTrigger{{write: 2200}}},
		// The checkpoint must come after the page's writes are
		// acknowledged: kill the moment it is saved.
		{"just after the first Entities checkpoint, writes slowed", []killTrigger{{writeDelay: 150 * time.Millisecond, state: func(st *migrate.State) bool {
			return tableRows(st, transform.TableEntities) > 0
		}}}},
		{"Entities done, Relationships not begun", []killTrigger{{state: entitiesDone}}},
		{"mid Relationships (reads only)", []killTrigger{{state: func(st *migrate.State) bool {
			return tableRows(st, transform.TableRelationships) >= 5000
		}}}},
		{"at the final checkpoint, before the summary", []killTrigger{{state: func(st *migrate.State) bool { return st.Done }}}},
		{"killed again while resuming", []killTrigger{{write: 1500}, {write: 700}, {state: func(st *migrate.State) bool {
			return tableRows(st, transform.TableRelationships) >= 1000
		}}}},
	}

	bin := testenv.Build(t)
	// Blob container 0 is the clean run's, then one per scenario and one
	// for SIGINT.
	src := newResSource(t, n, 3, time.Now().UTC(), len(scenarios)+2)
	p := newResProc(t, src, bin)
	// --execution-ttl full: the binary's clock does not change the docs.
	extra := []string{"--execution-ttl", "full"}

	dbA := src.newDatabase()
	stateA := filepath.Join(t.TempDir(), "clean")
	clean := p.run(killTrigger{}, nil, stateA, src.runArgs(dbA, 0, stateA, extra...))
	if clean.code != cmd.ExitOK && clean.code != cmd.ExitPartial {
		t.Fatalf("clean run: exit %d: %s", clean.code, clean.stderr)
	}
	sumA := resSummary(t, clean.stdout)
	docsA := src.docs(dbA)
	blobsA := src.blobList(0)
	deadA := resDeadLetters(t, stateA)
	if int64(len(docsA)) != sumA.DocsWritten || sumA.DocsWritten < n || !sumA.Complete {
		t.Fatalf("clean run: %d docs in the database, %d written, complete %v", len(docsA), sumA.DocsWritten, sumA.Complete)
	}
	t.Logf("clean run: %d docs, %d blobs, %d dead letters, %.1fs", len(docsA), len(blobsA), len(deadA), sumA.ElapsedSeconds)

	// checkEnd compares a finished run with the clean one.
	checkEnd := func(t *testing.T, last resResult, db string, blobs int, stateDir string) {
		t.Helper()
		if last.code != clean.code {
			t.Fatalf("last run: exit %d, the clean run's was %d: %s", last.code, clean.code, last.stderr)
		}
		if a, b := resCounts(sumA), resCounts(resSummary(t, last.stdout)); a != b {
			t.Errorf("counts differ:\nclean:   %s\nresumed: %s", a, b)
		}
		if dead := resDeadLetters(t, stateDir); !slices.Equal(dead, deadA) {
			t.Errorf("dead letters: %d lines, the clean run has %d (or they differ)", len(dead), len(deadA))
		}
		resSameMaps(t, "docs after kills vs clean", docsA, src.docs(db))
		resSameMaps(t, "blobs after kills vs clean", blobsA, src.blobList(blobs))
	}

	for i, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			p := newResProc(t, src, bin) // its own trigger
			db := src.newDatabase()
			stateDir := filepath.Join(t.TempDir(), "state")
			args := src.runArgs(db, i+1, stateDir, extra...)
			killed := 0
			for j, k := range sc.kills {
				r := p.run(k, syscall.SIGKILL, stateDir, args)
				switch {
				case r.signaled:
					killed++
				case j == len(sc.kills)-1 && k.state != nil && r.code == clean.code:
					// The process ended between the state's last save and
					// the kill: nothing to resume.
					t.Logf("invocation %d ended before the kill at %s", j+1, k)
				default:
					t.Fatalf("invocation %d (kill at %s): not killed, exit %d: %s", j+1, k, r.code, r.stderr)
				}
			}
			saved, err := migrate.LoadState(stateDir)
			if err != nil {
				t.Fatalf("state after the kills: %v", err)
			}
			last := p.run(killTrigger{}, nil, stateDir, args)
			// args have --output json: status lines are on stdout.
			switch {
			case saved == nil:
				t.Logf("killed %d time(s) before any state was saved", killed)
			case saved.Done && !strings.Contains(last.stdout, "already completed"):
				t.Errorf("the saved run was done but the rerun does not say so:\n%s", last.stdout)
			case !saved.Done && !strings.Contains(last.stdout, `{"type":"status","message":"resuming run `+saved.RunID):
				t.Errorf("the rerun does not say it resumes run %s:\n%s", saved.RunID, last.stdout)
			}
			if st, err := migrate.LoadState(stateDir); err != nil || st == nil || !st.Done {
				t.Errorf("state after the last run: %+v, %v; want done", st, err)
			}
			checkEnd(t, last, db, i+1, stateDir)
		})
	}

	t.Run("SIGINT exits 130 with the state saved, and a rerun resumes", func(t *testing.T) {
		t.Parallel()
		p := newResProc(t, src, bin)
		db := src.newDatabase()
		blobs := len(scenarios) + 1
		stateDir := filepath.Join(t.TempDir(), "state")
		args := src.runArgs(db, blobs, stateDir, extra...)
		r := p.run(killTrigger{write: 1200}, os.Interrupt, stateDir, args)
		if r.signaled || r.code != cmd.ExitInterrupted {
			t.Fatalf("after SIGINT: exit %d (killed by it: %v), want %d: %s", r.code, r.signaled, cmd.ExitInterrupted, r.stderr)
		}
		if !strings.Contains(r.stderr, "interrupted") || !strings.Contains(r.stderr, "state saved") {
			t.Errorf("stderr does not say it was interrupted with its state saved:\n%s", r.stderr)
		}
		// --output json: the same sentence ends stdout, with exit 130.
		outLines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		if last := outLines[len(outLines)-1]; !strings.HasPrefix(last, `{"type":"error","exit":130,"message":"interrupted: state saved in `) {
			t.Errorf("stdout does not end with the error line:\n%s", r.stdout)
		}
		st, err := migrate.LoadState(stateDir)
		if err != nil || st == nil {
			t.Fatalf("state after SIGINT: %v, %v", st, err)
		}
		if st.Done || tableRows(st, transform.TableEntities) >= int64(src.rows[transform.TableEntities]) {
			t.Errorf("state after SIGINT at the 1,200th doc write says done %v, Entities %d rows", st.Done, tableRows(st, transform.TableEntities))
		}
		s := resSummary(t, r.stdout)
		if s.Complete {
			t.Errorf("the interrupted run's summary says complete")
		}
		last := p.run(killTrigger{}, nil, stateDir, args)
		if !strings.Contains(last.stdout, `{"type":"status","message":"resuming run `+st.RunID) {
			t.Errorf("the rerun does not say it resumes run %s:\n%s", st.RunID, last.stdout)
		}
		if s := resSummary(t, last.stdout); !s.Resumed || s.RunID != st.RunID {
			t.Errorf("rerun summary: resumed %v, run id %q; want resumed %q", s.Resumed, s.RunID, st.RunID)
		}
		checkEnd(t, last, db, blobs, stateDir)
	})
}
