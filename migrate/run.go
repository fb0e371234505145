package migrate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/spill"
	"github.com/bifrost/bifrost-migrate/internal/words"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// RunOptions say what a run migrates and how. Common.StateDir holds
// state.json, dead-letter.jsonl and the lock; Common.Concurrency bounds
// the rows being written at once.
type RunOptions struct {
	Common
	// Tables to migrate; they are always read in the order Config,
	// Entities, Relationships. Empty means all three.
	Tables []string
	// Restart discards a saved state and its dead letters and starts over.
	Restart bool
	// MaxErrors > 0 stops the run when that many rows are dead-lettered.
	MaxErrors int
	// Show is the number of sample docs per table and kind a dry run
	// reports.
	Show int
	// CountRows pre-counts the selected tables (keys only, in parallel
	// with the run) so that Progress gets totals.
	CountRows bool
	// Target describes where the run writes (database, accounts, blob
	// container), without secrets; it is part of the fingerprint, so a
	// saved state is never resumed against another target. TablePrefix is
	// part of it too.
	Target string

	// sets sizes the sets of ids the run keeps (keyset.go); zero fields
	// take the defaults. Tests make them small.
	sets setSizes
}

// setSizes are the sizes of the sets of ids run keeps: the doc ids held
// in memory and the filters' bytes.
type setSizes struct {
	idMemoryKeys, idFilterBytes, execFilterBytes int
}

func (z setSizes) withDefaults() setSizes {
	if z.idMemoryKeys <= 0 {
		z.idMemoryKeys = idMemoryKeys
	}
	if z.idFilterBytes <= 0 {
		z.idFilterBytes = idFilterBytes
	}
	if z.execFilterBytes <= 0 {
		z.execFilterBytes = execFilterBytes
	}
	return z
}

// IDRunsDir is the directory in the state directory where a run keeps the
// doc ids it has seen beyond what it holds in memory (SPEC §10, §11), and
// removes when it ends. A dry run, which writes nothing there, keeps them
// in a temporary directory instead.
const IDRunsDir = "ids.tmp"

// Deps are the services a run uses.
type Deps struct {
	Source RowSource
	Docs   DocWriter
	Blobs  BlobStore
	Env
}

// Run migrates the selected tables (SPEC §11): it lists container
// execution-data once, reads each table page by page from its checkpoint,
// transforms every row, uploads the blobs docs need and writes the docs
// through the pool, and checkpoints after each page whose writes (and all
// earlier pages' writes) are acknowledged.
//
// Rows that cannot be transformed or written are dead-lettered and the run
// goes on; the Summary counts them. Run returns an error, with the Summary
// so far, when a read or a write fails in a way retrying did not fix, when
// ctx is cancelled (the state saved up to the last checkpoint), or when
// opts.MaxErrors dead letters stop it (ErrTooManyDeadLetters).
//
// Unless opts.DryRun, Run holds the lock of opts.StateDir (LockStateDir,
// command "run") from before it reads the state (or discards it for
// opts.Restart) until it returns; when another process holds it, Run
// returns a *StateDirBusyError at once, having changed nothing.
func Run(ctx context.Context, opts RunOptions, deps Deps) (Summary, error) {
	r, err := newRunner(opts, deps)
	if err != nil {
		return Summary{}, err
	}
	release, err := lockStateDir(r.opts.StateDir, "run", r.opts.DryRun, r.now())
	if err != nil {
		return Summary{}, err
	}
	s, err := r.work(ctx)
	return s, errors.Join(err, release())
}

