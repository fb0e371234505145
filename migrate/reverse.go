package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// ReverseDeadLetterFile is the dead-letter file of the last reverse in the
// state directory, in the format of dead-letter.jsonl: the keys of the row
// the doc would have written (or the doc's place), and "doc", which names
// the doc; the doc itself stays in Cosmos DB. Each reverse replaces it;
// the passes of --follow add to it.
const ReverseDeadLetterFile = "reverse-dead-letter.jsonl"

// ChangeFeed reads what changed in the containers of Cosmos DB.
// *azure.DocReader implements it; it is safe for concurrent use.
type ChangeFeed interface {
	// Changes calls fn with the latest version of each doc of container
	// changed after position from, pageSize docs at most per request, and
	// returns the position after them. Deletes are not changes it
	// reports; a doc can come twice.
	Changes(ctx context.Context, container, from string, pageSize int, fn func(doc []byte) error) (next string, err error)
}

// ChangePosition returns the position of the change feed at t (every doc
// whose _ts ≥ t rounded down to the second). It is set by cmd to
// azure.ChangeFeedSince, which migrate does not import.
type ChangePosition func(t time.Time) string

// RowStore is what reverse needs of Table Storage: pages and single rows
// (store.PageReader) and conditional writes of the Table service's
// annotated JSON (transform.EncodeEntity). *azure.TableWriter with an
// *azure.TableReader implements it; it is safe for concurrent use.
type RowStore interface {
	store.PageReader
	// Insert creates the row; one that exists gives an error wrapping
	// store.ErrExists. It returns the row's ETag.
	Insert(ctx context.Context, table string, entity []byte) (etag string, err error)
	// Replace replaces the row whose ETag is ifMatch: otherwise the error
	// wraps store.ErrPreconditionFailed, or store.ErrNotFound when it is
	// gone. It returns the row's new ETag.
	Replace(ctx context.Context, table string, entity []byte, ifMatch string) (etag string, err error)
	// Delete deletes the row whose ETag is ifMatch, with the errors of
	// Replace.
	Delete(ctx context.Context, table string, key store.Key, ifMatch string) error
}

// ReverseOptions say what a reverse reads and how it writes (SPEC §15).
type ReverseOptions struct {
	// Since selects the docs changed at or after it. Required.
	Since time.Time
	// TablePrefix is put before each table name (tests).
	TablePrefix string
	// Transform must be the options of the run that migrated the data;
	// Transform.Now zero means Deps.Now() at the start.
	Transform transform.Options
	// Concurrency is the number of docs written back at once; 0 means
	// DefaultConcurrency.
	Concurrency int
	// StateDir receives ReverseDeadLetterFile; "" means DefaultStateDir.
	StateDir string
	// DryRun reads everything and writes nothing anywhere.
	DryRun bool
	// Force writes rows that changed in the tables after their doc was
	// migrated, while the doc changed too (conflicts), still with If-Match.
	Force bool
	// Prune deletes the rows whose doc carried _migration and is gone from
	// Cosmos DB, unless it expired by its ttl.
	Prune bool
	// MaxAttempts bounds the read-decide-write attempts per doc when a
	// row or the doc keeps changing meanwhile; 0 means
	// DefaultReplayAttempts.
	MaxAttempts int
	// KeepDeadLetters appends to ReverseDeadLetterFile (--follow).
	KeepDeadLetters bool
}

// ReverseDeps are the services and the clock a reverse uses.
type ReverseDeps struct {
	Changes ChangeFeed
	// Position gives the change feed's position at Since.
	Position ChangePosition
	Rows     RowStore
	// Docs reads docs and records the sync on them (_migration, with
	// If-Match on their _etag).
	Docs  DocStore
	Blobs BlobStore
	// Query lists every doc (Prune only).
	Query DocQuerier
	// Progress may be nil; it hears containers as tables.
	Progress Progress
	Now      func() time.Time
	// Log, when not nil, hears a line per dead letter and conflict.
	Log func(format string, args ...any)
}

// ReverseCounts are what a reverse did with the changed docs of one
// container and kind.
type ReverseCounts struct {
	// Docs counts the changed docs read.
	Docs int64 `json:"docs"`
	// Unchanged counts docs that came from the tables and that nobody
	// changed since (their _migration.hash matches their content):
	// nothing to write.
	Unchanged int64 `json:"unchanged"`
	// Synced counts docs whose rows now hold what the doc says, written
	// or already so; Forced those written over a conflict (--force).
	Synced int64 `json:"synced"`
	Forced int64 `json:"forced"`
	// RowsWritten counts main rows inserted or replaced; IndexWritten and
	// IndexDeleted an execution's index rows.
	RowsWritten  int64 `json:"rowsWritten"`
	IndexWritten int64 `json:"indexWritten"`
	IndexDeleted int64 `json:"indexDeleted"`
	// Conflicts counts docs left unwritten because their row changed in
	// the tables too (each listed in ReverseSummary.Conflicts, up to its
	// limit).
	Conflicts int64 `json:"conflicts"`
	// Pruned counts rows deleted because their doc is gone (--prune).
	Pruned int64 `json:"pruned"`
	// StartOvers counts 412, 409 and 404 answers that made reverse read
	// and decide again.
	StartOvers  int64 `json:"startOvers"`
	DeadLetters int64 `json:"deadLetters"`
}

