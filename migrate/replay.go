package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// ReplayDeadLetterFile is the dead-letter file of the last replay in the
// state directory: the format of dead-letter.jsonl (DeadLetter, one JSON
// line per row), in a file of its own so that a resumed run, which
// truncates dead-letter.jsonl to its checkpoint, never loses replay's
// lines. Each replay replaces it.
const ReplayDeadLetterFile = "replay-dead-letter.jsonl"

// DefaultReplayAttempts is the default of ReplayOptions.MaxAttempts.
const DefaultReplayAttempts = 5

// DocStore is what replay needs of Cosmos DB: point reads and conditional
// writes (SPEC §13). *azure.CosmosDocs implements it. Implementations
// retry transient failures themselves, return a *store.PermanentError for what
// retrying cannot fix, and are safe for concurrent use.
type DocStore interface {
	// Read point-reads a doc; found is false (and err nil) when it does
	// not exist. etag is its _etag.
	Read(ctx context.Context, container, scope, id string) (doc []byte, etag string, found bool, charge float64, err error)
	// Create creates the doc; an existing doc gives an error wrapping
	// ErrExists.
	Create(ctx context.Context, container, scope, id string, doc []byte) (store.WriteResult, error)
	// Replace replaces the doc if its _etag is ifMatch: otherwise the
	// error wraps ErrPreconditionFailed, or ErrNotFound when it is gone.
	Replace(ctx context.Context, container, scope, id string, doc []byte, ifMatch string) (store.WriteResult, error)
	// Delete deletes the doc if its _etag is ifMatch, with the errors of
	// Replace.
	Delete(ctx context.Context, container, scope, id, ifMatch string) (store.WriteResult, error)
}

// DocQuerier lists the docs of a container in bulk (replay --prune).
// *azure.DocReader implements it; it is safe for concurrent use.
type DocQuerier interface {
	// QueryAll runs query over every partition of container and calls fn
	// with each doc's raw JSON, page by page.
	QueryAll(ctx context.Context, container, query string, params []store.QueryParam, pageSize int, fn func(doc []byte) error) error
}

// ReplayOptions say what a replay reads and how it writes (SPEC §13).
type ReplayOptions struct {
	// Since selects the rows whose Timestamp is at or after it (a filter
	// the Table service evaluates). Required.
	Since time.Time
	// Tables to replay, read in the order Config, Entities,
	// Relationships; empty means all three.
	Tables []string
	// TablePrefix is put before each table name when reading (tests).
	TablePrefix string
	// Transform must be the options of the run that migrated the data;
	// Transform.Now zero means Deps.Now() at the start.
	Transform transform.Options
	// Concurrency is the number of docs being replayed at once; 0 means
	// DefaultConcurrency.
	Concurrency int
	// StateDir receives ReplayDeadLetterFile, and is locked while the
	// replay runs (LockFile); "" means DefaultStateDir.
	StateDir string
	// DryRun reads everything, Cosmos DB included, and writes nothing
	// anywhere, the state directory included (no lock either); the
	// summary says what would have been written.
	DryRun bool
	// Force overwrites (and with Prune deletes) docs the application
	// changed, still with If-Match on the _etag read.
	Force bool
	// Prune deletes docs carrying _migration whose source row no longer
	// exists, when they are unchanged since the tool wrote them.
	Prune bool
	// MaxAttempts bounds the read-decide-write attempts per doc when
	// concurrent writers keep changing it (409, 412, 404 start over); 0
	// means DefaultReplayAttempts. A doc that runs out is dead-lettered.
	MaxAttempts int
	// CountRows pre-counts the rows since Since, keys only, so that
	// Progress gets totals.
	CountRows bool
	// KeepDeadLetters appends to ReplayDeadLetterFile instead of
	// replacing it (the later passes of --follow).
	KeepDeadLetters bool
}

// ReplayDeps are the services and the clock a replay uses.
type ReplayDeps struct {
	Source RowSource
	Docs   DocStore
	Blobs  BlobStore
	// Query is needed with Prune only.
	Query DocQuerier
	// Progress may be nil.
	Progress Progress
	Now      func() time.Time
	// Log, when not nil, hears one line per page read and dead letter
	// (--log-file), as Deps.Log does.
	Log func(format string, args ...any)
}