// runner is one invocation of Run.
type runner struct {
	engine
	opts   RunOptions
	tables []string // selected, in read order
	fp     string
	src    RowSource
	docs   DocWriter
	blobs  BlobStore

	state   *State
	store   stateStore
	sink    deadLetterSink
	resumed bool
	// saved is the checkpoint state.json holds (zero before the first);
	// unsaved is set once a checkpoint could not be recorded.
	saved   SavedCheckpoint
	unsaved bool

	blobIdx transform.BlobIndex
	ids     *spill.KeySet // the doc ids seen, for collisions (transform.CheckID)
	execs   *execFilter

	// Bookkeeping of the committer (one goroutine at a time).
	deadLetters int64 // dead letters recorded by this invocation and before
	docsWritten int64
	plan        Plan
	samples     map[string]int // per table+kind
}

func newRunner(opts RunOptions, deps Deps) (*runner, error) {
	tables, err := transform.SelectTables(opts.Tables)
	if err != nil {
		return nil, err
	}
	if deps.Source == nil || deps.Docs == nil || deps.Blobs == nil {
		return nil, errors.New("migrate: Source, Docs and Blobs are required")
	}
	e := newEngine(&opts.Common, deps.Env)
	z := opts.sets.withDefaults()
	r := &runner{
		engine: e, opts: opts, tables: tables, src: deps.Source, docs: deps.Docs, blobs: deps.Blobs,
		execs: newExecFilter(z.execFilterBytes), samples: map[string]int{},
	}
	r.ids = spill.NewKeySet(z.idMemoryKeys, z.idFilterBytes, r.idRunsDir)
	r.fp = fingerprint(e.topts, tables, opts.TablePrefix, opts.Target)
	if opts.DryRun {
		// Dry run: decorators that write nothing, in place of the writers
		// and of the state directory.
		r.docs = dryRunDocs{}
		r.blobs = newDryRunBlobs(deps.Blobs)
		r.store = nopStore{}
		r.sink = &memorySink{}
	}
	return r, nil
}

// idRunsDir makes the directory of the doc ids beyond memory: IDRunsDir
// in the state directory, or a temporary directory for a dry run.
func (r *runner) idRunsDir() (string, error) {
	if r.opts.DryRun {
		return os.MkdirTemp("", "bifrost-migrate-ids-")
	}
	dir := filepath.Join(r.opts.StateDir, IDRunsDir)
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	return dir, os.Mkdir(dir, 0o700)
}

func newRunID(t time.Time) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return t.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
}

func (r *runner) newState() *State {
	st := &State{Version: stateVersion, RunID: newRunID(r.start), Fingerprint: r.fp, Started: r.start, Updated: r.start}
	for _, t := range r.tables {
		st.Tables = append(st.Tables, TableState{Table: t})
	}
	return st
}

// open loads or creates the state and opens the dead-letter file; the
// caller holds the state directory's lock (run), which also created the
// directory. It returns a non-nil Summary when the saved run is already
// complete.
func (r *runner) open() (*Summary, error) {
	if r.opts.DryRun {
		r.state = r.newState()
		return nil, nil
	}
	dir := r.opts.StateDir
	// The doc ids of an earlier invocation that did not end: a resume
	// reads them again.
	if err := os.RemoveAll(filepath.Join(dir, IDRunsDir)); err != nil {
		return nil, err
	}
	if r.opts.Restart {
		for _, name := range []string{StateFile, DeadLetterFile} {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("--restart: %w", err)
			}
		}
	}
	st, err := LoadState(dir)
	if err != nil {
		return nil, err
	}
	if s, err := r.resume(st); s != nil || err != nil {
		return s, err
	}
	if r.state.DeadLetterBytes > 0 && r.state.DeadLetterSHA256 == "" {
		r.progress.Message(fmt.Sprintf("%s was saved by an earlier bifrost-migrate, without a digest of %s: only the file's length is checked", StateFile, DeadLetterFile))
	}
	sink, err := openDeadLetters(dir, r.state.deadLetters())
	if err != nil {
		return nil, err
	}
	r.sink = sink
	if r.store == nil {
		r.store = dirStore{dir: dir}
	}
	for _, ts := range r.state.Tables {
		r.deadLetters += ts.disposition(string(transform.DispositionDeadLetter))
	}
	return nil, r.save()
}