// Add adds o to c.
func (c *ReverseCounts) Add(o ReverseCounts) {
	c.Docs += o.Docs
	c.Unchanged += o.Unchanged
	c.Synced += o.Synced
	c.Forced += o.Forced
	c.RowsWritten += o.RowsWritten
	c.IndexWritten += o.IndexWritten
	c.IndexDeleted += o.IndexDeleted
	c.Conflicts += o.Conflicts
	c.Pruned += o.Pruned
	c.StartOvers += o.StartOvers
	c.DeadLetters += o.DeadLetters
}

// Writes counts the rows written or deleted.
func (c ReverseCounts) Writes() int64 {
	return c.RowsWritten + c.IndexWritten + c.IndexDeleted + c.Pruned
}

// ReverseContainerSummary is one container's part of a ReverseSummary.
type ReverseContainerSummary struct {
	Container string                   `json:"container"`
	Kinds     map[string]ReverseCounts `json:"kinds"`
	ReverseCounts
}

// ReverseConflict is a doc whose row changed in the tables after the doc
// was migrated while the doc changed too.
type ReverseConflict struct {
	Container string `json:"container"`
	Scope     string `json:"scope"`
	ID        string `json:"id"`
	// The row.
	Table        string `json:"table"`
	PartitionKey string `json:"partitionKey"`
	RowKey       string `json:"rowKey"`
	// Reason says why; Resolution what reverse did (not written, or
	// overwritten with --force).
	Reason     string     `json:"reason"`
	Resolution Resolution `json:"resolution"`
	// Properties are the names of the row's properties the doc would
	// change (never their values: some are secrets).
	Properties []string `json:"properties"`
}

// PlannedWrite is one write a dry run would do.
type PlannedWrite struct {
	Action       string `json:"action"` // insert, replace, delete
	Table        string `json:"table"`
	PartitionKey string `json:"partitionKey"`
	RowKey       string `json:"rowKey"`
}

// ReverseSummary is what a reverse did (SPEC §15).
type ReverseSummary struct {
	Since      string                    `json:"since"`
	DryRun     bool                      `json:"dryRun"`
	Force      bool                      `json:"force"`
	Prune      bool                      `json:"prune"`
	Containers []ReverseContainerSummary `json:"containers"`
	Totals     ReverseCounts             `json:"totals"`
	// Warnings are the reverse transform's warnings by reason.
	Warnings map[string]int64 `json:"warnings"`
	// Conflicts lists the first 1,000 conflicts, in doc order.
	Conflicts []ReverseConflict `json:"conflicts"`
	// DeadLetterFile holds the dead letters (a dry run lists them in
	// DeadLetters instead).
	DeadLetterFile string       `json:"deadLetterFile,omitempty"`
	DeadLetters    []DeadLetter `json:"deadLetters,omitempty"`
	// Plan lists the first 1,000 writes of a dry run.
	Plan []PlannedWrite `json:"plan,omitempty"`
	// BlobsUploaded and BlobBytes count the blobs created.
	BlobsUploaded int64 `json:"blobsUploaded"`
	BlobBytes     int64 `json:"blobBytes"`
	// Newest is the latest change read (a doc's _ts); absent when none.
	Newest         *time.Time `json:"newest,omitempty"`
	ElapsedSeconds float64    `json:"elapsedSeconds"`
}

// Reverse writes back to Table Storage what the application changed in
// Cosmos DB since opts.Since (SPEC §15). For each changed doc of both
// containers:
//
//   - a doc whose _migration.hash matches its content came from the tables
//     and nobody changed it: nothing to do;
//   - otherwise transform.ReverseDoc computes its row (and an execution's
//     index rows); a row that changed in the tables after the doc was
//     migrated is a conflict, left as it is unless opts.Force;
//   - rows are inserted, or replaced with If-Match on the ETag just read,
//     only when they differ from what the table holds (an unchanged row
//     keeps its Timestamp); stale index rows are deleted with If-Match;
//   - then the doc's _migration records the sync (the row's keys, its new
//     Timestamp, the doc's hash), with If-Match on the doc's _etag, so the
//     next pass finds nothing to do.
//
// A 412, 409 or 404 between a read and a write makes it read and decide
// again, opts.MaxAttempts times at most; a doc that keeps changing is
// dead-lettered. Keys Table Storage forbids, and docs that cannot be
// written back, are dead-lettered with the reason. It returns the summary,
// and an error when it could not finish (a read or write failing beyond
// retries, ctx ending); conflicts and dead letters are in the summary.
func Reverse(ctx context.Context, opts ReverseOptions, deps ReverseDeps) (ReverseSummary, error) {
	r, err := newReverser(opts, deps)
	if err != nil {
		return ReverseSummary{}, err
	}
	return r.run(ctx)
}