// ReplayCounts are what a replay did with the rows (and, for Pruned, the
// docs) of one table and kind.
type ReplayCounts struct {
	// Rows is the number of rows read (Timestamp ≥ since).
	Rows int64 `json:"rows"`
	// Created counts docs that did not exist; Replaced docs the tool had
	// written and nobody had changed, older than their row (or holding
	// its content under other provenance); Forced docs the application
	// had changed, overwritten because of --force.
	Created  int64 `json:"created"`
	Replaced int64 `json:"replaced"`
	Forced   int64 `json:"forced"`
	// Unchanged counts docs already as replay would write them, or
	// untouched docs not older than their row: nothing written.
	Unchanged int64 `json:"unchanged"`
	// Conflicts counts docs the application changed that were left as
	// they were (without --force): each is listed in ReplaySummary.Conflicts.
	Conflicts int64 `json:"conflicts"`
	// Pruned counts docs deleted because their row is gone (--prune):
	// unchanged ones, and with --force changed ones too; ForcedPrunes
	// counts those changed ones among them (each is also listed in
	// ReplaySummary.Conflicts, up to its limit).
	Pruned       int64 `json:"pruned"`
	ForcedPrunes int64 `json:"forcedPrunes"`
	// Start-overs: a 412 (the doc changed between read and write), a 409
	// (it was created meanwhile) or a 404 (it was deleted meanwhile).
	PreconditionFailed int64 `json:"preconditionFailed"`
	CreateConflicts    int64 `json:"createConflicts"`
	DocVanished        int64 `json:"docVanished"`
	// The other dispositions of the rows read (SPEC §5).
	DroppedIndex int64 `json:"droppedIndex"`
	KeptInTables int64 `json:"keptInTables"`
	Expired      int64 `json:"expired"`
	DeadLetters  int64 `json:"deadLetters"`
}

// Add adds o's counts to c.
func (c *ReplayCounts) Add(o ReplayCounts) {
	c.Rows += o.Rows
	c.Created += o.Created
	c.Replaced += o.Replaced
	c.Forced += o.Forced
	c.Unchanged += o.Unchanged
	c.Conflicts += o.Conflicts
	c.Pruned += o.Pruned
	c.ForcedPrunes += o.ForcedPrunes
	c.PreconditionFailed += o.PreconditionFailed
	c.CreateConflicts += o.CreateConflicts
	c.DocVanished += o.DocVanished
	c.DroppedIndex += o.DroppedIndex
	c.KeptInTables += o.KeptInTables
	c.Expired += o.Expired
	c.DeadLetters += o.DeadLetters
}

// Writes returns the number of docs written: created, replaced, forced
// and pruned.
func (c ReplayCounts) Writes() int64 { return c.Created + c.Replaced + c.Forced + c.Pruned }

// ReplayTableSummary is one table's part of a ReplaySummary: its totals
// and its counts per kind.
type ReplayTableSummary struct {
	Table string                  `json:"table"`
	Kinds map[string]ReplayCounts `json:"kinds"`
	ReplayCounts
}

// Conflict is a doc the application changed (or wrote) that replay did
// not overwrite, or overwrote only because of --force.
type Conflict struct {
	// The source row's keys.
	Table        string `json:"table"`
	PartitionKey string `json:"partitionKey"`
	RowKey       string `json:"rowKey"`
	// The doc.
	Container string `json:"container"`
	Scope     string `json:"scope"`
	ID        string `json:"id"`
	// Migrated is false when the doc carries no _migration (the
	// application wrote it).
	Migrated bool `json:"migrated"`
	// Reason says why the doc is a conflict; Resolution what replay did.
	Reason     string     `json:"reason"`
	Resolution Resolution `json:"resolution"`
	// Fields are the differing fields (at most maxConflictFields; their
	// number is FieldCount). Empty for a doc whose row is gone.
	Fields     []FieldDiff `json:"fields"`
	FieldCount int         `json:"fieldCount"`
}

// FieldDiff is one differing field of a conflict: the value the row gives
// (Tables) and the value in Cosmos DB (Cosmos), as JSON; nil when absent
// on that side. Redacted properties (SPEC §1) show "***".
type FieldDiff struct {
	Path   string          `json:"path"`
	Tables json.RawMessage `json:"tables,omitempty"`
	Cosmos json.RawMessage `json:"cosmos,omitempty"`
}