// save saves the state. When it cannot, state.json is still the last
// checkpoint saved (r.saved), and the summary says so.
func (r *runner) save() error {
	if err := r.store.Save(r.state); err != nil {
		r.unsaved = true
		return err
	}
	r.saved = r.state.checkpoint()
	return nil
}

// resume takes the saved state st (nil: none) as the run's, or a new one;
// it refuses a state of other options, and returns the summary of a saved
// run already complete.
func (r *runner) resume(st *State) (*Summary, error) {
	dir := r.opts.StateDir
	switch {
	case st != nil && st.Fingerprint != r.fp:
		return nil, &FingerprintError{Dir: dir, Saved: st.Fingerprint, Wanted: r.fp}
	case st != nil && st.Done:
		s := buildSummary(st, r.tables)
		s.AlreadyComplete = true
		s.DeadLetterFile = filepath.Join(dir, DeadLetterFile)
		r.progress.Message(fmt.Sprintf("run %s already completed (%s); nothing to do; use --restart to run again", st.RunID, st.Updated.UTC().Format(time.RFC3339)))
		return &s, nil
	case st != nil:
		r.resumed, r.saved = true, st.checkpoint()
		var done int64
		for _, ts := range st.Tables {
			done += ts.Rows
		}
		r.progress.Message(fmt.Sprintf("resuming run %s from its checkpoint of %s (%s done); use --restart to start over",
			st.RunID, st.Updated.UTC().Format(time.RFC3339), words.Count(done, "row", "rows")))
	default:
		st = r.newState()
	}
	r.state = st
	return nil, nil
}

// work is the run proper: open the state, then read, transform, write and
// checkpoint every selected table.
func (r *runner) work(ctx context.Context) (Summary, error) {
	if s, err := r.open(); s != nil || err != nil {
		if s == nil {
			return Summary{}, err
		}
		return *s, err
	}
	defer r.sink.Close()
	defer r.ids.Close()
	var err error
	if r.blobIdx, err = listBlobs(ctx, r.blobs); err != nil {
		return r.summary(), err
	}
	if r.opts.CountRows {
		defer precount(ctx, r.src, r.opts.TablePrefix, r.tables, store.Query{}, r.progress)()
	}
	rctx, stopReads := context.WithCancel(ctx)
	reads, wait := r.startReads(rctx)
	defer wait()
	defer stopReads()
	for _, table := range transform.Tables() {
		if err := r.table(ctx, table, reads[table]); err != nil {
			return r.summary(), err
		}
	}
	r.state.Done = true
	r.state.Updated = r.now()
	if err := r.save(); err != nil {
		return r.summary(), err
	}
	return r.summary(), nil
}

// startReads starts reading the tables not done yet from their
// checkpoints, each ahead of its turn (startReads); wait waits for the
// reads to end.
func (r *runner) startReads(ctx context.Context) (map[string]*tableRead, func()) {
	var scans []scan
	for _, ts := range r.state.Tables {
		if !ts.Done {
			scans = append(scans, scan{ts.Table, store.Query{After: ts.after()}})
		}
	}
	reads, wait := startReads(ctx, r.src, r.opts.TablePrefix, nil, scans)
	out := map[string]*tableRead{}
	for _, rd := range reads {
		out[rd.table] = rd
	}
	return out, wait
}

// table migrates table from its checkpoint (its reading rd already
// started), after reading again (without writing) the rows before it; a
// table not selected is read only for the execution ids, when
// Relationships needs them.
func (r *runner) table(ctx context.Context, table string, rd *tableRead) error {
	ts := r.state.table(table)
	switch {
	case ts == nil && table == transform.TableEntities && slices.Contains(r.tables, transform.TableRelationships):
		// Relationships without Entities: dangling-index detection still
		// needs the execution ids.
		return r.scanExecutions(ctx)
	case ts == nil:
		return nil
	case ts.Done:
		r.log("table %s: done in an earlier session (%d rows); reading it again without writing", table, ts.Rows)
		err := r.reread(ctx, table, ts, true)
		r.progress.Resumed(table, ts.Rows)
		r.progress.TableDone(table)
		return err
	case ts.Rows > 0:
		r.log("table %s: resuming after %s/%s (%d rows done); reading those rows again without writing", table, ts.LastPartitionKey, ts.LastRowKey, ts.Rows)
		if err := r.reread(ctx, table, ts, false); err != nil {
			return err
		}
		r.progress.Resumed(table, ts.Rows)
	default:
		r.log("table %s: started", table)
	}
	return r.process(ctx, table, ts, rd)
}