// reverser is one invocation of Reverse.
type reverser struct {
	opts     ReverseOptions
	topts    transform.Options
	start    time.Time
	now      func() time.Time
	changes  ChangeFeed
	position ChangePosition
	rows     RowStore
	docs     DocStore
	blobs    BlobStore
	query    DocQuerier
	progress Progress
	log      func(format string, args ...any)
	// written holds the ETag of each row this reverse wrote (rowID → the
	// ETag the write returned); see ours.
	written sync.Map
	// docLocks serialize the docs of one stripe: a doc the change feed
	// sends twice is applied once at a time.
	docLocks [64]sync.Mutex

	mu        sync.Mutex // guards everything below
	sink      deadLetterSink
	counts    map[string]map[string]*ReverseCounts // container → kind
	warnings  map[string]int64
	conflicts []ReverseConflict
	plan      []PlannedWrite
	blobsUp   int64
	blobBytes int64
	newest    time.Time
}

func newReverser(opts ReverseOptions, deps ReverseDeps) (*reverser, error) {
	switch {
	case opts.Since.IsZero():
		return nil, errors.New("migrate: ReverseOptions.Since is required")
	case deps.Changes == nil || deps.Position == nil || deps.Rows == nil || deps.Docs == nil || deps.Blobs == nil:
		return nil, errors.New("migrate: Changes, Position, Rows, Docs and Blobs are required")
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
	r := &reverser{
		opts: opts, topts: topts, start: start, now: now,
		changes: deps.Changes, position: deps.Position, rows: deps.Rows, docs: deps.Docs, blobs: deps.Blobs, query: deps.Query,
		progress: deps.Progress, log: deps.Log,
		counts: map[string]map[string]*ReverseCounts{}, warnings: map[string]int64{},
	}
	if r.progress == nil {
		r.progress = nopProgress{}
	}
	if r.log == nil {
		r.log = func(string, ...any) {}
	}
	if opts.DryRun {
		r.docs = dryRunStore{inner: deps.Docs}
		r.rows = dryRunRows{inner: deps.Rows}
		r.blobs = newDryRunBlobs(deps.Blobs)
	}
	return r, nil
}

// run holds the state directory's lock (LockStateDir) for the whole
// reverse, as Run does; a dry run, which writes nothing there, takes none.
func (r *reverser) run(ctx context.Context) (ReverseSummary, error) {
	return locked(r.opts.StateDir, "reverse", r.opts.DryRun, r.now, func() (ReverseSummary, error) { return r.work(ctx) })
}

// work is the reverse proper: both containers, then the prune.
func (r *reverser) work(ctx context.Context) (ReverseSummary, error) {
	sink, err := deadLetters(r.opts.StateDir, ReverseDeadLetterFile, r.opts.DryRun, r.opts.KeepDeadLetters)
	if err != nil {
		return ReverseSummary{}, err
	}
	r.sink = sink
	defer r.sink.Close()
	if r.opts.DryRun {
		// The dry run's blob decorator answers from one listing.
		if _, err := listBlobs(ctx, r.blobs); err != nil {
			return r.summary(), err
		}
	}
	for _, c := range []string{transform.ContainerEntities, transform.ContainerExecutions} {
		if err := r.reverseContainer(ctx, c); err != nil {
			return r.summary(), err
		}
		r.progress.TableDone(c)
	}
	if r.opts.Prune {
		if err := r.prune(ctx); err != nil {
			return r.summary(), err
		}
	}
	return r.summary(), nil
}

// reverseContainer writes back the changed docs of container c through
// the pool.
func (r *reverser) reverseContainer(ctx context.Context, c string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.opts.Concurrency)
	// The feed starts at Since rounded down to the second, the resolution
	// of _ts: a doc changed within that second, before Since, comes too
	// (harmless: one that came from the tables unchanged is skipped).
	_, err := r.changes.Changes(gctx, c, r.position(r.opts.Since), 0, func(raw []byte) error {
		if err := gctx.Err(); err != nil {
			return err
		}
		g.Go(func() error {
			info := infoOf(raw)
			h := fnv.New32a()
			_, _ = io.WriteString(h, info.scope+"\x00"+info.id)
			lock := &r.docLocks[h.Sum32()%uint32(len(r.docLocks))]
			lock.Lock()
			res, err := r.apply(gctx, c, raw, info)
			lock.Unlock()
			if err != nil {
				return err
			}
			return r.record(c, res)
		})
		return nil
	})
	if werr := g.Wait(); werr != nil {
		return werr
	}
	if err != nil {
		return fmt.Errorf("read the changes of container %s: %w", c, err)
	}
	return nil
}

// revResult is what reverse did with one doc.
type revResult struct {
	kind       string
	scope, id  string    // the doc's
	ts         time.Time // the doc's _ts
	unchanged  bool
	wrote      bool // rows were written by an attempt on this doc
	synced     bool
	forced     bool
	conflict   *ReverseConflict
	deadLetter string
	dlRow      transform.Row // the dead letter's row: the doc's keys, or the row's
	warnings   []transform.Warning
	counts     ReverseCounts // rows written, start-overs
	blobs      int64
	bytes      int64
	plan       []PlannedWrite
}

