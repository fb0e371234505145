package migrate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// The engine. Run, Replay and Reverse are configurations of one shape
// (docs/engine.md):
//
//	source → decide → write → record → commit
//
// A source reads batches of items in order (table pages, change-feed
// pages, prune candidates) and decides each item on the reading goroutine,
// in read order (the decision is pure: the transform, collisions,
// replay's and reverse's decide). The items that need a write go to the
// one pool of workers (pool), which writes them with optimistic
// concurrency (attempts) and acts on every answer through one helper
// (writeRule.settle). Each item is then recorded (recorder), and run's ordered checkpoint is the one optional
// commit step: a batch is committed once its items and those of every
// batch before it are acknowledged.

// pagesInFlight bounds the batches read but not yet committed: with the
// batch being read ahead, at most pagesInFlight+2 batches are in memory,
// whatever the source's size.
const pagesInFlight = 2

// batch is one page of items on its way through a pipeline.
type batch[T any] struct {
	items []T
	// next is where the source goes on after this batch: run's checkpoint.
	next store.Cursor
	// pending counts the writes of the batch not yet done; failed is set
	// when one of them failed.
	pending sync.WaitGroup
	failed  atomic.Bool
}

// source reads the items of one pass: it calls emit for each batch, in
// order, and returns when the source is exhausted or emit fails (with
// emit's error).
type itemSource[T any] func(ctx context.Context, emit func(b *batch[T]) error) error

// pipeline is how one pass of an engine moves items from a source to the
// services.
type pipeline[T any] struct {
	// flow sizes the pool's window and hears every write.
	flow *Flow
	// writes says whether an item needs a write; write does it, on the
	// pool. An error stops the pipeline (a dead letter is not an error:
	// write records it in the item).
	writes func(it *T) bool
	write  func(ctx context.Context, it *T) error
	// record, when not nil, hears each item once it is final: after its
	// write, or when it needed none. It is called from several goroutines
	// at once; an error stops the pipeline.
	record func(it *T) error
	// commit, when not nil, hears the batches in the source's order, each
	// once every write of it is done, from one goroutine. After the first
	// batch with a failed write, or commit's first error, nothing more is
	// committed.
	commit func(b *batch[T]) error
}