// ReplaySummary is what a replay did (SPEC §13).
type ReplaySummary struct {
	// Since is the window's start, in RFC 3339.
	Since  string               `json:"since"`
	DryRun bool                 `json:"dryRun"`
	Force  bool                 `json:"force"`
	Prune  bool                 `json:"prune"`
	Tables []ReplayTableSummary `json:"tables"`
	Totals ReplayCounts         `json:"totals"`
	// Warnings are the transform's warnings by reason, plus replay's own.
	Warnings map[string]int64 `json:"warnings"`
	// Conflicts lists the first 1,000 conflicts (unresolved and forced),
	// in row key order; Totals.Conflicts and Totals.Forced count them
	// all.
	Conflicts []Conflict `json:"conflicts"`
	// DeadLetterFile holds the dead letters (empty in a dry run, which
	// lists them, without their rows, in DeadLetters).
	DeadLetterFile string       `json:"deadLetterFile,omitempty"`
	DeadLetters    []DeadLetter `json:"deadLetters,omitempty"`
	// BlobsUploaded and BlobBytes count the blobs created (in a dry run:
	// that would be created).
	BlobsUploaded int64 `json:"blobsUploaded"`
	BlobBytes     int64 `json:"blobBytes"`
	// RequestCharge sums the request units of reads and writes.
	RequestCharge  float64 `json:"requestCharge"`
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	// Newest is the latest Timestamp of the rows read (absent when none):
	// where the next pass of --follow starts, less the skew.
	Newest *time.Time `json:"newest,omitempty"`
}

// maxConflictFields bounds the fields kept per conflict.
const maxConflictFields = 50

// Replay brings Cosmos DB up to date from the rows changed in the tables
// since opts.Since (SPEC §13). For each doc of a row it reads the doc and
// decides, with optimistic concurrency on its _etag:
//
//   - no doc: create it; a 409 starts over;
//   - the doc already holds the row's content and provenance: nothing;
//   - the doc holds the row's content under other provenance, or the tool
//     wrote it, nobody changed it since (its _migration.hash matches its
//     content) and its _migration.timestamp is older than the row's:
//     replace it with If-Match; a 412 or 404 starts over;
//   - the doc's _migration names another row: dead letter (an id
//     collision with a row outside the window);
//   - the application changed it (no _migration, or the hash does not
//     match): a conflict, left as it is, unless opts.Force.
//
// Start-overs are bounded by opts.MaxAttempts; a doc that runs out is
// dead-lettered. With opts.Prune it then deletes unchanged migrated docs
// whose row no longer exists. Blobs are uploaded (create-only) just
// before the doc that needs them is written. Replay keeps no checkpoint:
// every decision is made from what is in Cosmos DB now, so running it
// again after an interruption simply finishes the work, and a second
// replay of the same window writes nothing.
//
// It returns the summary and an error when it could not finish (a read
// failed, a write failed in a way retrying did not fix, ctx was
// cancelled); conflicts and dead letters are in the summary, not errors.
// It is safe to run alongside the application. Unless opts.DryRun, it
// holds the lock of opts.StateDir (LockStateDir, command "replay") until
// it returns; when another process (a run or a replay) holds it, Replay
// returns a *StateDirBusyError at once, having changed nothing.
func Replay(ctx context.Context, opts ReplayOptions, deps ReplayDeps) (ReplaySummary, error) {
	r, err := newReplayer(opts, deps)
	if err != nil {
		return ReplaySummary{}, err
	}
	return r.run(ctx)
}

// replayer is one invocation of Replay.
type replayer struct {
	opts     ReplayOptions
	tables   []string
	topts    transform.Options
	start    time.Time
	now      func() time.Time
	src      RowSource
	docs     DocStore
	blobs    BlobStore
	query    DocQuerier
	progress Progress
	log      func(format string, args ...any)

	blobIdx transform.BlobIndex
	ids     *transform.IDSet // used by the reading goroutine only

	mu        sync.Mutex // guards everything below
	sink      deadLetterSink
	newest    time.Time                           // the latest Timestamp read
	counts    map[string]map[string]*ReplayCounts // table → kind
	warnings  map[string]int64
	conflicts []Conflict
	blobsUp   int64
	blobBytes int64
	ru        float64
}

