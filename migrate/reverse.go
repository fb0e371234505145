package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/bifrost/bifrost-migrate/transform"
)

// ReverseDeadLetterFile is the dead-letter file of the last reverse in the
// state directory, in the format of dead-letter.jsonl: the keys of the row
// the doc would have written (or the doc's place), and "doc", which names
// the doc; the doc itself stays in Cosmos DB. Each reverse replaces it;
// the passes of --follow add to it.
const ReverseDeadLetterFile = "reverse-dead-letter.jsonl"

// ReverseOptions say what a reverse reads and how it writes (SPEC §15).
// Force writes rows that changed in the tables after their doc was
// migrated, while the doc changed too (conflicts); Prune deletes the rows
// whose doc carried _migration and is gone from Cosmos DB, unless it
// expired by its ttl. Common.Concurrency bounds the docs written back at
// once.
type ReverseOptions struct {
	Common
	WindowOptions
	// Start is the start of the window a doc without _migration is judged
	// against (SPEC §15): its row is a conflict only if it changed in the
	// tables after Start. Zero means Since. The passes of one --follow
	// all give the --since of the command (see ReverseDeps.InStep).
	Start time.Time
}

// ReverseDeps are the services a reverse uses.
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
	// InStep, when not nil, remembers the rows a reverse left in step
	// with their doc for the next reverse given the same one: the passes
	// of one --follow share it, so that a row an earlier pass wrote is not
	// taken for a change in the tables. nil: each reverse its own.
	InStep *RowsInStep
	// Env's Progress hears containers as tables.
	Env
}

// RowsInStep are the rows reverse left in step with a doc — wrote, or
// found already holding what the doc says — each with the ETag it left
// the row with: a row whose ETag is still that one has not changed in the
// tables since (see reverser.ours). It holds one entry per such row for
// as long as it is kept. The zero value is ready to use; it is safe for
// concurrent use.
type RowsInStep struct{ rows sync.Map }

// note remembers that row is in step with its doc at etag.
func (s *RowsInStep) note(row transform.RowRef, etag string) {
	s.rows.Store(rowID(row.Table, row.PartitionKey, row.RowKey), etag)
}

