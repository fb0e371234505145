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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// Defaults of RunOptions.
const (
	DefaultConcurrency = 32
	DefaultStateDir    = ".bifrost-migrate"
)

// pagesInFlight bounds the pages transformed but not yet checkpointed:
// with the page being read ahead, at most pagesInFlight+2 pages of rows
// are in memory, whatever the table's size.
const pagesInFlight = 4

// RunOptions say what a run migrates and how.
type RunOptions struct {
	// Tables to migrate; they are always read in the order Config,
	// Entities, Relationships. Empty means all three.
	Tables []string
	// TablePrefix is put before each table name when reading (tests load
	// fixtures into tables of their own); it is part of the fingerprint.
	TablePrefix string
	// Transform are the options that change the docs. Transform.Now zero
	// means Deps.Now() at the start of the run.
	Transform transform.Options
	// Concurrency is the number of rows being written at once; 0 means
	// DefaultConcurrency.
	Concurrency int
	// StateDir holds state.json, dead-letter.jsonl and the lock file of
	// the run (LockFile); "" means DefaultStateDir.
	StateDir string
	// Restart discards a saved state and its dead letters and starts over.
	Restart bool
	// DryRun reads and transforms everything and writes nothing anywhere,
	// not even the state directory: it does not create it, read it or
	// take its lock, so it may run beside a run that holds it.
	DryRun bool
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
	// saved state is never resumed against another target.
	Target string
}

// Deps are the services and the clock a run uses.
type Deps struct {
	Source RowSource
	Docs   DocWriter
	Blobs  BlobStore
	// Progress may be nil.
	Progress Progress
	Now      func() time.Time
	// Log, when not nil, hears one line per page read, checkpoint and dead
	// letter (--log-file). The lines carry keys and reasons, never a
	// property's value. It is called from several goroutines.
	Log func(format string, args ...any)
}

// ErrTooManyDeadLetters is returned (wrapped) when --max-errors stops a
// run.
var ErrTooManyDeadLetters = errors.New("too many dead letters")

// FingerprintError is returned when a saved state was written with other
// options than the run's. Saved and Wanted are the two fingerprints
// (State.Fingerprint); Differences names the options that differ.
type FingerprintError struct {
	Dir           string
	Saved, Wanted string
}

// Error names the differing options as key=value (keys as in
// Differences), or, if none can be told apart, the two fingerprints.
func (e *FingerprintError) Error() string {
	diffs := e.Differences()
	if len(diffs) == 0 {
		return fmt.Sprintf("the saved run in %s used other options (%s) than this one (%s); run with the saved options to resume, or use --restart to start over", e.Dir, e.Saved, e.Wanted)
	}
	saved := make([]string, len(diffs))
	wanted := make([]string, len(diffs))
	for i, d := range diffs {
		saved[i] = d.Key + "=" + d.Saved
		wanted[i] = d.Key + "=" + d.Wanted
	}
	return fmt.Sprintf("the saved run in %s used %s, this run %s; run with the saved options to resume, or use --restart to start over", e.Dir, strings.Join(saved, " "), strings.Join(wanted, " "))
}

// Differences returns the options whose values differ between the saved
// fingerprint and this run's, in the order of this run's fingerprint,
// then those only the saved one has.
func (e *FingerprintError) Differences() []SettingDiff {
	return DiffFingerprints(e.Saved, e.Wanted)
}

// Setting is one option recorded in a run's fingerprint.
type Setting struct {
	// Key is the option's name: a transform option (blob-threshold,
	// execution-ttl, relationships, strict, as run's flags name them),
	// tables, table-prefix, or "target." followed by a part of
	// RunOptions.Target (e.g. target.database).
	Key   string
	Value string
}

// SettingDiff is an option whose value differs between two fingerprints;
// a value is empty where its fingerprint lacks the key.
type SettingDiff struct {
	Key           string
	Saved, Wanted string
}

// fingerprint is the text saved in State.Fingerprint: the transform
// options, the tables, the table prefix and the target. Its format is
// that of every state.json written so far; ParseFingerprint reads it.
func fingerprint(topts transform.Options, tables []string, tablePrefix, target string) string {
	return fmt.Sprintf("%s;tables=%s;table-prefix=%s;target=%s", topts.Fingerprint(), strings.Join(tables, ","), tablePrefix, target)
}