func newReplayer(opts ReplayOptions, deps ReplayDeps) (*replayer, error) {
	tables, err := transform.SelectTables(opts.Tables)
	if err != nil {
		return nil, err
	}
	switch {
	case opts.Since.IsZero():
		return nil, errors.New("migrate: ReplayOptions.Since is required")
	case deps.Source == nil || deps.Docs == nil || deps.Blobs == nil:
		return nil, errors.New("migrate: Source, Docs and Blobs are required")
	case opts.Prune && deps.Query == nil:
		return nil, errors.New("migrate: Query is required with Prune")
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.StateDir == "" {
		opts.StateDir = DefaultStateDir
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultReplayAttempts
	}
	now, start, topts, err := startClock(deps.Now, opts.Transform)
	if err != nil {
		return nil, err
	}
	r := &replayer{
		opts: opts, tables: tables, topts: topts, start: start, now: now,
		src: deps.Source, docs: deps.Docs, blobs: deps.Blobs, query: deps.Query, progress: deps.Progress, log: deps.Log,
		ids: transform.NewIDSet(), counts: map[string]map[string]*ReplayCounts{}, warnings: map[string]int64{},
	}
	if r.log == nil {
		r.log = func(string, ...any) {}
	}
	if r.progress == nil {
		r.progress = nopProgress{}
	}
	if opts.DryRun {
		r.docs = dryRunStore{inner: deps.Docs}
		r.blobs = newDryRunBlobs(deps.Blobs)
	}
	return r, nil
}

// run holds the state directory's lock (LockStateDir) for the whole
// replay, as Run does; a dry run, which writes nothing there, takes none.
func (r *replayer) run(ctx context.Context) (ReplaySummary, error) {
	return locked(r.opts.StateDir, "replay", r.opts.DryRun, r.now, func() (ReplaySummary, error) { return r.work(ctx) })
}

// work is the replay proper: every selected table, then the prune.
func (r *replayer) work(ctx context.Context) (ReplaySummary, error) {
	sink, err := deadLetters(r.opts.StateDir, ReplayDeadLetterFile, r.opts.DryRun, r.opts.KeepDeadLetters)
	if err != nil {
		return ReplaySummary{}, err
	}
	r.sink = sink
	defer r.sink.Close()

	if r.blobIdx, err = listBlobs(ctx, r.blobs); err != nil {
		return r.summary(), err
	}
	since := store.Query{Since: r.opts.Since}
	if r.opts.CountRows {
		// The pre-count ends (cancelled, if need be) before Replay
		// returns, so Progress hears nothing afterwards.
		countCtx, stop := context.WithCancel(ctx)
		var counting sync.WaitGroup
		defer counting.Wait()
		defer stop()
		counting.Add(1)
		go func() {
			defer counting.Done()
			for _, t := range r.tables {
				n, err := r.src.Count(countCtx, r.opts.TablePrefix+t, since)
				if err != nil {
					return
				}
				r.progress.Total(t, n)
			}
		}()
	}
	for _, table := range r.tables {
		if err := r.replayTable(ctx, table, since); err != nil {
			return r.summary(), err
		}
		r.progress.TableDone(table)
	}
	if r.opts.Prune {
		if err := r.prune(ctx); err != nil {
			return r.summary(), err
		}
	}
	return r.summary(), nil
}

// deadLetters is where replay and reverse record their dead letters: the
// file name in the state directory dir (replaced, or with keep added
// to), or for a dry run, which writes nothing, a list in memory.
func deadLetters(dir, name string, dryRun, keep bool) (deadLetterSink, error) {
	if dryRun {
		return &memorySink{}, nil
	}
	return openDeadLetterFile(dir, name, keep)
}

// openDeadLetterFile creates (or empties, unless keep) the dead-letter
// file name in dir.
func openDeadLetterFile(dir, name string, keep bool) (*fileSink, error) {
	flags := os.O_RDWR | os.O_CREATE | os.O_TRUNC
	if keep {
		flags = os.O_RDWR | os.O_CREATE | os.O_APPEND
	}
	f, err := os.OpenFile(filepath.Join(dir, name), flags, 0o600)
	if err != nil {
		return nil, fmt.Errorf("dead letters: %w", err)
	}
	size := int64(0)
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	return &fileSink{f: f, size: size}, nil
}

// scan reads table (its prefixed name) from the start with q, calling fn
// per page (store.Scan).
func (r *replayer) scan(ctx context.Context, table string, q store.Query, fn func(store.Page) error) error {
	return store.Scan(ctx, r.src, r.opts.TablePrefix, table, q, store.Cursor{}, fn)
}

// replayTable replays the rows of table that q selects: transforms them in
// read order (collisions within the window are judged as run judges them)
// and applies their docs through the pool.
func (r *replayer) replayTable(ctx context.Context, table string, q store.Query) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.opts.Concurrency)
	err := r.scan(gctx, table, q, func(p store.Page) error {
		r.log("page of %s read: %d rows changed since %s, more to come: %v", table, len(p.Rows), r.opts.Since.Format(time.RFC3339), !p.Next.IsZero())
		for _, row := range p.Rows {
			var facts transform.BlobFacts
			if table == transform.TableEntities {
				facts = r.blobIdx.Facts(transform.ExecutionID(row))
			}
			o := r.ids.Check(transform.Transform(row, facts, r.topts))
			if o.Disposition != transform.DispositionDoc {
				if err := r.record(row, o, docResult{}); err != nil {
					return err
				}
				continue
			}
			if err := gctx.Err(); err != nil {
				return err
			}
			g.Go(func() error {
				res, err := r.apply(gctx, row, o)
				if err != nil {
					return err
				}
				return r.record(row, o, res)
			})
		}
		return nil
	})
	werr := g.Wait()
	if werr != nil {
		return werr
	}
	return err
}

