package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// ReplayDeadLetterFile is the dead-letter file of the last replay in the
// state directory: the format of dead-letter.jsonl (DeadLetter, one JSON
// line per row), in a file of its own so that a resumed run, which
// truncates dead-letter.jsonl to its checkpoint, never loses replay's
// lines. Each replay replaces it.
const ReplayDeadLetterFile = "replay-dead-letter.jsonl"

// ReplayOptions say what a replay reads and how it writes (SPEC §13).
// Force overwrites (and with Prune deletes) docs the application changed;
// Prune deletes docs carrying _migration whose source row no longer
// exists, when they are unchanged since the tool wrote them.
type ReplayOptions struct {
	Common
	WindowOptions
	// Tables to replay, read in the order Config, Entities,
	// Relationships; empty means all three.
	Tables []string
	// CountRows pre-counts the rows since Since, keys only, so that
	// Progress gets totals.
	CountRows bool
}

// ReplayDeps are the services a replay uses.
type ReplayDeps struct {
	Source RowSource
	Docs   DocStore
	Blobs  BlobStore
	// Query is needed with Prune only.
	Query DocQuerier
	Env
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

// Add adds o's counts to c, field by field (TestCountsAddEveryField).
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

// ReplaySummary is what a replay did (SPEC §13). Newest is the latest
// Timestamp of the rows read; Conflicts lists the first 1,000 conflicts
// (unresolved and forced) in row key order, while Totals.Conflicts and
// Totals.Forced count them all.
type ReplaySummary struct {
	WindowSummary
	Tables    []ReplayTableSummary `json:"tables"`
	Totals    ReplayCounts         `json:"totals"`
	Conflicts []Conflict           `json:"conflicts"`
	// RequestCharge sums the request units of reads and writes.
	RequestCharge float64 `json:"requestCharge"`
}

// maxConflictFields bounds the fields kept per conflict.
const maxConflictFields = 50

// Replay brings Cosmos DB up to date from the rows changed in the tables
// since opts.Since (SPEC §13). For each doc of a row it reads the doc and
// decides (decide), with optimistic concurrency on its _etag:
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
	h, err := holdWindow(r.opts.Common, r.opts.KeepDeadLetters, r.now(), "replay", ReplayDeadLetterFile)
	if err != nil {
		return ReplaySummary{}, err
	}
	r.ledger.sink = h.sink
	if r.ranges, err = loadRanges(r.opts.Common); err == nil {
		err = r.work(ctx)
	}
	return r.summary(), h.close(err)
}

// newReplayer checks that deps has the services opts need, and opts
// (whose defaults it fills), and returns the replay; nothing is read or
// written yet.
func newReplayer(opts ReplayOptions, deps ReplayDeps) (*replayer, error) {
	tables, err := transform.SelectTables(opts.Tables)
	if err != nil {
		return nil, err
	}
	if deps.Source == nil || deps.Docs == nil || deps.Blobs == nil {
		return nil, errors.New("migrate: Source, Docs and Blobs are required")
	}
	if err := checkWindow("ReplayOptions", &opts.WindowOptions, deps.Query != nil); err != nil {
		return nil, err
	}
	e := newEngine(&opts.Common, deps.Env)
	r := &replayer{engine: e, opts: opts, tables: tables, src: deps.Source, docs: deps.Docs, blobs: deps.Blobs, query: deps.Query,
		ids: transform.NewIDSet(), ledger: newLedger(opts.DryRun, e.log)}
	if opts.DryRun {
		r.docs, r.blobs = dryRunStore{inner: deps.Docs}, newDryRunBlobs(deps.Blobs)
	}
	return r, nil
}

// replayer is one invocation of Replay.
type replayer struct {
	engine
	opts   ReplayOptions
	tables []string
	src    RowSource
	// The Cosmos DB side, behind the dry run's decorators in a dry run.
	docs    DocStore
	blobs   BlobStore
	query   DocQuerier
	blobIdx transform.BlobIndex
	ranges  store.Ranges     // where the tables split (loadRanges)
	ids     *transform.IDSet // used by the reading goroutine only
	// ledger and book record what it did.
	ledger *ledger
	book   book[ReplayCounts, *ReplayCounts, Conflict]
}