// run moves every item of read through the pipeline. It returns the
// first error of a write, of record or commit, or of the source (the
// source's consequence of a stop is not reported twice), or ctx's error
// when ctx ended first.
func (p pipeline[T]) run(ctx context.Context, read itemSource[T]) error {
	pctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	pool := newPool(pctx, p.flow)
	var committing chan *batch[T]
	commitErr := make(chan error, 1)
	if p.commit == nil {
		commitErr <- nil
	} else {
		committing = make(chan *batch[T], pagesInFlight)
		go func() {
			err := p.commitInOrder(committing)
			if err != nil {
				stop(err)
			}
			commitErr <- err
		}()
	}
	readErr := read(pool.ctx, func(b *batch[T]) error { return p.dispatch(pool, b, committing) })
	if committing != nil {
		close(committing)
	}
	werr := pool.Wait()
	cerr := <-commitErr
	if pool.ctx.Err() != nil && errors.Is(readErr, pool.ctx.Err()) {
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

// dispatch hands the items of b that need a write to the pool, records
// the others, and passes b on to the committer, if any.
func (p pipeline[T]) dispatch(pool *pool, b *batch[T], committing chan<- *batch[T]) error {
	for i := range b.items {
		it := &b.items[i]
		if !p.writes(it) {
			if err := p.recorded(it); err != nil {
				return err
			}
			continue
		}
		b.pending.Add(1)
		err := pool.Go(func(ctx context.Context) error {
			defer b.pending.Done()
			err := p.write(ctx, it)
			if err == nil {
				err = p.recorded(it)
			}
			if err != nil {
				b.failed.Store(true)
			}
			return err
		})
		if err != nil {
			b.pending.Done() // the write never started
			return err
		}
	}
	if committing == nil {
		return nil
	}
	select {
	case committing <- b:
		return nil
	case <-pool.ctx.Done():
		return pool.ctx.Err()
	}
}

func (p pipeline[T]) recorded(it *T) error {
	if p.record == nil {
		return nil
	}
	return p.record(it)
}

// commitInOrder commits the batches in order. It stops committing at the
// first batch with a failed write, and at commit's first error, but keeps
// receiving batches so that the sender never blocks.
func (p pipeline[T]) commitInOrder(batches <-chan *batch[T]) error {
	var (
		err     error
		stopped bool
	)
	for b := range batches {
		b.pending.Wait()
		if stopped {
			continue
		}
		if b.failed.Load() {
			stopped = true // the write's error reaches run through the pool
			continue
		}
		if err = p.commit(b); err != nil {
			stopped = true
		}
	}
	return err
}

// pool runs the writes of a pipeline on goroutines of its own, at most
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

// writeRule is how an engine takes the answers to one kind of its writes:
// the few real differences between the writes of run, replay, reverse and
// the prunes, as options of the one function that acts on an answer
// (settle). The rules of the engines' writes are the rule* values below.
type writeRule struct {
	// refusal begins the dead letter's reason when the service refuses
	// the item for good; the fault's status and reason follow.
	refusal string
	// conditional: the write carries a condition (create-only, If-Match),
	// so a 409, 412 or 404 says that the item changed meanwhile: read and
	// decide again. An unconditional write (run's upsert, a read) never
	// expects one: it stops the engine.
	conditional bool
	// goneIsDone: a 404 means what the write wanted is done already (a
	// delete, a sync recorded on a doc deleted since).
	goneIsDone bool
}

// The writes of the engines and how each takes its answers.
var (
	// run's upsert of a doc.
	ruleUpsert = writeRule{refusal: "Cosmos DB rejected the doc"}
	// replay's read of a doc before it decides.
	ruleReadDoc = writeRule{refusal: "Cosmos DB refused to read the doc"}
	// replay's create or replace of a doc.
	ruleWriteDoc = writeRule{refusal: "Cosmos DB rejected the doc", conditional: true}
	// replay's prune: the delete of a doc whose row is gone.
	rulePruneDoc = writeRule{refusal: "prune: Cosmos DB refused to delete the doc", conditional: true, goneIsDone: true}
	// reverse's insert or replace of a row.
	ruleWriteRow = writeRule{refusal: "Table Storage refused the row", conditional: true}
	// reverse's delete of a stale index row.
	ruleRemoveRow = writeRule{refusal: "Table Storage refused the row", conditional: true, goneIsDone: true}
	// reverse's record of the sync on the doc (its _migration).
	ruleRecordSync = writeRule{refusal: "Cosmos DB refused to record the sync on the doc, whose rows are written", conditional: true, goneIsDone: true}
	// reverse's prune: the delete of a row whose doc is gone.
	rulePruneRow = writeRule{refusal: "prune: Table Storage refused to delete the row", conditional: true}
)

// answer is what settle makes of the answer to a write.
type answer int

const (
	answerWritten answer = iota // the write happened
	answerGone                  // a 404 that goneIsDone takes for done: nothing left to do
	answerAgain                 // a 409, 412 or 404 to a conditional write: read and decide again
	answerRefused               // the service refuses the item for good: a dead letter
	answerFailed                // anything else: the engine stops with the error
)

// settle is the one function that acts on the answer to a write — its
// error, nil when the write happened — for every engine and the prunes
// (docs/engine.md, "Faults"): it reads the answer's fault kind
// (store.KindOf) and returns what it means, the dead letter's reason for
// a refusal (item, when not empty, names the item first: "replace
// Entities GLOBAL/x: "), and the error that stops the engine for a
// failure (a retryable fault the adapter gave up on, Auth, Fatal, or an
// outcome the write does not expect).
func (w writeRule) settle(err error, item string) (a answer, deadLetter string, stop error) {
	switch k := store.KindOf(err); {
	case k == store.NoFault:
		return answerWritten, "", nil
	case k == store.NotFound && w.goneIsDone:
		return answerGone, "", nil
	case (k == store.Exists || k == store.Changed || k == store.NotFound) && w.conditional:
		return answerAgain, "", nil
	case k == store.Refused:
		f := store.FaultOf(err)
		return answerRefused, fmt.Sprintf("%s%s (%d): %s", item, w.refusal, f.Status, f.Error()), nil
	}
	return answerFailed, "", err
}

// startOvers counts the answers that made an engine read and decide
// again, by kind.
type startOvers struct{ exists, changed, gone int64 }

// add counts err, the answer settle took for answerAgain (or answerGone).
func (s *startOvers) add(err error) {
	switch store.KindOf(err) {
	case store.Exists:
		s.exists++
	case store.Changed:
		s.changed++
	case store.NotFound:
		s.gone++
	}
}

func (s startOvers) total() int64 { return s.exists + s.changed + s.gone }

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
// the transform options with their defaults, where it reports, and the
// pool's bound.
type engine struct {
	topts    transform.Options
	start    time.Time
	now      func() time.Time
	progress Progress
	log      func(format string, args ...any)
	flow     *Flow
}

// newEngine fills the defaults of common (Concurrency, StateDir) and env
// (the clock, progress, log) and fixes the start time; it fails when the
// transform options are invalid.
func newEngine(common *Common, env Env) (engine, error) {
	common.fillDefaults()
	now, start, topts, err := startClock(env.Now, common.Transform)
	e := engine{topts: topts, start: start, now: now, progress: env.Progress, log: env.Log, flow: env.Flow}
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
	return e, err
}

// fillDefaults sets the defaults of Concurrency and StateDir.
func (c *Common) fillDefaults() {
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir
	}
}

// startClock returns the clock (time.Now when now is nil), the start time,
// and the transform options with their defaults, Now set to the start time
// when zero; it fails when the options are invalid.
func startClock(now func() time.Time, topts transform.Options) (func() time.Time, time.Time, transform.Options, error) {
	if now == nil {
		now = time.Now
	}
	start := now()
	if topts.Now.IsZero() {
		topts.Now = start
	}
	topts = topts.WithDefaults()
	return now, start, topts, topts.Validate()
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