// docResult is what replay did with one doc: the last verdict it acted on
// (a doc that changed between the read and the write is read and judged
// again), the conflict when it is one, or the dead-letter reason that
// replaced it; a warning, the start-overs, the blobs it created and the
// request units it used.
type docResult struct {
	verdict          verdict
	conflict         *Conflict
	deadLetter       string
	warning          string
	e412, e409, e404 int64
	blobs, bytes     int64
	ru               float64
}

// wantedOf is what the row's doc o says, for decide.
func wantedOf(row transform.Row, o transform.Outcome) (wantedDoc, error) {
	w := wantedDoc{row: source{row.Table, row.PartitionKey, row.RowKey}, timestamp: row.Timestamp}
	mig, _ := o.Doc.Get("_migration")
	if md, ok := mig.(transform.Doc); ok {
		h, _ := md.Get("hash")
		w.hash, _ = h.(string)
	}
	var err error
	w.migration, err = transform.Canonical(mig)
	return w, err
}

// apply replays one doc: read it, decide, write with optimistic
// concurrency; a doc that changed meanwhile (409, 412, 404) is read and
// judged again, at most opts.MaxAttempts times.
func (r *replayer) apply(ctx context.Context, row transform.Row, o transform.Outcome) (docResult, error) {
	var res docResult
	where := func(op string) string {
		return fmt.Sprintf("%s %s/%s: %s %s/%s", row.Table, row.PartitionKey, row.RowKey, op, o.Container, o.ID)
	}
	want, err := wantedOf(row, o)
	if err != nil {
		return res, fmt.Errorf("%s: _migration: %w", where("replay"), err)
	}
	uploaded := false
	for attempt := 1; attempt <= r.opts.MaxAttempts; attempt++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		raw, etag, found, ru, err := r.docs.Read(ctx, o.Container, o.Scope, o.ID)
		res.ru += ru
		var pe *store.PermanentError
		switch {
		case errors.As(err, &pe):
			res.deadLetter = fmt.Sprintf("Cosmos DB refused to read the doc (%d): %s", pe.StatusCode, pe.Reason)
			return res, nil
		case err != nil:
			return res, fmt.Errorf("%s: %w", where("read"), err)
		}
		var s docState
		if found {
			if s, err = readDocState(raw); err != nil {
				return res, fmt.Errorf("%s: %w", where("decode"), err)
			}
		}
		res.verdict, res.conflict = decide(found, s, want, r.opts.Force), nil
		switch res.verdict {
		case verdictUnchanged:
			return res, nil
		case verdictNotOlder:
			res.warning = "doc differs but is not older than its row (other transform options?)"
			return res, nil
		case verdictCollision:
			from := s.source()
			res.deadLetter = fmt.Sprintf("%s; the doc there was migrated from %s %s/%s",
				transform.CollisionReason(o.Container, o.Scope, o.ID), from.table, from.partitionKey, from.rowKey)
			return res, nil
		case verdictConflict, verdictForce:
			res.conflict = r.conflict(row, o, s, res.verdict.resolution())
			if res.verdict == verdictConflict {
				return res, nil
			}
		}
		if !uploaded {
			created, bytes, dl, err := uploadBlobs(ctx, r.blobs, row, o.Uploads)
			res.blobs, res.bytes = res.blobs+created, res.bytes+bytes
			if err != nil || dl != "" {
				res.deadLetter = dl
				return res, err
			}
			uploaded = true
		}
		var wr store.WriteResult
		op := "replace"
		if res.verdict == verdictCreate {
			op = "create"
			wr, err = r.docs.Create(ctx, o.Container, o.Scope, o.ID, o.DocJSON)
		} else {
			wr, err = r.docs.Replace(ctx, o.Container, o.Scope, o.ID, o.DocJSON, etag)
		}
		res.ru += wr.RequestCharge
		if done, err := res.startOver(err, "Cosmos DB rejected the doc"); done {
			return res, wrapIf(err, where(op))
		}
	}
	res.deadLetter = fmt.Sprintf("the doc kept changing during replay: gave up after %d attempts (%d × 412, %d × 409, %d × 404); replay again",
		r.opts.MaxAttempts, res.e412, res.e409, res.e404)
	return res, nil
}

