package migrate

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bifrost/bifrost-migrate/store"
)

// gauge counts the functions running at once and the most there were.
type gauge struct {
	mu       sync.Mutex
	now, top int
}

func (g *gauge) enter() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.now++
	g.top = max(g.top, g.now)
}

func (g *gauge) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.now--
}

func (g *gauge) running() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.now
}

// TestPoolKeepsItsLimit: never more than limit() functions at once, and
// every function runs.
func TestPoolKeepsItsLimit(t *testing.T) {
	p := newPool(context.Background(), fixedFlow(3))
	var g gauge
	var ran atomic.Int64
	for range 50 {
		if err := p.Go(func(context.Context) error {
			g.enter()
			defer g.leave()
			ran.Add(1)
			for range 1000 {
				_ = g.running()
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if g.top > 3 || ran.Load() != 50 {
		t.Errorf("at most %d at once (limit 3), %d of 50 ran", g.top, ran.Load())
	}
}

// TestPoolLimitMayGrow: a Go waiting for a slot starts once the limit
// grows, without waiting for a running function to end.
func TestPoolLimitMayGrow(t *testing.T) {
	f := fixedFlow(1)
	p := newPool(context.Background(), f)
	release := make(chan struct{})
	var g gauge
	started := make(chan struct{}, 4)
	block := func(context.Context) error {
		g.enter()
		defer g.leave()
		started <- struct{}{}
		<-release
		return nil
	}
	if err := p.Go(block); err != nil {
		t.Fatal(err)
	}
	<-started
	go func() {
		for range 3 {
			<-started
		}
		close(release) // all four ran at once
	}()
	f.bound(4)
	for range 3 {
		if err := p.Go(block); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(); err != nil || g.top != 4 {
		t.Errorf("Wait: %v; %d at once, want 4", err, g.top)
	}
}

// TestPoolFirstErrorStops: the first error cancels the pool's context, a
// later Go does not run its function, and Wait returns that error.
func TestPoolFirstErrorStops(t *testing.T) {
	p := newPool(context.Background(), fixedFlow(2))
	boom := errors.New("boom")
	if err := p.Go(func(context.Context) error { return boom }); err != nil {
		t.Fatal(err)
	}
	<-p.ctx.Done()
	ran := false
	if err := p.Go(func(context.Context) error { ran = true; return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Go after the error: %v, want context.Canceled", err)
	}
	if err := p.Wait(); !errors.Is(err, boom) || ran {
		t.Errorf("Wait: %v (ran %v), want boom and nothing run", err, ran)
	}
}

// TestCommitInOrder: pages are committed in read order whatever order
// their writes (through the pool) end in, and nothing is committed from
// the first page with a failed write on.
func TestCommitInOrder(t *testing.T) {
	for _, failAt := range []int{-1, 2} {
		var committed []int
		fail := errors.New("write failed")
		pool := newPool(context.Background(), fixedFlow(8))
		pages := make(chan *page, pagesInFlight)
		done := make(chan error, 1)
		go func() {
			done <- commitInOrder(pages, func(p *page) error {
				committed = append(committed, p.items[0].docSize/10)
				return nil
			})
		}()
		for i := range 5 {
			p := &page{items: []item{{docSize: i * 10}, {docSize: i*10 + 1}, {docSize: i*10 + 2}}}
			for j := range p.items {
				p.pending.Add(1)
				if err := pool.Go(func(context.Context) error {
					defer p.pending.Done()
					runtime.Gosched()
					if i == failAt && j == 1 {
						p.failed.Store(true)
						return fail
					}
					return nil
				}); err != nil {
					p.pending.Done()
				}
			}
			pages <- p
		}
		close(pages)
		err := errors.Join(pool.Wait(), <-done)
		want := []int{0, 1, 2, 3, 4}
		if failAt >= 0 {
			want = want[:failAt]
		}
		if fmt.Sprint(committed) != fmt.Sprint(want) || (failAt >= 0) != errors.Is(err, fail) {
			t.Errorf("failing page %d: committed %v (want %v), error %v", failAt, committed, want, err)
		}
	}
}

// TestAttempts: attempts stops at the first attempt that is done or
// fails, and reports exhausted after n start-overs.
func TestAttempts(t *testing.T) {
	n := 0
	exhausted, err := attempts(context.Background(), 3, func() (bool, error) { n++; return true, nil })
	if !exhausted || err != nil || n != 3 {
		t.Errorf("always again: exhausted %v, err %v after %d tries, want exhausted after 3", exhausted, err, n)
	}
	n = 0
	boom := errors.New("boom")
	exhausted, err = attempts(context.Background(), 3, func() (bool, error) { n++; return n < 2, nil })
	if exhausted || err != nil || n != 2 {
		t.Errorf("done at the second: exhausted %v, err %v after %d tries", exhausted, err, n)
	}
	exhausted, err = attempts(context.Background(), 3, func() (bool, error) { return true, boom })
	if exhausted || !errors.Is(err, boom) {
		t.Errorf("error: exhausted %v, err %v", exhausted, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := attempts(ctx, 3, func() (bool, error) { t.Error("tried after ctx ended"); return false, nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("ended ctx: %v", err)
	}
}

// TestSettle: the one function that acts on an answer, for every fault
// kind and every request of the engines (their rules): W written (go
// on), G gone (done), A again, R refused (a dead letter), F failed (the
// engine stops with the error). The letters go by store.FaultKinds, after
// NoFault. An answer that says the item changed meanwhile (A, G) is
// counted by kind.
func TestSettle(t *testing.T) {
	kinds := append([]store.FaultKind{store.NoFault}, store.FaultKinds()...)
	letters := map[step]byte{stepOn: 'W', stepGone: 'G', stepAgain: 'A', stepDeadLetter: 'R', stepStop: 'F'}
	for _, tc := range []struct {
		name string
		rule rule
		// by kind: none, throttled, transient, unreachable, exists,
		// changed, not found, refused, auth, fatal
		want string
	}{
		{"run: upsert a doc", ruleUpsert, "WFFFFFFRFF"},
		{"replay, reverse, the prunes: read a doc", ruleReadDoc, "WFFFFFFRFF"},
		{"replay, reverse, the prunes: look up a row", ruleReadRow, "WFFFFFFRFF"},
		{"replay: create or replace a doc", ruleWriteDoc, "WFFFAAARFF"},
		{"replay's prune: delete a doc", rulePruneDoc, "WFFFAAGRFF"},
		{"reverse: insert or replace a row", ruleWriteRow, "WFFFAAARFF"},
		{"reverse: delete a stale index row", ruleRemoveRow, "WFFFAAGRFF"},
		{"reverse: record the sync on a doc", ruleRecordSync, "WFFFAAGRFF"},
		{"reverse's prune: delete a row", rulePruneRow, "WFFFAAARFF"},
		{"run, replay, reverse: upload a blob", ruleUploadBlob, "WFFFRFFRFF"},
	} {
		if len(tc.want) != len(kinds) {
			t.Fatalf("%s: %d answers for %d kinds", tc.name, len(tc.want), len(kinds))
		}
		for i, k := range kinds {
			var err error
			if k != store.NoFault {
				err = fmt.Errorf("item x: %w", &store.Fault{Kind: k, Status: 499, Reason: "the " + k.String() + " answer"})
			}
			var f fate
			s, stop := tc.rule.settle(err, "item x: ", &f)
			if letters[s] != tc.want[i] {
				t.Errorf("%s, %s: %c, want %c", tc.name, k, letters[s], tc.want[i])
			}
			wantDL := ""
			switch {
			case s == stepDeadLetter && k == store.Exists:
				wantDL = "item x: " + tc.rule.exists
			case s == stepDeadLetter:
				wantDL = "item x: " + tc.rule.refusal + " (499): the refused answer"
			}
			if f.deadLetter != wantDL || (s == stepStop) != (stop != nil) || stop != nil && stop != err {
				t.Errorf("%s, %s: dead letter %q, stop %v; want %q and the error itself only when it fails", tc.name, k, f.deadLetter, stop, wantDL)
			}
			var want changes
			if s == stepAgain || s == stepGone {
				want = map[store.FaultKind]changes{store.Exists: {exists: 1}, store.Changed: {changed: 1}, store.NotFound: {gone: 1}}[k]
			}
			if f.changes != want {
				t.Errorf("%s, %s: changes counted %+v, want %+v", tc.name, k, f.changes, want)
			}
		}
		// An error that carries no fault (the tool's own) stops the engine.
		if s, stop := tc.rule.settle(errors.New("disk full"), "", &fate{}); s != stepStop || stop == nil {
			t.Errorf("%s: an error of the tool's: %d, %v", tc.name, s, stop)
		}
	}
	// The blob stores' conflict is an answer of kind exists.
	var f fate
	if s, _ := ruleUploadBlob.settle(fmt.Errorf("blob x: %w", store.ErrBlobConflict), "blob x ", &f); s != stepDeadLetter || f.deadLetter != "blob x already exists with different content" {
		t.Errorf("a blob conflict: %c, %q", letters[s], f.deadLetter)
	}
}

// TestKeyedLocks: one key is held by one caller at a time, other keys do
// not wait, and a lock nobody uses is dropped.
func TestKeyedLocks(t *testing.T) {
	var k keyedLocks
	unlockA := k.lock("a")
	got := make(chan string, 2)
	go func() {
		unlock := k.lock("a")
		got <- "a again"
		unlock()
	}()
	unlockB := k.lock("b") // not held up by a
	got <- "b"
	unlockB()
	if first := <-got; first != "b" {
		t.Fatalf("%s before b: a second lock of a did not wait", first)
	}
	unlockA()
	if second := <-got; second != "a again" {
		t.Fatalf("got %s", second)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for len(k.locks) != 0 {
		k.mu.Unlock()
		runtime.Gosched()
		k.mu.Lock()
	}
}