// docInfo is what reverse reads of a doc for its own bookkeeping.
type docInfo struct {
	scope, id, typ, etag string
	ts                   time.Time
}

func infoOf(raw []byte) docInfo {
	var p struct {
		Scope string  `json:"scope"`
		ID    string  `json:"id"`
		Type  string  `json:"type"`
		ETag  string  `json:"_etag"`
		TS    float64 `json:"_ts"`
	}
	_ = json.Unmarshal(raw, &p) // a doc that does not decode is dead-lettered by apply
	i := docInfo{scope: p.Scope, id: p.ID, typ: p.Type, etag: p.ETag}
	if p.TS > 0 {
		i.ts = time.Unix(int64(p.TS), 0).UTC()
	}
	return i
}

// apply writes back one doc of container c (info: what infoOf read of
// raw): decide, write the rows with
// optimistic concurrency, record the sync on the doc; a row or the doc
// changing meanwhile makes it read and decide again.
func (r *reverser) apply(ctx context.Context, c string, raw []byte, info docInfo) (revResult, error) {
	res := revResult{kind: info.typ, ts: info.ts, scope: info.scope, id: info.id}
	where := fmt.Sprintf("doc %s/%s/%s", c, info.scope, info.id)
	res.dlRow = transform.Row{Table: c, PartitionKey: info.scope, RowKey: info.id}
	for attempt := 1; attempt <= r.opts.MaxAttempts; attempt++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		done, err := r.attempt(ctx, c, raw, info, &res)
		if err != nil {
			return res, fmt.Errorf("%s: %w", where, err)
		}
		if done {
			return res, nil
		}
		res.counts.StartOvers++
		// Read the doc again: it may have changed meanwhile.
		doc, _, found, _, err := r.docs.Read(ctx, c, info.scope, info.id)
		if err != nil {
			return res, fmt.Errorf("%s: read again: %w", where, err)
		}
		if !found {
			return res, nil // deleted meanwhile: nothing to write back
		}
		raw, info = doc, infoOf(doc)
	}
	res.deadLetter = fmt.Sprintf("the doc or its rows kept changing during reverse: gave up after %d attempts; reverse again", r.opts.MaxAttempts)
	return res, nil
}

// attempt is one read-decide-write of a doc; done is false when a 412,
// 409 or 404 says to start over.
func (r *reverser) attempt(ctx context.Context, c string, raw []byte, info docInfo, res *revResult) (done bool, err error) {
	res.conflict, res.forced, res.unchanged = nil, false, false
	doc, err := transform.DecodeDocOrdered(raw)
	if err != nil {
		res.deadLetter = fmt.Sprintf("%s: %v", transform.ReverseBadDoc, err)
		return true, nil
	}
	mig, hasMig, err := transform.DocMigration(doc)
	if err != nil {
		res.deadLetter = fmt.Sprintf("%s: %v", transform.ReverseBadDoc, err)
		return true, nil
	}
	hash, err := transform.Hash(doc)
	if err != nil {
		res.deadLetter = fmt.Sprintf("%s: %v", transform.ReverseUnencodable, err)
		return true, nil
	}
	// Unchanged since the tool wrote it — unless an earlier attempt on
	// this doc wrote rows (an older copy of the doc, then a start-over):
	// then its rows are made to hold this version.
	if hasMig && hash == mig.Hash && !res.wrote {
		res.unchanged = true
		return true, nil
	}
	key, dl := transform.DocRowRef(doc)
	if dl != nil {
		res.deadLetter = fmt.Sprintf("%s: %s", dl.Reason, dl.Detail)
		return true, nil
	}
	res.dlRow = transform.Row{Table: key.Table, PartitionKey: key.PartitionKey, RowKey: key.RowKey}
	existing, found, err := store.Lookup(ctx, r.rows, r.opts.TablePrefix, key.Table, store.Key{PartitionKey: key.PartitionKey, RowKey: key.RowKey})
	if err != nil {
		return true, err
	}
	var current *transform.Row
	if found {
		current = &existing
	}
	out, err := transform.ReverseDoc(doc, current, r.topts)
	if err != nil {
		return true, err
	}
	if out.DeadLetter != nil {
		res.deadLetter = fmt.Sprintf("%s: %s", out.DeadLetter.Reason, out.DeadLetter.Detail)
		return true, nil
	}
	res.warnings = out.Warnings
	// A row that already holds what the doc says is no conflict, whoever
	// wrote it (a reverse killed before it recorded the sync wrote it),
	// and neither is a row this reverse wrote.
	if found && !r.ours(existing) && rowChanged(existing, mig, hasMig) && len(transform.DiffRows(existing, out.Row)) > 0 {
		cf := &ReverseConflict{Container: c, Scope: info.scope, ID: info.id, Table: key.Table, PartitionKey: key.PartitionKey, RowKey: key.RowKey,
			Reason: "the row changed in the tables after the doc was migrated, and the application changed the doc too", Properties: transform.DiffRows(existing, out.Row)}
		if !hasMig {
			cf.Reason = "the application wrote the doc in Cosmos DB, and the tables hold a row under its keys"
		}
		res.conflict = cf
		if !r.opts.Force {
			cf.Resolution = NotWritten
			return true, nil
		}
		cf.Resolution = Overwritten
		res.forced = true
	}
	created, bytes, reason, err := uploadBlobs(ctx, r.blobs, res.dlRow, out.Uploads)
	res.blobs, res.bytes = res.blobs+created, res.bytes+bytes
	if err != nil || reason != "" {
		res.deadLetter = reason
		return true, err
	}
	// The index rows first, then the stale ones, and the doc's own row
	// last: until it is written, the existing row still names the stale
	// index rows, so a start-over or a rerun after a kill finds them
	// again. A 409, 412 or 404 on any of them starts the doc over.
	for _, ix := range out.Index {
		cur, found, err := store.Lookup(ctx, r.rows, r.opts.TablePrefix, ix.Table, store.Key{PartitionKey: ix.PartitionKey, RowKey: ix.RowKey})
		if err != nil {
			return true, err
		}
		var curp *transform.Row
		if found {
			curp = &cur
		}
		if _, done, err := r.put(ctx, ix, curp, true, res); !done || err != nil || res.deadLetter != "" {
			return done, err
		}
	}
	for _, d := range out.Delete {
		if done, err := r.remove(ctx, d, res); !done || err != nil || res.deadLetter != "" {
			return done, err
		}
	}
	ts, done, err := r.put(ctx, out.Row, current, false, res)
	if !done || err != nil || res.deadLetter != "" {
		return done, err
	}
	// Record the sync on the doc, so that the next pass skips it.
	m := transform.Migration{Table: key.Table, PartitionKey: key.PartitionKey, RowKey: key.RowKey, Timestamp: transform.FormatTimestamp(ts), Hash: hash}
	if hasMig && mig == m {
		res.synced = true // already recorded (a start-over that found its rows right)
		return true, nil
	}
	synced, err := withMigration(doc, m)
	if err != nil {
		return true, err
	}
	_, err = r.docs.Replace(ctx, c, info.scope, info.id, synced, info.etag)
	var pe *store.PermanentError
	switch {
	case err == nil, errors.Is(err, store.ErrNotFound): // deleted since: its rows are written
	case errors.Is(err, store.ErrPreconditionFailed):
		return false, nil // the doc changed since it was read: again
	case errors.As(err, &pe):
		res.deadLetter = fmt.Sprintf("Cosmos DB refused to record the sync on the doc (its rows are written): %v", err)
		return true, nil
	default:
		return true, fmt.Errorf("record the sync: %w", err)
	}
	res.synced = true
	return true, nil
}