// startOver sorts the outcome of a write: done with no error (written),
// not done (412, 409 or 404: counted, read and decide again), done with a
// dead letter (a permanent error; its reason starts with rejected), or
// done with an error to return.
func (res *docResult) startOver(err error, rejected string) (done bool, ferr error) {
	var pe *store.PermanentError
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrExists):
		res.e409++
	case errors.Is(err, store.ErrPreconditionFailed):
		res.e412++
	case errors.Is(err, store.ErrNotFound):
		res.e404++
	case errors.As(err, &pe):
		res.deadLetter = fmt.Sprintf("%s (%d): %s", rejected, pe.StatusCode, pe.Reason)
		return true, nil
	default:
		return true, err
	}
	return false, nil
}

// wrapIf prefixes a non-nil err with where.
func wrapIf(err error, where string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", where, err)
}

// conflict describes a doc the application changed, with its differing
// fields against the row's doc.
func (r *replayer) conflict(row transform.Row, o transform.Outcome, s docState, res Resolution) *Conflict {
	c := &Conflict{
		Table: row.Table, PartitionKey: row.PartitionKey, RowKey: row.RowKey,
		Container: o.Container, Scope: o.Scope, ID: o.ID, Migrated: s.hasMig,
		Reason: "the application changed the doc after it was migrated", Resolution: res,
	}
	if !s.hasMig {
		c.Reason = "the application wrote the doc (it has no _migration)"
	}
	want, err := transform.DecodeDoc(o.DocJSON)
	if err != nil { // cannot happen: Transform wrote it
		return c
	}
	diffs := diffDocs(want, s.m)
	c.FieldCount = len(diffs)
	c.Fields = diffs[:min(len(diffs), maxConflictFields)]
	return c
}

// record counts the result of one row and appends its dead letter, if
// any. Failing to record a dead letter stops the replay, as it stops a
// run: a row must never be dropped without a trace.
func (r *replayer) record(row transform.Row, o transform.Outcome, res docResult) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.count(row.Table, o.Kind)
	c.Rows++
	if row.Timestamp.After(r.newest) {
		r.newest = row.Timestamp
	}
	reason := ""
	switch o.Disposition {
	case transform.DispositionDroppedIndex:
		c.DroppedIndex++
	case transform.DispositionKeptInTables:
		c.KeptInTables++
	case transform.DispositionExpired:
		c.Expired++
	case transform.DispositionDeadLetter:
		reason = o.DeadLetter
	case transform.DispositionDoc:
		r.tally(c, res)
		reason = res.deadLetter
	}
	for _, w := range o.Warnings {
		r.warnings[w.Reason]++
	}
	r.progress.Advance(row.Table, 1)
	return r.deadLetter(c, row, reason)
}

// deadLetter records a dead letter of row in c and the file (nothing when
// reason is empty); the caller holds mu.
func (r *replayer) deadLetter(c *ReplayCounts, row transform.Row, reason string) error {
	if reason == "" {
		return nil
	}
	c.DeadLetters++
	r.log("dead letter %s %s/%s: %s", row.Table, row.PartitionKey, row.RowKey, reason)
	if _, err := r.sink.Append([]DeadLetter{newDeadLetter(row, row.Table, reason)}); err != nil {
		return fmt.Errorf("%s %s/%s: record the dead letter: %w", row.Table, row.PartitionKey, row.RowKey, err)
	}
	return nil
}

// tally adds a doc's result to c (the caller holds mu). A doc that ended
// as a dead letter counts only as that.
func (r *replayer) tally(c *ReplayCounts, res docResult) {
	if res.deadLetter == "" {
		switch res.verdict {
		case verdictCreate:
			c.Created++
		case verdictReplace, verdictRefresh:
			c.Replaced++
		case verdictForce:
			c.Forced++
		case verdictUnchanged, verdictNotOlder:
			c.Unchanged++
		case verdictConflict, verdictPruneConflict:
			c.Conflicts++
		case verdictPrune:
			c.Pruned++
		case verdictPruneForce:
			c.Pruned++
			c.ForcedPrunes++
		}
		if res.conflict != nil && len(r.conflicts) < maxListed {
			r.conflicts = append(r.conflicts, *res.conflict)
		}
	}
	c.PreconditionFailed += res.e412
	c.CreateConflicts += res.e409
	c.DocVanished += res.e404
	if res.warning != "" {
		r.warnings[res.warning]++
	}
	r.blobsUp += res.blobs
	r.blobBytes += res.bytes
	r.ru += res.ru
}

func (r *replayer) count(table, kind string) *ReplayCounts { return countsOf(r.counts, table, kind) }

