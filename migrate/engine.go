package migrate

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// The engine. run, replay and reverse (and the two prunes) move items
// the same way (docs/engine.md):
//
//	source → decide → write → record → commit
//
// A pass reads its items in order (table pages, change-feed pages, prune
// candidates) and decides each on the reading goroutine, in read order
// (the decision is pure: the transform, collisions, replay's and
// reverse's decide). The items that need a write go to the one pool of
// workers (pool), which writes them with optimistic concurrency
// (attempts) and acts on every answer through one function (settle,
// settle.go). Each item is then recorded (replay and reverse: their
// ledger and book), and run's ordered checkpoint is the one commit step:
// a page is committed once its writes and those of every page before it
// are acknowledged (commitInOrder, run.go). Each engine's pass is plain
// code in its own file over these helpers.

// pagesInFlight bounds the pages read but not yet committed: with the
// page being read ahead, at most pagesInFlight+2 pages are in memory,
// whatever the source's size.
const pagesInFlight = 2

// passEnd is the error that ends a pass whose writes went to p, once p's
// writes are waited for (werr, p.Wait's) and its committer is done (cerr;
// nil without one): the first error of a write, of the commit, or of the
// source (readErr, not when it is only the consequence of the pool's
// stop), or ctx's error when ctx ended first.
func passEnd(ctx context.Context, p *pool, werr, cerr, readErr error) error {
	if p.ctx.Err() != nil && errors.Is(readErr, p.ctx.Err()) {
		readErr = nil // a consequence of a writer's, the committer's or the caller's stop
	}
	if err := errors.Join(werr, cerr, readErr); err != nil {
		if cerr == nil && ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	return ctx.Err()
}

// end waits for p's writes and returns the error that ends a pass without
// a committer (passEnd) whose source ended with readErr.
func (p *pool) end(ctx context.Context, readErr error) error {
	return passEnd(ctx, p, p.Wait(), nil, readErr)
}

// pool runs the writes of a pass on goroutines of its own, at most
// flow.Limit() at once (asked again whenever a slot is wanted, so the
// window may move while the pool works). Each write runs with a
// store.Meter in its context, and the flow hears how long it took, less
// its waits for the budget, and what it cost. The first error cancels the
// pool's context and is what Wait returns (errgroup's rule). Go is called
// from one goroutine; the rest is safe for concurrent use.
//
// A goroutine that finished a write takes the next one handed to it
// (idle for at most poolIdle): a write goes deep into the SDK's stack,
// and a goroutine made for each would grow its stack again every time
// (about 6 µs of CPU a doc, by pprof on the scale benchmark).
type pool struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	flow   *Flow

	mu     sync.Mutex
	cond   sync.Cond
	active int
	wg     sync.WaitGroup // the writes
	once   sync.Once
	err    error
	// unwake stops the wake-up at the end of ctx. A Go that waits for a
	// slot is also woken every poolRecheck: the limit may have grown.
	unwake func() bool
	// tasks hands a write to an idle worker; workers counts the workers.
	tasks   chan func()
	workers sync.WaitGroup
}

// poolRecheck is how often a pool that waits for a slot asks its limit
// again; poolIdle how long a worker waits for another write.
const (
	poolRecheck = 20 * time.Millisecond
	poolIdle    = time.Second
)

func newPool(ctx context.Context, flow *Flow) *pool {
	p := &pool{flow: flow, tasks: make(chan func())}
	p.ctx, p.cancel = context.WithCancelCause(ctx)
	p.cond.L = &p.mu
	p.unwake = context.AfterFunc(p.ctx, p.wake)
	return p
}

// worker runs task, then the tasks handed to it, until it was idle for
// poolIdle or the pool stopped.
func (p *pool) worker(task func()) {
	defer p.workers.Done()
	idle := time.NewTimer(poolIdle)
	defer idle.Stop()
	for {
		task()
		idle.Reset(poolIdle)
		select {
		case task = <-p.tasks:
		case <-idle.C:
			return
		case <-p.ctx.Done():
			return
		}
	}
}

func (p *pool) wake() {
	p.mu.Lock()
	p.cond.Broadcast()
	p.mu.Unlock()
}

// full reports whether every slot is taken (the caller holds mu).
func (p *pool) full() bool { return p.active >= max(1, p.flow.Limit()) }