// rowChanged reports whether the row changed in the tables after the doc
// was migrated from it: its Timestamp is newer than the doc's
// _migration.timestamp. A doc without _migration whose keys hold a row
// counts as changed: the two were written apart.
func rowChanged(row transform.Row, mig transform.Migration, hasMig bool) bool {
	if !hasMig {
		return true
	}
	t, ok := transform.ParseTimestamp(mig.Timestamp)
	return !ok || row.Timestamp.After(t)
}

// rowID is the key of a row in reverser.written.
func rowID(table, pk, rk string) string { return table + "\x00" + pk + "\x00" + rk }

// ours reports whether row is as this reverse wrote it (its ETag, or the
// time the ETag carries, is the one the write returned): a later attempt
// on the same doc, or a second copy of the doc in the change feed, does
// not take the tool's own write for a change in the tables.
func (r *reverser) ours(row transform.Row) bool {
	v, ok := r.written.Load(rowID(row.Table, row.PartitionKey, row.RowKey))
	if !ok {
		return false
	}
	etag := v.(string)
	if etag == row.ETag {
		return true
	}
	t, ok := etagTime(etag)
	return ok && t.Equal(row.Timestamp)
}

// refused is the dead-letter reason of a write the Table service refused
// for good (a *store.PermanentError: a value or a row it does not accept),
// or "" for any other error.
func refused(err error) string {
	var pe *store.PermanentError
	if errors.As(err, &pe) {
		return fmt.Sprintf("Table Storage refused the row: %v", err)
	}
	return ""
}