// ParseFingerprint splits a fingerprint into its settings, in order.
// Parts are "key=value" separated by ';'; everything after "target=" is
// the target, itself "key=value" parts (cosmos=…;database=…), returned
// with the key prefixed by "target.". A part without '=' is kept as a key
// with an empty value.
func ParseFingerprint(fp string) []Setting {
	var out []Setting
	inTarget := false
	for _, part := range strings.Split(fp, ";") {
		k, v, _ := strings.Cut(part, "=")
		switch {
		case inTarget:
			k = "target." + k
		case k == "target":
			inTarget = true
			if tk, tv, ok := strings.Cut(v, "="); ok {
				k, v = "target."+tk, tv
			}
		}
		out = append(out, Setting{Key: k, Value: v})
	}
	return out
}

// DiffFingerprints returns the settings whose values differ between the
// fingerprints saved and wanted (see FingerprintError.Differences).
func DiffFingerprints(saved, wanted string) []SettingDiff {
	s, w := ParseFingerprint(saved), ParseFingerprint(wanted)
	find := func(ss []Setting, key string) (string, bool) {
		for _, x := range ss {
			if x.Key == key {
				return x.Value, true
			}
		}
		return "", false
	}
	var out []SettingDiff
	for _, x := range w {
		if sv, _ := find(s, x.Key); sv != x.Value {
			out = append(out, SettingDiff{Key: x.Key, Saved: sv, Wanted: x.Value})
		}
	}
	for _, x := range s {
		if _, ok := find(w, x.Key); !ok && x.Value != "" {
			out = append(out, SettingDiff{Key: x.Key, Saved: x.Value})
		}
	}
	return out
}

// Run migrates the selected tables (SPEC §11): it lists container
// execution-data once, reads each table page by page from its checkpoint,
// transforms every row, uploads the blobs docs need and writes the docs
// through a pool of opts.Concurrency workers, and checkpoints after each
// page whose writes (and all earlier pages' writes) are acknowledged.
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
	return r.run(ctx)
}

// runner is one invocation of Run.
type runner struct {
	opts     RunOptions
	tables   []string // selected, in read order
	topts    transform.Options
	fp       string
	start    time.Time
	now      func() time.Time
	src      RowSource
	docs     DocWriter
	blobs    BlobStore
	progress Progress
	log      func(format string, args ...any)

	state   *State
	store   stateStore
	sink    deadLetterSink
	resumed bool

	blobIdx transform.BlobIndex
	ids     *transform.IDSet
	execs   transform.ExecutionSet

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
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.StateDir == "" {
		opts.StateDir = DefaultStateDir
	}
	if deps.Source == nil || deps.Docs == nil || deps.Blobs == nil {
		return nil, errors.New("migrate: Source, Docs and Blobs are required")
	}
	now, start, topts, err := startClock(deps.Now, opts.Transform)
	if err != nil {
		return nil, err
	}
	r := &runner{
		opts: opts, tables: tables, topts: topts, start: start, now: now,
		src: deps.Source, docs: deps.Docs, blobs: deps.Blobs, progress: deps.Progress, log: deps.Log,
		ids: transform.NewIDSet(), execs: transform.ExecutionSet{}, samples: map[string]int{},
	}
	if r.log == nil {
		r.log = func(string, ...any) {}
	}
	r.fp = fingerprint(topts, tables, opts.TablePrefix, opts.Target)
	if r.progress == nil {
		r.progress = nopProgress{}
	}
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
		r.resumed = true
		var done int64
		for _, ts := range st.Tables {
			done += ts.Rows
		}
		r.progress.Message(fmt.Sprintf("resuming run %s from its checkpoint of %s (%d rows done); use --restart to start over", st.RunID, st.Updated.UTC().Format(time.RFC3339), done))
	default:
		st = r.newState()
	}
	r.state = st
	sink, err := openDeadLetters(dir, st.DeadLetterBytes)
	if err != nil {
		return nil, err
	}
	r.sink = sink
	r.store = dirStore{dir: dir}
	for _, ts := range st.Tables {
		r.deadLetters += ts.disposition(string(transform.DispositionDeadLetter))
	}
	if err := r.store.Save(st); err != nil {
		return nil, err
	}
	return nil, nil
}

// run holds the state directory's lock (LockStateDir) for the whole run,
// --restart's removals and the loading of the state included, so that no
// other run or replay uses the directory meanwhile; a dry run, which
// neither reads nor writes the directory, takes no lock.
func (r *runner) run(ctx context.Context) (Summary, error) {
	return locked(r.opts.StateDir, "run", r.opts.DryRun, r.now, func() (Summary, error) { return r.work(ctx) })
}