func (r *runner) summary() Summary {
	s := buildSummary(r.state, r.tables)
	s.DryRun, s.Resumed, s.DocsWritten = r.opts.DryRun, r.resumed, r.docsWritten
	if r.opts.DryRun {
		s.RunID = ""
		p := r.plan
		p.DeadLetters = r.sink.(*memorySink).list
		if p.DeadLetters == nil {
			p.DeadLetters = []DeadLetter{}
		}
		if p.Collisions == nil {
			p.Collisions = []Collision{}
		}
		if p.SanitizedIDs == nil {
			p.SanitizedIDs = []SanitizedID{}
		}
		s.Plan = &p
		s.DocsWritten = 0
	} else {
		s.DeadLetterFile = filepath.Join(r.opts.StateDir, DeadLetterFile)
		// With --max-errors the file may hold dead letters of a page
		// after the checkpoint: report what it holds.
		s.DeadLetters = max(s.DeadLetters, r.deadLetters)
		if r.unsaved {
			// The state in memory is ahead of the one on disk, which a
			// rerun resumes from.
			saved := r.saved
			s.SaveFailed, s.Complete, s.LastSaved = true, false, &saved
		}
	}
	s.setElapsed(r.now().Sub(r.start))
	return s
}

// reread reads again the rows of table before its checkpoint (all of them
// when whole) and transforms them without writing anything, so that
// collisions and dangling indexes are judged against every earlier row
// after a resume, exactly as in a run that was never interrupted.
func (r *runner) reread(ctx context.Context, table string, ts *TableState, whole bool) error {
	return store.Scan(ctx, r.src, r.opts.TablePrefix, table, store.Query{}, store.Cursor{}, func(p store.Page) error {
		for _, row := range p.Rows {
			if !whole && transform.CompareKeys(row.PartitionKey, row.RowKey, ts.LastPartitionKey, ts.LastRowKey) > 0 {
				return store.ErrStop
			}
			if _, err := r.decide(row); err != nil {
				return err
			}
		}
		return nil
	})
}

// scanExecutions records the execution ids of Entities, reading only
// what is needed for it.
func (r *runner) scanExecutions(ctx context.Context) error {
	q := store.Query{Select: []string{"PartitionKey", "RowKey", "ExecutionId"}}
	return store.Scan(ctx, r.src, r.opts.TablePrefix, transform.TableEntities, q, store.Cursor{}, func(p store.Page) error {
		for _, row := range p.Rows {
			r.execs.AddRow(row)
		}
		return nil
	})
}

// decide transforms one row in read order: blob facts, the transform,
// collisions, execution ids and dangling indexes. It fails when the doc
// ids cannot be kept (transform.CheckID); no later row can be decided then.
func (r *runner) decide(row transform.Row) (transform.Outcome, error) {
	o, err := transform.CheckID(r.ids, transform.Transform(row, factsOf(r.blobIdx, row), r.topts))
	if err != nil {
		return o, err
	}
	switch {
	case row.Table == transform.TableEntities:
		r.execs.AddRow(row)
	case o.Disposition == transform.DispositionDroppedIndex && o.IndexExecutionID != "" && !r.execs.Has(o.IndexExecutionID):
		o.Warnings = append(o.Warnings, transform.Warning{Reason: transform.ReasonDanglingIndex, Detail: o.IndexExecutionID})
	}
	return o, nil
}