// countsOf returns the counts of kind in group (a table or a container)
// of m, made on first use.
func countsOf[C any](m map[string]map[string]*C, group, kind string) *C {
	if m[group] == nil {
		m[group] = map[string]*C{}
	}
	c := m[group][kind]
	if c == nil {
		c = new(C)
		m[group][kind] = c
	}
	return c
}

func (r *replayer) summary() ReplaySummary {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := ReplaySummary{
		Since: r.opts.Since.UTC().Format(time.RFC3339Nano), DryRun: r.opts.DryRun, Force: r.opts.Force, Prune: r.opts.Prune,
		Tables: []ReplayTableSummary{}, Warnings: r.warnings, Conflicts: slices.Clone(r.conflicts),
		BlobsUploaded: r.blobsUp, BlobBytes: r.blobBytes, RequestCharge: r.ru,
	}
	if s.Conflicts == nil {
		s.Conflicts = []Conflict{}
	}
	slices.SortFunc(s.Conflicts, func(a, b Conflict) int {
		if c := transform.TableOrder(a.Table) - transform.TableOrder(b.Table); c != 0 {
			return c
		}
		return transform.CompareKeys(a.PartitionKey, a.RowKey, b.PartitionKey, b.RowKey)
	})
	for _, t := range r.tables {
		ts := ReplayTableSummary{Table: t, Kinds: map[string]ReplayCounts{}}
		for k, c := range r.counts[t] {
			ts.Kinds[k] = *c
			ts.ReplayCounts.Add(*c)
		}
		s.Totals.Add(ts.ReplayCounts)
		s.Tables = append(s.Tables, ts)
	}
	if ms, ok := r.sink.(*memorySink); ok {
		s.DeadLetters = slices.Clone(ms.list)
	} else if r.sink != nil {
		s.DeadLetterFile = filepath.Join(r.opts.StateDir, ReplayDeadLetterFile)
	}
	s.ElapsedSeconds = r.now().Sub(r.start).Seconds()
	if !r.newest.IsZero() {
		newest := r.newest
		s.Newest = &newest
	}
	return s
}

// pruneCandidate is a migrated doc whose row was not found.
type pruneCandidate struct {
	table, pk, rk    string
	container, scope string
	id               string
}