// locked runs work holding the lock of the state directory dir for
// command (LockStateDir), and returns what work returns, with the
// release's error joined to its own; a dry run (which writes nothing
// there) takes no lock.
func locked[S any](dir, command string, dryRun bool, now func() time.Time, work func() (S, error)) (S, error) {
	if dryRun {
		return work()
	}
	release, err := LockStateDir(dir, command, now())
	if err != nil {
		var zero S
		return zero, err
	}
	s, err := work()
	if rerr := release(); rerr != nil {
		err = errors.Join(err, rerr)
	}
	return s, err
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

	var err error
	if r.blobIdx, err = listBlobs(ctx, r.blobs); err != nil {
		return r.summary(), err
	}

	countCtx, stopCount := context.WithCancel(ctx)
	var counting sync.WaitGroup
	defer counting.Wait()
	defer stopCount()
	if r.opts.CountRows {
		counting.Go(func() { r.count(countCtx) })
	}

	for _, table := range transform.Tables() {
		ts := r.state.table(table)
		switch {
		case ts == nil && table == transform.TableEntities && slices.Contains(r.tables, transform.TableRelationships):
			// Relationships without Entities: dangling-index detection
			// still needs the execution ids.
			err = r.scanExecutions(ctx)
		case ts == nil:
			continue
		case ts.Done:
			err = r.replay(ctx, table, ts, true)
			r.progress.Resumed(table, ts.Rows)
			r.progress.TableDone(table)
		default:
			if ts.Rows > 0 {
				if err = r.replay(ctx, table, ts, false); err != nil {
					break
				}
				r.progress.Resumed(table, ts.Rows)
			}
			err = r.process(ctx, table, ts)
		}
		if err != nil {
			return r.summary(), err
		}
	}
	r.state.Done = true
	r.state.Updated = r.now()
	if err := r.store.Save(r.state); err != nil {
		return r.summary(), err
	}
	return r.summary(), nil
}

func (r *runner) summary() Summary {
	s := buildSummary(r.state, r.tables)
	s.DryRun, s.Resumed, s.DocsWritten = r.opts.DryRun, r.resumed, r.docsWritten
	if r.opts.DryRun {
		s.RunID = ""
		ms := r.sink.(*memorySink)
		p := r.plan
		p.DeadLetters = ms.list
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
	}
	s.setElapsed(r.now().Sub(r.start))
	return s
}

// count pre-counts the selected tables, keys only, for the progress
// totals. Errors only cost the totals.
func (r *runner) count(ctx context.Context) {
	for _, t := range r.tables {
		n, err := r.src.Count(ctx, r.opts.TablePrefix+t, store.Query{})
		if err != nil {
			return
		}
		r.progress.Total(t, n)
	}
}

// scan reads table (under its prefixed name) from `from` to its end,
// calling fn for each page (store.Scan).
func (r *runner) scan(ctx context.Context, table string, q store.Query, from store.Cursor, fn func(store.Page) error) error {
	return store.Scan(ctx, r.src, r.opts.TablePrefix, table, q, from, fn)
}

// replay re-reads the rows of table before its checkpoint (all of them
// when whole) and transforms them without writing anything, so that
// collisions and dangling indexes are judged against every earlier row
// after a resume, exactly as in a run that was never interrupted.
func (r *runner) replay(ctx context.Context, table string, ts *TableState, whole bool) error {
	return r.scan(ctx, table, store.Query{}, store.Cursor{}, func(p store.Page) error {
		for _, row := range p.Rows {
			if !whole && transform.CompareKeys(row.PartitionKey, row.RowKey, ts.LastPartitionKey, ts.LastRowKey) > 0 {
				return store.ErrStop
			}
			r.decide(row)
		}
		return nil
	})
}

// scanExecutions records the execution ids of Entities, reading only
// what is needed for it.
func (r *runner) scanExecutions(ctx context.Context) error {
	q := store.Query{Select: []string{"PartitionKey", "RowKey", "ExecutionId"}}
	return r.scan(ctx, transform.TableEntities, q, store.Cursor{}, func(p store.Page) error {
		for _, row := range p.Rows {
			r.execs.AddRow(row)
		}
		return nil
	})
}