// item is one row of a page on its way through run.
type item struct {
	row     transform.Row
	out     transform.Outcome
	docSize int
	// Set by the writer; read by the committer after the page's writes
	// are all done.
	fate      fate
	blobs     int64
	blobBytes int64
	ru        float64
	// err is why the item could not be decided: its write returns it,
	// which stops the run before its page is committed.
	err error
}

// page is one page of rows on its way through run: read, decided, its
// docs written through the pool, then committed (checkpointed) in order.
type page struct {
	items []item
	// next is where the table's read goes on after this page: the
	// checkpoint is its last row.
	next store.Cursor
	// pending counts the writes of the page not yet done; failed is set
	// when one of them failed.
	pending sync.WaitGroup
	failed  atomic.Bool
}

// process migrates table from its checkpoint to its end: it decides each
// page as it is read (rd), hands its docs to the pool, and commits
// (checkpoint) the pages in order once their writes are acknowledged.
func (r *runner) process(ctx context.Context, table string, ts *TableState, rd *tableRead) error {
	pctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	pool := newPool(pctx, r.flow)
	pages := make(chan *page, pagesInFlight)
	committed := make(chan error, 1)
	go r.commit(table, ts, pages, stop, committed)
	readErr := r.dispatch(pool, table, rd, pages)
	close(pages)
	werr := pool.Wait()
	err := passEnd(ctx, pool, werr, <-committed, readErr)
	if err == nil && !ts.Done {
		return fmt.Errorf("%s: reading stopped before the end of the table", table)
	}
	return err
}

// commit checkpoints the pages of table in order (commitInOrder); its
// error stops the pass and is sent to committed.
func (r *runner) commit(table string, ts *TableState, pages <-chan *page, stop context.CancelCauseFunc, committed chan<- error) {
	err := commitInOrder(pages, func(p *page) error { return r.checkpoint(table, ts, p) })
	if err != nil {
		stop(err)
	}
	committed <- err
}

// dispatch decides the rows of each page rd reads, in read order, hands
// the docs of the page (and the rows that could not be decided, whose
// write fails) to the pool, and passes the page on to the committer.
func (r *runner) dispatch(pool *pool, table string, rd *tableRead, pages chan<- *page) error {
	for p := range rd.pages {
		logPage(r.log, rd.table, rd.q, p)
		r.progress.Read(table, int64(len(p.Rows)))
		pg := &page{next: p.Next, items: make([]item, len(p.Rows))}
		for i, row := range p.Rows {
			pg.items[i] = r.item(row)
		}
		for i := range pg.items {
			if it := &pg.items[i]; it.err != nil || it.out.Disposition == transform.DispositionDoc {
				if err := r.goWrite(pool, table, pg, it); err != nil {
					return err
				}
			}
		}
		select {
		case pages <- pg:
		case <-pool.ctx.Done():
			return pool.ctx.Err()
		}
	}
	return rd.end()
}

// item decides one row in read order (decide), keeps what a dry run
// reports of it, and drops what it will no longer need.
func (r *runner) item(row transform.Row) item {
	it := item{row: row}
	if it.out, it.err = r.decide(row); it.err != nil {
		return it
	}
	r.planRow(&it)
	it.lighten()
	return it
}

// goWrite writes it, a row of pg, on the pool; a failed write marks pg,
// which is then never committed.
func (r *runner) goWrite(pool *pool, table string, pg *page, it *item) error {
	pg.pending.Add(1)
	err := pool.Go(func(ctx context.Context) error {
		defer pg.pending.Done()
		err := r.write(ctx, table, it)
		if err != nil {
			pg.failed.Store(true)
		}
		return err
	})
	if err != nil {
		pg.pending.Done() // the write never started
	}
	return err
}