// Go waits for a free slot and runs fn on it with the pool's context. It
// returns the context's error, without running fn, when the pool stopped
// first.
func (p *pool) Go(fn func(ctx context.Context) error) error {
	p.mu.Lock()
	if p.full() && p.ctx.Err() == nil {
		began := time.Now()
		t := time.AfterFunc(poolRecheck, p.tick)
		for p.full() && p.ctx.Err() == nil {
			p.cond.Wait()
			t.Reset(poolRecheck)
		}
		t.Stop()
		p.flow.waited(time.Since(began))
	}
	if err := p.ctx.Err(); err != nil {
		p.mu.Unlock()
		return err
	}
	p.active++
	p.mu.Unlock()
	p.wg.Add(1)
	p.flow.start()
	task := func() {
		defer p.wg.Done()
		m := &store.Meter{}
		began := time.Now()
		err := fn(store.WithMeter(p.ctx, m))
		ru, waited := m.Read()
		p.flow.done(time.Since(began), waited, ru)
		p.mu.Lock()
		p.active--
		p.cond.Broadcast()
		p.mu.Unlock()
		if err != nil {
			p.once.Do(func() {
				p.err = err
				p.cancel(err)
			})
		}
	}
	select {
	case p.tasks <- task: // an idle worker took it
	default:
		p.workers.Add(1)
		go p.worker(task)
	}
	return nil
}

// tick wakes a Go that waits for a slot, so that it asks the limit again.
func (p *pool) tick() { p.wake() }

// Wait waits for every fn started, and for the workers to end, and
// returns the first error.
func (p *pool) Wait() error {
	p.wg.Wait()
	p.unwake()
	p.cancel(nil)
	p.workers.Wait()
	return p.err
}

// fixedFlow is the flow of a pool of n slots.
func fixedFlow(n int) *Flow {
	f := NewFlow(nil, nil)
	f.bound(n)
	return f
}

// attempts runs try at most n times while it asks to start over (again),
// checking ctx before each. It returns try's error, or exhausted when
// every attempt asked to start over.
func attempts(ctx context.Context, n int, try func() (again bool, err error)) (exhausted bool, err error) {
	for range n {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		again, err := try()
		if err != nil || !again {
			return false, err
		}
	}
	return true, nil
}

// engine is what every engine invocation shares: the clock and its start,
// the transform options, where it reports, and the pool's bound.
type engine struct {
	topts    transform.Options
	start    time.Time
	now      func() time.Time
	progress Progress
	log      func(format string, args ...any)
	flow     *Flow
}

// newEngine fills the defaults of common (Concurrency, StateDir) and env
// (the clock, progress, log) and fixes the start time, which is the
// transform options' Now when that is zero. The transform options are
// the caller's as they are: parsed and checked once where they are given
// (the command's flags and the migration's state, cmd/transformflags.go);
// the engine does not check or default them again.
func newEngine(common *Common, env Env) engine {
	if common.Concurrency <= 0 {
		common.Concurrency = DefaultConcurrency
	}
	if common.StateDir == "" {
		common.StateDir = DefaultStateDir
	}
	e := engine{topts: common.Transform, now: env.Now, progress: env.Progress, log: env.Log, flow: env.Flow}
	if e.now == nil {
		e.now = time.Now
	}
	e.start = e.now()
	if e.topts.Now.IsZero() {
		e.topts.Now = e.start
	}
	if e.flow == nil {
		e.flow = NewFlow(nil, nil)
	}
	e.flow.bound(common.Concurrency)
	if e.progress == nil {
		e.progress = nopProgress{}
	}
	if e.log == nil {
		e.log = func(string, ...any) {}
	}
	return e
}

// precount counts the rows that q selects in each table of tables (read
// under prefix), keys only, and reports the totals to progress, beside
// the work; errors only cost the totals. The returned stop cancels the
// count and waits for it, so that progress hears nothing after it.
func precount(ctx context.Context, src RowSource, prefix string, tables []string, q store.Query, progress Progress) (stop func()) {
	cctx, cancel := context.WithCancel(ctx)
	progress.Counting(tables)
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, t := range tables {
			n, err := src.Count(cctx, prefix+t, q)
			if err != nil {
				return
			}
			progress.Total(t, n)
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}