// work is the replay proper: it lists the blob container once (blob
// facts), starts the pre-count, reads the tables' changes at once (every
// key range of every table: readTables) and replays each table in order,
// then prunes.
func (r *replayer) work(ctx context.Context) error {
	var err error
	if r.blobIdx, err = listBlobs(ctx, r.blobs); err != nil {
		return err
	}
	if r.opts.CountRows {
		defer precount(ctx, r.src, r.opts.TablePrefix, r.tables, store.Query{Since: r.opts.Since}, r.progress)()
	}
	scans := make([]scan, len(r.tables))
	for i, table := range r.tables {
		scans[i] = scan{table, store.Query{Since: r.opts.Since}}
	}
	reads, stop := readTables(ctx, r.src, r.opts.TablePrefix, r.ranges, scans)
	defer stop()
	for _, rd := range reads {
		r.log("reading %s: started", rd.table)
		if err := r.pass(ctx, rd); err != nil {
			return err
		}
		r.log("reading %s: finished", rd.table)
		r.progress.TableDone(rd.table)
	}
	stop()
	if !r.opts.Prune {
		return nil
	}
	r.log("prune: started")
	return r.prune(ctx)
}

// replayItem is one row on its way through replay.
type replayItem struct {
	row transform.Row
	out transform.Outcome
	res docResult
}

// pass replays the rows of one table changed since Since, which rd reads:
// it transforms them in read order (collisions within the window are
// judged as run judges them), applies their docs through the pool, and
// records each row.
func (r *replayer) pass(ctx context.Context, rd *tableRead) error {
	pool := newPool(ctx, r.flow)
	return pool.end(ctx, r.dispatch(pool, rd))
}

// dispatch transforms each row rd reads, in read order: a row with a doc
// goes to the pool, to be applied and recorded (replayRow); any other is
// recorded at once.
func (r *replayer) dispatch(pool *pool, rd *tableRead) error {
	return eachPage(pool, rd, func(p store.Page) error {
		logPage(r.log, rd.table, rd.q, p)
		for _, row := range p.Rows {
			it := &replayItem{row: row, out: r.ids.Check(transform.Transform(row, factsOf(r.blobIdx, row), r.topts))}
			var err error
			if it.out.Disposition == transform.DispositionDoc {
				err = pool.Go(func(ctx context.Context) error { return r.replayRow(ctx, it) })
			} else {
				err = r.record(it)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// replayRow applies the doc of one row (apply) and records the row.
func (r *replayer) replayRow(ctx context.Context, it *replayItem) error {
	if err := r.apply(ctx, it); err != nil {
		return err
	}
	return r.record(it)
}

// record counts the result of one row and records its dead letter, if
// any.
func (r *replayer) record(it *replayItem) error {
	row, o, res := it.row, it.out, it.res
	c, reason := ReplayCounts{Rows: 1}, ""
	e := entry{newest: row.Timestamp}
	var conflict *Conflict
	switch o.Disposition {
	case transform.DispositionDroppedIndex:
		c.DroppedIndex++
	case transform.DispositionKeptInTables:
		c.KeptInTables++
	case transform.DispositionExpired:
		c.Expired++
	case transform.DispositionDeadLetter:
		c.DeadLetters++
		reason = o.DeadLetter
	case transform.DispositionDoc:
		c.Add(res.counts())
		conflict = res.tally(&e)
		reason = res.deadLetter
	}
	for _, w := range o.Warnings {
		e.warnings = append(e.warnings, w.Reason)
	}
	if reason != "" {
		e.deadLetters = []DeadLetter{newDeadLetter(row, row.Table, reason)}
	}
	r.progress.Advance(row.Table, 1)
	if !r.opts.DryRun {
		r.progress.Outcome(row.Table, Outcome{Written: c.Writes(), DeadLetters: c.DeadLetters, Conflicts: c.Conflicts})
	}
	r.book.add(row.Table, o.Kind, c, conflict)
	return r.ledger.add(e)
}

func (r *replayer) summary() ReplaySummary {
	s := ReplaySummary{Tables: []ReplayTableSummary{}}
	s.WindowSummary = r.ledger.summary(r.opts.Common, r.opts.WindowOptions, r.opts.StateDir, ReplayDeadLetterFile, r.now().Sub(r.start))
	r.ledger.mu.Lock()
	s.RequestCharge = r.ledger.ru
	r.ledger.mu.Unlock()
	for _, table := range r.tables {
		kinds, sum := r.book.group(table)
		s.Tables = append(s.Tables, ReplayTableSummary{Table: table, Kinds: kinds, ReplayCounts: sum})
		s.Totals.Add(sum)
	}
	s.Conflicts = r.book.listed()
	slices.SortFunc(s.Conflicts, func(a, b Conflict) int {
		if c := transform.TableOrder(a.Table) - transform.TableOrder(b.Table); c != 0 {
			return c
		}
		return transform.CompareKeys(a.PartitionKey, a.RowKey, b.PartitionKey, b.RowKey)
	})
	return s
}