// put writes row (an execution's index row when index) unless cur (the
// row the table holds, nil when none) already holds the same: insert, or
// replace with If-Match on cur's ETag. It returns the row's Timestamp
// after the write (cur's when nothing was written). done is false when a
// 409, 412 or 404 says to start over; a row the service refuses for good
// makes the doc a dead letter (res.deadLetter, done, no error).
func (r *reverser) put(ctx context.Context, row transform.Row, cur *transform.Row, index bool, res *revResult) (ts time.Time, done bool, err error) {
	if cur != nil && len(transform.DiffRows(*cur, row)) == 0 {
		return cur.Timestamp, true, nil
	}
	row.ETag, row.Timestamp = "", time.Time{}
	entity := transform.EncodeEntity(row)
	var etag string
	action := "insert"
	if cur == nil {
		etag, err = r.rows.Insert(ctx, r.opts.TablePrefix+row.Table, entity)
	} else {
		action = "replace"
		etag, err = r.rows.Replace(ctx, r.opts.TablePrefix+row.Table, entity, cur.ETag)
	}
	switch {
	case errors.Is(err, store.ErrExists), errors.Is(err, store.ErrPreconditionFailed), errors.Is(err, store.ErrNotFound):
		return time.Time{}, false, nil
	case refused(err) != "":
		res.deadLetter = fmt.Sprintf("%s %s %s/%s: %s", action, row.Table, row.PartitionKey, row.RowKey, refused(err))
		return time.Time{}, true, nil
	case err != nil:
		return time.Time{}, true, fmt.Errorf("%s %s %s/%s: %w", action, row.Table, row.PartitionKey, row.RowKey, err)
	}
	r.written.Store(rowID(row.Table, row.PartitionKey, row.RowKey), etag)
	res.wrote = true
	if index {
		res.counts.IndexWritten++
	} else {
		res.counts.RowsWritten++
	}
	res.plan = append(res.plan, PlannedWrite{Action: action, Table: row.Table, PartitionKey: row.PartitionKey, RowKey: row.RowKey})
	if t, ok := etagTime(etag); ok {
		return t, true, nil
	}
	if r.opts.DryRun {
		return r.now(), true, nil
	}
	// The ETag did not say when: read the row back. Gone already, or
	// changed since (its ETag is not ours): start over.
	back, found, err := store.Lookup(ctx, r.rows, r.opts.TablePrefix, row.Table, store.Key{PartitionKey: row.PartitionKey, RowKey: row.RowKey})
	if err != nil {
		return time.Time{}, true, err
	}
	if !found || back.ETag != etag {
		return time.Time{}, false, nil
	}
	return back.Timestamp, true, nil
}

// remove deletes a stale row when it is there, with If-Match on the ETag
// just read; done is false when a 412 says to start over; a delete the
// service refuses for good makes the doc a dead letter.
func (r *reverser) remove(ctx context.Context, ref transform.RowRef, res *revResult) (done bool, err error) {
	cur, found, err := store.Lookup(ctx, r.rows, r.opts.TablePrefix, ref.Table, store.Key{PartitionKey: ref.PartitionKey, RowKey: ref.RowKey}, "PartitionKey", "RowKey")
	if err != nil || !found {
		return true, err
	}
	err = r.rows.Delete(ctx, r.opts.TablePrefix+ref.Table, store.Key{PartitionKey: ref.PartitionKey, RowKey: ref.RowKey}, cur.ETag)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return true, nil
	case errors.Is(err, store.ErrPreconditionFailed):
		return false, nil
	case refused(err) != "":
		res.deadLetter = fmt.Sprintf("delete %s %s/%s: %s", ref.Table, ref.PartitionKey, ref.RowKey, refused(err))
		return true, nil
	case err != nil:
		return true, fmt.Errorf("delete %s %s/%s: %w", ref.Table, ref.PartitionKey, ref.RowKey, err)
	}
	res.counts.IndexDeleted++
	res.plan = append(res.plan, PlannedWrite{Action: "delete", Table: ref.Table, PartitionKey: ref.PartitionKey, RowKey: ref.RowKey})
	return true, nil
}

// etagTime is the time a Table service ETag carries:
// W/"datetime'2026-11-21T12%3A00%3A00.1234567Z'".
func etagTime(etag string) (time.Time, bool) {
	_, rest, ok := strings.Cut(etag, "datetime'")
	if !ok {
		return time.Time{}, false
	}
	v, _, ok := strings.Cut(rest, "'")
	if !ok {
		return time.Time{}, false
	}
	if u, err := url.QueryUnescape(v); err == nil {
		v = u
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	return t.UTC(), err == nil
}

// withMigration returns the doc's JSON with m as its _migration (last),
// without the system properties the service sets.
func withMigration(doc transform.Doc, m transform.Migration) ([]byte, error) {
	out := make(transform.Doc, 0, len(doc)+1)
	for _, f := range doc {
		switch f.Name {
		case "_migration", "_rid", "_self", "_etag", "_ts", "_attachments", "_lsn":
			continue
		}
		out = append(out, f)
	}
	var ts any
	if m.Timestamp != "" {
		ts = m.Timestamp
	}
	out = append(out, transform.Field{Name: "_migration", Value: transform.Doc{
		{Name: "table", Value: m.Table}, {Name: "partitionKey", Value: m.PartitionKey}, {Name: "rowKey", Value: m.RowKey},
		{Name: "timestamp", Value: ts}, {Name: "hash", Value: m.Hash},
	}})
	return json.Marshal(out)
}

// record counts one doc's result and appends its dead letter, if any.
func (r *reverser) record(c string, res revResult) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	cnt := r.count(c, res.kind)
	cnt.Docs++
	// The newest change of the application's: the tool's own sync
	// records come back in the feed as unchanged docs, and are not lag.
	if (res.synced || res.conflict != nil) && res.ts.After(r.newest) {
		r.newest = res.ts
	}
	cnt.RowsWritten += res.counts.RowsWritten
	cnt.IndexWritten += res.counts.IndexWritten
	cnt.IndexDeleted += res.counts.IndexDeleted
	cnt.StartOvers += res.counts.StartOvers
	r.blobsUp += res.blobs
	r.blobBytes += res.bytes
	for _, w := range res.warnings {
		r.warnings[w.Reason]++
	}
	switch {
	case res.deadLetter != "":
	case res.unchanged:
		cnt.Unchanged++
	case res.conflict != nil && !res.forced:
		cnt.Conflicts++
	case res.synced:
		cnt.Synced++
		if res.forced {
			cnt.Forced++
		}
	}
	if res.conflict != nil && res.deadLetter == "" {
		r.log("conflict %s/%s/%s ← %s %s/%s: %s; %s", res.conflict.Container, res.conflict.Scope, res.conflict.ID,
			res.conflict.Table, res.conflict.PartitionKey, res.conflict.RowKey, res.conflict.Reason, res.conflict.Resolution)
		if len(r.conflicts) < maxListed {
			r.conflicts = append(r.conflicts, *res.conflict)
		}
	}
	r.planned(res.plan)
	r.progress.Advance(c, 1)
	if res.deadLetter == "" {
		return nil
	}
	cnt.DeadLetters++
	r.log("dead letter %s %s/%s: %s", res.dlRow.Table, res.dlRow.PartitionKey, res.dlRow.RowKey, res.deadLetter)
	dl := newDeadLetter(res.dlRow, res.dlRow.Table, res.deadLetter)
	dl.Doc = &DeadLetterDoc{Container: c, Scope: res.scope, ID: res.id}
	if _, err := r.sink.Append([]DeadLetter{dl}); err != nil {
		return fmt.Errorf("%s %s/%s: record the dead letter: %w", res.dlRow.Table, res.dlRow.PartitionKey, res.dlRow.RowKey, err)
	}
	return nil
}