// commitInOrder commits the pages in the order they come, each once its
// writes are done. It stops committing at the first page with a failed
// write, and at commit's first error (which it returns), but keeps
// receiving pages so that the sender never blocks.
func commitInOrder(pages <-chan *page, commit func(*page) error) error {
	var (
		err     error
		stopped bool
	)
	for p := range pages {
		p.pending.Wait()
		if stopped {
			continue
		}
		if p.failed.Load() {
			stopped = true // the write's error reaches run through the pool
			continue
		}
		if err = commit(p); err != nil {
			stopped = true
		}
	}
	return err
}

// write uploads the blobs a doc needs, then upserts the doc, each answer
// taken by its rule (settle): a refusal dead-letters the row (in it.fate);
// an error that stops the run is returned, naming the row.
func (r *runner) write(ctx context.Context, table string, it *item) error {
	if it.err != nil {
		return fmt.Errorf("%s %s/%s: %w", table, it.row.PartitionKey, it.row.RowKey, it.err)
	}
	o := &it.out
	var s step
	var err error
	if it.blobs, it.blobBytes, s, err = uploadBlobs(ctx, r.blobs, it.row, o.Uploads, &it.fate); s != stepOn {
		return err
	}
	res, err := r.docs.Upsert(ctx, o.Container, o.Scope, o.ID, o.DocJSON)
	if s, err := ruleUpsert.settle(err, "", &it.fate); s != stepOn {
		return wrapIf(err, fmt.Sprintf("%s %s/%s: write %s/%s", table, it.row.PartitionKey, it.row.RowKey, o.Container, o.ID))
	}
	it.ru = res.RequestCharge
	if !r.opts.DryRun {
		r.progress.Outcome(table, Outcome{Written: 1})
	}
	// The bytes are no longer needed; the page may wait for others.
	o.DocJSON, o.Uploads, it.row.Props = nil, nil, nil
	return nil
}

// lighten drops what an item decided will no longer need while its page
// waits to be committed (SPEC §14, Latency: the pages in flight bound the
// memory): the doc's tree once its JSON is made, and the row's
// properties unless a write or a dead letter still needs them (the
// index rows, four in five, are dropped). Its keys stay for the
// checkpoint.
func (it *item) lighten() {
	it.out.Doc = nil
	switch it.out.Disposition {
	case transform.DispositionDoc, transform.DispositionDeadLetter:
	default:
		it.row.Props = nil
	}
}

// checkpoint records a page whose writes are all acknowledged: its dead
// letters, its counts, and the new state.
func (r *runner) checkpoint(table string, ts *TableState, b *page) error {
	c, dls := r.countPage(table, b)
	if m := int64(r.opts.MaxErrors); m > 0 && len(dls) > 0 && r.deadLetters+int64(len(dls)) >= m {
		// Record the dead letters up to the limit, but do not checkpoint
		// this page: a resume truncates the file and does it again.
		dls = dls[:max(0, m-r.deadLetters)]
		if _, err := r.sink.Append(dls); err != nil {
			r.unsaved = true
			return err
		}
		r.deadLetters += int64(len(dls))
		return fmt.Errorf("%w: stopped after %d dead-lettered rows (--max-errors %d); the checkpoint is before the page of the last one", ErrTooManyDeadLetters, r.deadLetters, m)
	}
	mark, err := r.sink.Append(dls)
	if err != nil {
		r.unsaved = true
		return err
	}
	for _, dl := range dls {
		r.log("dead letter %s %s/%s: %s", dl.Table, dl.PartitionKey, dl.RowKey, dl.Reason)
	}
	r.deadLetters += int64(len(dls))
	ts.add(c)
	if n := len(b.items); n > 0 {
		last := b.items[n-1].row
		ts.LastPartitionKey, ts.LastRowKey = last.PartitionKey, last.RowKey
	}
	ts.Done = b.next.IsZero()
	r.state.DeadLetterBytes, r.state.DeadLetterSHA256 = mark.size, mark.sum
	r.state.Updated = r.now()
	if err := r.save(); err != nil {
		return err
	}
	if !r.opts.DryRun {
		r.log("checkpoint %s: %d rows done (%d docs, %d dead letters in all), state saved", table, ts.Rows, ts.disposition(string(transform.DispositionDoc)), r.deadLetters)
	}
	r.progress.Advance(table, int64(len(b.items)))
	if !r.opts.DryRun {
		r.progress.Outcome(table, Outcome{DeadLetters: int64(len(dls))})
	}
	if ts.Done {
		r.log("table %s: finished: %d rows (%d docs, %d dead letters)", table, ts.Rows,
			ts.disposition(string(transform.DispositionDoc)), ts.disposition(string(transform.DispositionDeadLetter)))
		r.progress.TableDone(table)
	}
	return nil
}