// decide transforms one row in read order: blob facts, the transform,
// collisions, execution ids and dangling indexes.
func (r *runner) decide(row transform.Row) transform.Outcome {
	var facts transform.BlobFacts
	if row.Table == transform.TableEntities {
		facts = r.blobIdx.Facts(transform.ExecutionID(row))
	}
	o := r.ids.Check(transform.Transform(row, facts, r.topts))
	switch {
	case row.Table == transform.TableEntities:
		r.execs.AddRow(row)
	case o.Disposition == transform.DispositionDroppedIndex && o.IndexExecutionID != "" && !r.execs.Has(o.IndexExecutionID):
		o.Warnings = append(o.Warnings, transform.Warning{Reason: transform.ReasonDanglingIndex, Detail: o.IndexExecutionID})
	}
	return o
}

// item is one row of a page on its way through the pipeline.
type item struct {
	row     transform.Row
	out     transform.Outcome
	docSize int
	// Set by the writer; read by the committer after the page's writes
	// are all done.
	deadLetter string
	blobs      int64
	blobBytes  int64
	ru         float64
}

// page is one page of rows on its way through the pipeline.
type page struct {
	items   []item
	next    store.Cursor
	pending sync.WaitGroup
	failed  atomic.Bool
}

// process migrates table from its checkpoint to its end: it transforms
// each page as it is read (the next one is read meanwhile), hands its docs
// to the pool of writers, and passes it on to the committer, which
// checkpoints pages in order once their writes are acknowledged.
func (r *runner) process(ctx context.Context, table string, ts *TableState) error {
	// The committer cancels the rest when it stops (--max-errors, a
	// failed state save).
	pctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	g, gctx := errgroup.WithContext(pctx)
	g.SetLimit(r.opts.Concurrency)

	inflight := make(chan *page, pagesInFlight)
	commitErr := make(chan error, 1)
	go func() {
		err := r.commit(table, ts, inflight)
		if err != nil {
			stop(err)
		}
		commitErr <- err
	}()

	scanErr := r.scan(gctx, table, store.Query{}, ts.Next.store(), func(p store.Page) error {
		r.log("page of %s read: %d rows, more to come: %v", table, len(p.Rows), !p.Next.IsZero())
		pg := &page{next: p.Next, items: make([]item, len(p.Rows))}
		for i, row := range p.Rows {
			it := &pg.items[i]
			it.row, it.out = row, r.decide(row)
			r.planRow(it)
		}
		for i := range pg.items {
			it := &pg.items[i]
			if it.out.Disposition != transform.DispositionDoc {
				continue
			}
			if err := gctx.Err(); err != nil {
				return err
			}
			pg.pending.Add(1)
			g.Go(func() error {
				defer pg.pending.Done()
				if err := r.write(gctx, table, it); err != nil {
					pg.failed.Store(true)
					return err
				}
				return nil
			})
		}
		select {
		case inflight <- pg:
			return nil
		case <-gctx.Done():
			return gctx.Err()
		}
	})
	close(inflight)
	werr := g.Wait()
	cerr := <-commitErr
	if gctx.Err() != nil && errors.Is(scanErr, gctx.Err()) {
		scanErr = nil // a consequence of a writer's, the committer's or the caller's stop
	}
	if err := errors.Join(scanErr, werr, cerr); err != nil {
		if cerr == nil && ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if !ts.Done {
		return fmt.Errorf("%s: reading stopped before the end of the table", table)
	}
	return nil
}

// write uploads the blobs a doc needs, then upserts the doc. A
// conflicting blob or a permanent write error dead-letters the row; other
// errors are returned, naming the row.
func (r *runner) write(ctx context.Context, table string, it *item) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o := &it.out
	var err error
	if it.blobs, it.blobBytes, it.deadLetter, err = uploadBlobs(ctx, r.blobs, it.row, o.Uploads); err != nil || it.deadLetter != "" {
		return err
	}
	res, err := r.docs.Upsert(ctx, o.Container, o.Scope, o.ID, o.DocJSON)
	var pe *store.PermanentError
	switch {
	case errors.As(err, &pe):
		it.deadLetter = fmt.Sprintf("Cosmos DB rejected the doc (%d): %s", pe.StatusCode, pe.Reason)
		return nil
	case err != nil:
		return fmt.Errorf("%s %s/%s: write %s/%s: %w", table, it.row.PartitionKey, it.row.RowKey, o.Container, o.ID, err)
	}
	it.ru = res.RequestCharge
	// The bytes are no longer needed; the page may wait for others.
	o.DocJSON, o.Doc, o.Uploads = nil, nil, nil
	return nil
}