// planned lists a dry run's writes in the summary, up to maxListed (the
// caller holds mu).
func (r *reverser) planned(writes []PlannedWrite) {
	if !r.opts.DryRun {
		return
	}
	r.plan = append(r.plan, writes[:min(len(writes), maxListed-len(r.plan))]...)
}

func (r *reverser) count(c, kind string) *ReverseCounts { return countsOf(r.counts, c, kind) }

func (r *reverser) summary() ReverseSummary {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := ReverseSummary{
		Since: r.opts.Since.UTC().Format(time.RFC3339Nano), DryRun: r.opts.DryRun, Force: r.opts.Force, Prune: r.opts.Prune,
		Containers: []ReverseContainerSummary{}, Warnings: r.warnings, Conflicts: slices.Clone(r.conflicts),
		Plan: slices.Clone(r.plan), BlobsUploaded: r.blobsUp, BlobBytes: r.blobBytes,
	}
	if s.Conflicts == nil {
		s.Conflicts = []ReverseConflict{}
	}
	for _, c := range []string{transform.ContainerEntities, transform.ContainerExecutions} {
		cs := ReverseContainerSummary{Container: c, Kinds: map[string]ReverseCounts{}}
		for k, cnt := range r.counts[c] {
			cs.Kinds[k] = *cnt
			cs.ReverseCounts.Add(*cnt)
		}
		s.Totals.Add(cs.ReverseCounts)
		s.Containers = append(s.Containers, cs)
	}
	if ms, ok := r.sink.(*memorySink); ok {
		s.DeadLetters = slices.Clone(ms.list)
	} else if r.sink != nil {
		s.DeadLetterFile = filepath.Join(r.opts.StateDir, ReverseDeadLetterFile)
	}
	if !r.newest.IsZero() {
		n := r.newest
		s.Newest = &n
	}
	s.ElapsedSeconds = r.now().Sub(r.start).Seconds()
	return s
}