// holds reports whether row is as reverse left it in step: its ETag, or
// the time the ETag carries, is the one noted.
func (s *RowsInStep) holds(row transform.Row) bool {
	v, ok := s.rows.Load(rowID(row.Table, row.PartitionKey, row.RowKey))
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

// Add adds o to c, field by field (TestCountsAddEveryField).
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

// ReverseSummary is what a reverse did (SPEC §15). Newest is the latest
// change of the application's written back or left as a conflict (a
// doc's _ts). Conflicts lists the first 1,000 conflicts, in doc order;
// Plan the first 1,000 writes of a dry run.
type ReverseSummary struct {
	WindowSummary
	Containers []ReverseContainerSummary `json:"containers"`
	Totals     ReverseCounts             `json:"totals"`
	Conflicts  []ReverseConflict         `json:"conflicts"`
	Plan       []PlannedWrite            `json:"plan,omitempty"`
}

// Reverse writes back to Table Storage what the application changed in
// Cosmos DB since opts.Since (SPEC §15). For each changed doc of both
// containers:
//
//   - a doc whose _migration.hash matches its content came from the tables
//     and nobody changed it: nothing to do;
//   - otherwise transform.ReverseDoc computes its row (and an execution's
//     index rows); a row that changed in the tables after the doc was
//     migrated is a conflict, left as it is unless opts.Force
//     (decideReverse);
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
// Unless opts.DryRun, it holds the lock of opts.StateDir (command
// "reverse") until it returns.
func Reverse(ctx context.Context, opts ReverseOptions, deps ReverseDeps) (ReverseSummary, error) {
	r, err := newReverser(opts, deps)
	if err != nil {
		return ReverseSummary{}, err
	}
	h, err := holdWindow(r.opts.Common, r.opts.KeepDeadLetters, r.now(), "reverse", ReverseDeadLetterFile)
	if err != nil {
		return ReverseSummary{}, err
	}
	r.ledger.sink = h.sink
	err = r.work(ctx)
	return r.summary(), h.close(err)
}

// newReverser checks that deps has the services opts need, and opts
// (whose defaults it fills), and returns the reverse; nothing is read or
// written yet.
func newReverser(opts ReverseOptions, deps ReverseDeps) (*reverser, error) {
	if deps.Changes == nil || deps.Position == nil || deps.Rows == nil || deps.Docs == nil || deps.Blobs == nil {
		return nil, errors.New("migrate: Changes, Position, Rows, Docs and Blobs are required")
	}
	if opts.Start.IsZero() {
		opts.Start = opts.Since
	}
	if err := checkWindow("ReverseOptions", &opts.WindowOptions, deps.Query != nil); err != nil {
		return nil, err
	}
	e := newEngine(&opts.Common, deps.Env)
	r := &reverser{engine: e, opts: opts, changes: deps.Changes, position: deps.Position, rows: deps.Rows, docs: deps.Docs, blobs: deps.Blobs,
		query: deps.Query, inStep: deps.InStep, ledger: newLedger(opts.DryRun, e.log)}
	if r.inStep == nil {
		r.inStep = &RowsInStep{}
	}
	if opts.DryRun {
		r.rows, r.docs, r.blobs = dryRunRows{inner: deps.Rows}, dryRunStore{inner: deps.Docs}, newDryRunBlobs(deps.Blobs)
	}
	return r, nil
}

// reverser is one invocation of Reverse.
type reverser struct {
	engine
	opts     ReverseOptions
	changes  ChangeFeed
	position ChangePosition
	// The services written, behind the dry run's decorators in a dry run.
	rows  RowStore
	docs  DocStore
	blobs BlobStore
	query DocQuerier
	// inStep holds the ETag of each row this reverse (or an earlier pass
	// of its --follow) wrote or found in step with a doc; see ours.
	inStep *RowsInStep
	// docLocks serialize the copies of one doc: a doc the change feed
	// sends twice is applied once at a time.
	docLocks keyedLocks
	// ledger and book record what it did.
	ledger *ledger
	book   book[ReverseCounts, *ReverseCounts, ReverseConflict]
}

// work is the reverse proper: in a dry run it lists the blob container
// once (its blob decorator answers from that listing); then it writes
// back the changed docs of each container in order, then prunes.
func (r *reverser) work(ctx context.Context) error {
	if r.opts.DryRun {
		if _, err := listBlobs(ctx, r.blobs); err != nil {
			return err
		}
	}
	for _, c := range containers {
		r.log("reading %s: started", c)
		if err := r.pass(ctx, c); err != nil {
			return err
		}
		r.log("reading %s: finished", c)
		r.progress.TableDone(c)
	}
	if !r.opts.Prune {
		return nil
	}
	r.log("prune: started")
	return r.prune(ctx)
}

// reverseItem is one changed doc on its way through reverse.
type reverseItem struct {
	container string
	raw       []byte
	info      docInfo
	res       revResult
}

// pass writes back the changed docs of container c: each doc the change
// feed sends goes to the pool, to be written back and recorded
// (reverseDoc). The feed starts at Since rounded down to the second, the
// resolution of _ts: a doc changed within that second, before Since,
// comes too (harmless: one that came from the tables unchanged is
// skipped).
func (r *reverser) pass(ctx context.Context, c string) error {
	pool := newPool(ctx, r.flow)
	_, err := r.changes.Changes(pool.ctx, c, r.position(r.opts.Since), 0, func(raw []byte) error { return r.dispatch(pool, c, raw) })
	return pool.end(ctx, wrapIf(err, "read the changes of container "+c))
}

// dispatch hands one changed doc of container c to the pool.
func (r *reverser) dispatch(pool *pool, c string, raw []byte) error {
	it := &reverseItem{container: c, raw: raw, info: infoOf(raw)}
	return pool.Go(func(ctx context.Context) error { return r.reverseDoc(ctx, it) })
}

// reverseDoc writes back one doc (apply) holding its lock, so that two
// copies of a doc are never applied at once (and different docs never
// wait for each other), then records it.
func (r *reverser) reverseDoc(ctx context.Context, it *reverseItem) error {
	unlock := r.docLocks.lock(it.container + "\x00" + it.info.scope + "\x00" + it.info.id)
	err := r.apply(ctx, it)
	unlock()
	if err != nil {
		return err
	}
	return r.record(it)
}

// keyedLocks are mutexes by key, made on first use and dropped when
// nobody holds or waits for them. The zero value is ready to use.
type keyedLocks struct {
	mu    sync.Mutex
	locks map[string]*keyedLock
}

type keyedLock struct {
	sync.Mutex
	users int // holders and waiters
}

// lock locks key and returns its unlock.
func (k *keyedLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyedLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyedLock{}
		k.locks[key] = l
	}
	l.users++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.users--; l.users == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
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

// record counts one doc's result and records its dead letter, if any.
func (r *reverser) record(it *reverseItem) error {
	res := it.res
	e := entry{warnings: res.warnings, plan: res.plan, blobs: res.blobs, blobBytes: res.bytes, deadLetters: res.deadLetters(it.container)}
	// The newest change of the application's: the tool's own sync
	// records come back in the feed as unchanged docs, and are not lag.
	if res.synced || res.conflict != nil {
		e.newest = res.ts
	}
	c := res.counts
	c.Docs++
	c.DeadLetters += int64(len(res.indexDead))
	switch {
	case res.deadLetter != "":
		c.DeadLetters++
	case res.unchanged:
		c.Unchanged++
	case res.conflict != nil && !res.forced:
		c.Conflicts++
	case res.synced:
		c.Synced++
		if res.forced {
			c.Forced++
		}
	}
	var conflict *ReverseConflict
	if cf := res.conflict; cf != nil && res.deadLetter == "" {
		r.log("conflict %s/%s/%s ← %s %s/%s: %s; %s", cf.Container, cf.Scope, cf.ID, cf.Table, cf.PartitionKey, cf.RowKey, cf.Reason, cf.Resolution)
		conflict = cf
	}
	r.progress.Advance(it.container, 1)
	if !r.opts.DryRun {
		r.progress.Outcome(it.container, Outcome{Written: c.Writes(), DeadLetters: c.DeadLetters, Conflicts: c.Conflicts})
	}
	r.book.add(it.container, res.kind, c, conflict)
	return r.ledger.add(e)
}

func (r *reverser) summary() ReverseSummary {
	s := ReverseSummary{Containers: []ReverseContainerSummary{}}
	s.WindowSummary = r.ledger.summary(r.opts.Common, r.opts.WindowOptions, r.opts.StateDir, ReverseDeadLetterFile, r.now().Sub(r.start))
	r.ledger.mu.Lock()
	s.Plan = slices.Clone(r.ledger.plan)
	r.ledger.mu.Unlock()
	for _, c := range containers {
		kinds, sum := r.book.group(c)
		s.Containers = append(s.Containers, ReverseContainerSummary{Container: c, Kinds: kinds, ReverseCounts: sum})
		s.Totals.Add(sum)
	}
	s.Conflicts = r.book.listed()
	return s
}