// uploadBlobs uploads the blobs a row's doc needs, create-only and in
// order (SPEC §8), for run and replay alike. It returns how many blobs it
// created and their bytes (an identical blob already there is not
// counted); a blob that exists with other content makes the row a dead
// letter, whose reason it returns (not an error); any other failure is an
// error naming the row and the blob.
func uploadBlobs(ctx context.Context, blobs BlobStore, row transform.Row, uploads []transform.Upload) (created, bytes int64, deadLetter string, err error) {
	for _, u := range uploads {
		ok, err := blobs.PutIfAbsent(ctx, u.Path, u.Data, u.ContentType)
		switch {
		case errors.Is(err, store.ErrBlobConflict):
			return created, bytes, fmt.Sprintf("blob %s already exists with different content", u.Path), nil
		case err != nil:
			return created, bytes, "", fmt.Errorf("%s %s/%s: upload blob %s: %w", row.Table, row.PartitionKey, row.RowKey, u.Path, err)
		}
		if ok {
			created++
			bytes += int64(len(u.Data))
		}
	}
	return created, bytes, "", nil
}

// commit checkpoints the pages of table in order. It stops checkpointing
// at the first page with a failed write, and when --max-errors is reached,
// but keeps receiving pages so that the sender never blocks.
func (r *runner) commit(table string, ts *TableState, inflight <-chan *page) error {
	var (
		err     error
		stopped bool
	)
	for pg := range inflight {
		pg.pending.Wait()
		if stopped {
			continue
		}
		if pg.failed.Load() {
			// The write's error reaches process through the errgroup.
			stopped = true
			continue
		}
		if err = r.checkpoint(table, ts, pg); err != nil {
			stopped = true
		}
	}
	return err
}

// checkpoint records a page whose writes are all acknowledged: its dead
// letters, its counts, and the new state.
func (r *runner) checkpoint(table string, ts *TableState, pg *page) error {
	var (
		c   Counts
		dls []DeadLetter
	)
	for i := range pg.items {
		it := &pg.items[i]
		d := string(it.out.Disposition)
		if it.deadLetter != "" {
			d = string(transform.DispositionDeadLetter)
			dls = append(dls, newDeadLetter(it.row, table, it.deadLetter))
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
	if m := int64(r.opts.MaxErrors); m > 0 && len(dls) > 0 && r.deadLetters+int64(len(dls)) >= m {
		// Record the dead letters up to the limit, but do not checkpoint
		// this page: a resume truncates the file and does it again.
		dls = dls[:max(0, m-r.deadLetters)]
		if _, err := r.sink.Append(dls); err != nil {
			return err
		}
		r.deadLetters += int64(len(dls))
		return fmt.Errorf("%w: stopped after %d dead-lettered rows (--max-errors %d); the checkpoint is before the page of the last one", ErrTooManyDeadLetters, r.deadLetters, m)
	}
	size, err := r.sink.Append(dls)
	if err != nil {
		return err
	}
	for _, dl := range dls {
		r.log("dead letter %s %s/%s: %s", dl.Table, dl.PartitionKey, dl.RowKey, dl.Reason)
	}
	r.deadLetters += int64(len(dls))
	ts.add(c)
	ts.Next = cursorOf(pg.next)
	if n := len(pg.items); n > 0 {
		last := pg.items[n-1].row
		ts.LastPartitionKey, ts.LastRowKey = last.PartitionKey, last.RowKey
	}
	ts.Done = pg.next.IsZero()
	r.state.DeadLetterBytes = size
	r.state.Updated = r.now()
	if err := r.store.Save(r.state); err != nil {
		return err
	}
	if !r.opts.DryRun {
		r.log("checkpoint %s: %d rows done (%d docs, %d dead letters in all), state saved", table, ts.Rows, ts.disposition(string(transform.DispositionDoc)), r.deadLetters)
	}
	r.progress.Advance(table, int64(len(pg.items)))
	if ts.Done {
		r.progress.TableDone(table)
	}
	return nil
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
	key := it.row.Table + "\x00" + o.Kind
	if r.samples[key] < r.opts.Show {
		r.samples[key]++
		if js, err := json.Marshal(transform.RedactDoc(o.Doc)); err == nil {
			p.Samples = append(p.Samples, Sample{Table: it.row.Table, Kind: o.Kind, Doc: js})
		}
	}
}