// prune deletes the rows whose doc carried _migration and is gone from
// Cosmos DB (SPEC §15). Only rows the migration made a doc of qualify:
//
//   - last written before Since, the cutover: verify said OK then, so
//     every such row had its doc; a row written since is the Table-based
//     application's (after the rollback), not one whose doc is gone;
//   - not a dead letter of run or replay (their dead-letter files): those
//     never had a doc;
//   - a row run makes a doc of, and whose doc cannot have expired by its
//     ttl (expired executions stay in the tables, which keep their own
//     retention): with --execution-ttl remaining Transform knows; with
//     full or none the doc expires 14 days after it was written, which
//     was after the row's Timestamp;
//   - whose doc no doc's _migration names, and which is still missing
//     when read once more at its place just before the delete.
//
// An execution's index rows are deleted first, then the row, each with
// If-Match: a prune interrupted in between finds the row again.
func (r *reverser) prune(ctx context.Context) error {
	skip := map[[16]byte]struct{}{}
	for _, name := range []string{DeadLetterFile, ReplayDeadLetterFile} {
		if err := readDeadLetterKeys(filepath.Join(r.opts.StateDir, name), skip); err != nil {
			return err
		}
	}
	r.progress.Message("prune: listing the rows the docs came from")
	err := listMigrated(ctx, r.query, func(_ string, src source, _, _ string) {
		skip[rowKeyHash(src.table, src.partitionKey, src.rowKey)] = struct{}{}
	})
	if err != nil {
		return err
	}
	tables := []string{transform.TableConfig, transform.TableEntities}
	if r.topts.Relationships == transform.RelationshipsMigrate {
		tables = append(tables, transform.TableRelationships)
	}
	r.progress.Message("prune: reading the tables")
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.opts.Concurrency)
	for _, table := range tables {
		err := store.Scan(gctx, r.rows, r.opts.TablePrefix, table, store.Query{}, store.Cursor{}, func(p store.Page) error {
			for _, row := range p.Rows {
				row.Table = table
				if _, ok := skip[rowKeyHash(table, row.PartitionKey, row.RowKey)]; ok || !row.Timestamp.Before(r.opts.Since) {
					continue
				}
				o := transform.Transform(row, transform.BlobFacts{}, r.topts)
				if o.Disposition != transform.DispositionDoc || r.mayHaveExpired(row, o) {
					continue // never a doc, or expired: the tables keep it
				}
				g.Go(func() error {
					res, err := r.pruneRow(gctx, row, o)
					if err != nil {
						return err
					}
					r.mu.Lock()
					defer r.mu.Unlock()
					cnt := r.count(o.Container, o.Kind)
					cnt.Pruned += res.counts.Pruned
					cnt.IndexDeleted += res.counts.IndexDeleted
					cnt.StartOvers += res.counts.StartOvers
					r.planned(res.plan)
					return nil
				})
			}
			return nil
		})
		if werr := g.Wait(); werr != nil {
			return werr // the first worker's error, not the scan's cancellation
		}
		if err != nil {
			return err
		}
		g, gctx = errgroup.WithContext(ctx)
		g.SetLimit(r.opts.Concurrency)
	}
	return nil
}

// mayHaveExpired reports whether the doc of an execution row may have
// expired by its ttl although Transform (which knows only --execution-ttl
// remaining's expiry) makes a doc of it: with full or none the doc lives
// 14 days from its write, which came after the row's Timestamp.
func (r *reverser) mayHaveExpired(row transform.Row, o transform.Outcome) bool {
	if o.Container != transform.ContainerExecutions || r.topts.ExecutionTTL == transform.TTLRemaining {
		return false
	}
	return !r.topts.Now.Before(row.Timestamp.Add(transform.ExecutionRetention * time.Second))
}

// readDeadLetterKeys adds the keys of the dead letters in file (a
// dead-letter.jsonl of run or replay; none when it does not exist) to
// keys.
func readDeadLetterKeys(file string, keys map[[16]byte]struct{}) error {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the dead letters: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	for {
		var dl DeadLetter
		if err := dec.Decode(&dl); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read the dead letters in %s: %w", file, err)
		}
		keys[rowKeyHash(dl.Table, dl.PartitionKey, dl.RowKey)] = struct{}{}
	}
}

// pruneRow deletes row, whose doc o is gone, after its index rows. Its
// result counts what it deleted (nothing when the doc is back, or a 412
// says the row changed meanwhile: the next prune decides again).
func (r *reverser) pruneRow(ctx context.Context, row transform.Row, o transform.Outcome) (revResult, error) {
	var res revResult
	_, _, found, _, err := r.docs.Read(ctx, o.Container, o.Scope, o.ID)
	if err != nil || found {
		return res, err
	}
	if o.Kind == "execution" {
		back, err := transform.ReverseDoc(o.Doc, &row, r.topts)
		if err != nil {
			return res, err
		}
		for _, ix := range back.Index {
			done, err := r.remove(ctx, transform.RowRef{Table: ix.Table, PartitionKey: ix.PartitionKey, RowKey: ix.RowKey}, &res)
			if err != nil {
				return res, err
			}
			if !done {
				res.counts.StartOvers++
				return res, nil
			}
		}
	}
	err = r.rows.Delete(ctx, r.opts.TablePrefix+row.Table, store.Key{PartitionKey: row.PartitionKey, RowKey: row.RowKey}, row.ETag)
	switch {
	case errors.Is(err, store.ErrPreconditionFailed), errors.Is(err, store.ErrNotFound):
		res.counts.StartOvers++
		return res, nil // changed or deleted meanwhile: leave it to the next prune
	case err != nil:
		return res, fmt.Errorf("prune %s %s/%s: %w", row.Table, row.PartitionKey, row.RowKey, err)
	}
	res.counts.Pruned++
	res.plan = append([]PlannedWrite{{Action: "delete", Table: row.Table, PartitionKey: row.PartitionKey, RowKey: row.RowKey}}, res.plan...)
	return res, nil
}

// dryRunRows is the RowStore of a dry run: reads go to the real tables,
// writes do nothing and succeed. It is safe for concurrent use.
type dryRunRows struct{ inner RowStore }

func (d dryRunRows) ReadPage(ctx context.Context, table string, q store.Query, from store.Cursor) (store.Page, error) {
	return d.inner.ReadPage(ctx, table, q, from)
}

func (dryRunRows) Insert(context.Context, string, []byte) (string, error) { return "", nil }

func (dryRunRows) Replace(context.Context, string, []byte, string) (string, error) { return "", nil }

func (dryRunRows) Delete(context.Context, string, store.Key, string) error { return nil }