// countPage counts the items of a page by kind and disposition, with
// their warnings, blobs and request units, and returns its dead letters.
func (r *runner) countPage(table string, b *page) (Counts, []DeadLetter) {
	var (
		c   Counts
		dls []DeadLetter
	)
	for i := range b.items {
		it := &b.items[i]
		d := string(it.out.Disposition)
		if it.fate.deadLetter != "" {
			d = string(transform.DispositionDeadLetter)
			dls = append(dls, newDeadLetter(it.row, table, it.fate.deadLetter))
		} else if it.out.Disposition == transform.DispositionDeadLetter {
			dls = append(dls, newDeadLetter(it.row, table, it.out.DeadLetter))
		}
		c.Rows++
		c.count(it.out.Kind, d, 1)
		for _, w := range it.out.Warnings {
			c.warn(w.Reason, 1)
		}
		c.BlobsUploaded += it.blobs
		c.BlobBytes += it.blobBytes
		c.RequestCharge += it.ru
		if d == string(transform.DispositionDoc) {
			r.docsWritten++
			r.plan.EstimatedRU += 5 * ((int64(it.docSize) + 1023) / 1024)
			r.plan.EstimatedBytes += int64(it.docSize)
		}
	}
	return c, dls
}

// planRow records what a dry run reports about a row as soon as it is
// transformed: collisions, sanitized ids, results moving to blobs and
// samples. The doc size is kept for the estimates.
func (r *runner) planRow(it *item) {
	o := &it.out
	it.docSize = len(o.DocJSON)
	if !r.opts.DryRun {
		return
	}
	p := &r.plan
	if o.Collision {
		p.CollisionCount++
		if len(p.Collisions) < maxListed {
			p.Collisions = append(p.Collisions, Collision{Table: it.row.Table, PartitionKey: it.row.PartitionKey, RowKey: it.row.RowKey, Container: o.Container, Scope: o.Scope, ID: o.ID})
		}
	}
	if o.Disposition != transform.DispositionDoc {
		return
	}
	if o.RawID != o.ID {
		p.SanitizedCount++
		if len(p.SanitizedIDs) < maxListed {
			p.SanitizedIDs = append(p.SanitizedIDs, SanitizedID{Table: it.row.Table, PartitionKey: it.row.PartitionKey, RowKey: it.row.RowKey, RawID: o.RawID, ID: o.ID})
		}
	}
	for _, u := range o.Uploads {
		switch u.Blob {
		case transform.BlobResultJSON, transform.BlobResultHTML, transform.BlobResultText:
			p.ResultsToBlob++
			p.ResultsToBlobBytes += int64(len(u.Data))
		}
	}
	r.sample(it)
}

// sample keeps the redacted doc of it when its table and kind have fewer
// than opts.Show samples.
func (r *runner) sample(it *item) {
	key := it.row.Table + "\x00" + it.out.Kind
	if r.samples[key] >= r.opts.Show {
		return
	}
	r.samples[key]++
	if js, err := json.Marshal(transform.RedactDoc(it.out.Doc)); err == nil {
		r.plan.Samples = append(r.plan.Samples, Sample{Table: it.row.Table, Kind: it.out.Kind, Doc: js})
	}
}