// prune deletes unchanged migrated docs whose source row no longer
// exists. It reads the keys of every selected table into a compact set,
// lists the migrated docs of both containers in bulk, and for each doc
// whose row is not in the set checks the row once more (it may have been
// added since) before deleting the doc with If-Match.
func (r *replayer) prune(ctx context.Context) error {
	r.progress.Message("prune: reading the keys of the tables")
	rows := map[[16]byte]struct{}{}
	keysOnly := store.Query{Select: []string{"PartitionKey", "RowKey"}}
	for _, t := range r.tables {
		err := r.scan(ctx, t, keysOnly, func(p store.Page) error {
			for _, row := range p.Rows {
				rows[rowKeyHash(t, row.PartitionKey, row.RowKey)] = struct{}{}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	r.progress.Message("prune: listing migrated docs")
	var cands []pruneCandidate
	err := listMigrated(ctx, r.query, func(c string, src source, scope, id string) {
		if !slices.Contains(r.tables, src.table) {
			return
		}
		if _, ok := rows[rowKeyHash(src.table, src.partitionKey, src.rowKey)]; ok {
			return
		}
		cands = append(cands, pruneCandidate{table: src.table, pk: src.partitionKey, rk: src.rowKey, container: c, scope: scope, id: id})
	})
	if err != nil {
		return err
	}
	clear(rows)
	r.progress.Message(fmt.Sprintf("prune: %d migrated doc(s) whose row is gone", len(cands)))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.opts.Concurrency)
	for _, pc := range cands {
		g.Go(func() error {
			res, err := r.pruneOne(gctx, pc)
			if err != nil {
				return err
			}
			if res.verdict == verdictNone && res.deadLetter == "" && res.e412+res.e404 == 0 {
				return nil
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			c := r.count(pc.table, transform.Kind(pc.rk))
			r.tally(c, res)
			return r.deadLetter(c, transform.Row{Table: pc.table, PartitionKey: pc.pk, RowKey: pc.rk}, res.deadLetter)
		})
	}
	return g.Wait()
}

// listMigrated calls fn, for every doc of both containers that carries
// _migration, with its container, the source row _migration names, and
// the doc's scope and id. It reads every doc (a query of the whole
// containers).
func listMigrated(ctx context.Context, q DocQuerier, fn func(container string, src source, scope, id string)) error {
	for _, c := range []string{transform.ContainerEntities, transform.ContainerExecutions} {
		err := q.QueryAll(ctx, c, "SELECT * FROM c", nil, 0, func(raw []byte) error {
			m, err := transform.DecodeDoc(raw)
			if err != nil {
				return fmt.Errorf("container %s: undecodable doc: %w", c, err)
			}
			if mig, ok := m["_migration"].(map[string]any); ok {
				fn(c, source{replayString(mig["table"]), replayString(mig["partitionKey"]), replayString(mig["rowKey"])},
					replayString(m["scope"]), replayString(m["id"]))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// pruneOne deletes one candidate when its row is still gone and the doc
// is unchanged (or --force), with If-Match; a 412 reads and decides again.
func (r *replayer) pruneOne(ctx context.Context, pc pruneCandidate) (docResult, error) {
	var res docResult
	where := fmt.Sprintf("prune %s/%s/%s", pc.container, pc.scope, pc.id)
	row := source{pc.table, pc.pk, pc.rk}
	for attempt := 1; attempt <= r.opts.MaxAttempts; attempt++ {
		exists, err := r.rowExists(ctx, pc.table, pc.pk, pc.rk)
		if err != nil {
			return res, fmt.Errorf("%s: %w", where, err)
		}
		var (
			raw   []byte
			etag  string
			found bool
			s     docState
		)
		if !exists {
			var ru float64
			raw, etag, found, ru, err = r.docs.Read(ctx, pc.container, pc.scope, pc.id)
			res.ru += ru
			if err != nil {
				return res, fmt.Errorf("%s: %w", where, err)
			}
			if found {
				if s, err = readDocState(raw); err != nil {
					return res, fmt.Errorf("%s: %w", where, err)
				}
			}
		}
		res.verdict, res.conflict = decidePrune(exists, found, s, row, r.opts.Force), nil
		switch res.verdict {
		case verdictNone:
			return res, nil
		case verdictPruneConflict, verdictPruneForce:
			res.conflict = &Conflict{Table: pc.table, PartitionKey: pc.pk, RowKey: pc.rk, Container: pc.container, Scope: pc.scope, ID: pc.id,
				Migrated: true, Reason: "its row was deleted from the tables, but the application changed the doc after it was migrated",
				Resolution: res.verdict.resolution(), Fields: []FieldDiff{}}
			if res.verdict == verdictPruneConflict {
				return res, nil
			}
		}
		wr, err := r.docs.Delete(ctx, pc.container, pc.scope, pc.id, etag)
		res.ru += wr.RequestCharge
		if errors.Is(err, store.ErrNotFound) {
			res.e404++
			res.verdict = verdictNone // deleted meanwhile: nothing left to do
			return res, nil
		}
		if done, err := res.startOver(err, fmt.Sprintf("prune: Cosmos DB refused to delete %s/%s/%s", pc.container, pc.scope, pc.id)); done {
			return res, wrapIf(err, where)
		}
	}
	res.deadLetter = fmt.Sprintf("prune: the doc %s/%s/%s kept changing: gave up after %d attempts", pc.container, pc.scope, pc.id, r.opts.MaxAttempts)
	return res, nil
}

// rowExists looks one row up by its keys.
func (r *replayer) rowExists(ctx context.Context, table, pk, rk string) (bool, error) {
	_, found, err := store.Lookup(ctx, r.src, r.opts.TablePrefix, table, store.Key{PartitionKey: pk, RowKey: rk}, "PartitionKey", "RowKey")
	return found, err
}

func rowKeyHash(table, pk, rk string) [16]byte {
	return transform.BlobKey(table + "\x00" + pk + "\x00" + rk)
}

// replayString returns a decoded JSON string's value, or "" for anything
// else.
func replayString(v any) string {
	s, _ := v.(string)
	return s
}

// dryRunStore is the DocStore of a dry run: reads go to the real store,
// writes do nothing and succeed. It is safe for concurrent use.
type dryRunStore struct{ inner DocStore }

func (d dryRunStore) Read(ctx context.Context, container, scope, id string) ([]byte, string, bool, float64, error) {
	return d.inner.Read(ctx, container, scope, id)
}

func (dryRunStore) Create(context.Context, string, string, string, []byte) (store.WriteResult, error) {
	return store.WriteResult{}, nil
}

func (dryRunStore) Replace(context.Context, string, string, string, []byte, string) (store.WriteResult, error) {
	return store.WriteResult{}, nil
}

func (dryRunStore) Delete(context.Context, string, string, string, string) (store.WriteResult, error) {
	return store.WriteResult{}, nil
}
