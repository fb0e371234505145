package migrate

import (
	"context"
	"fmt"

	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// docResult is what replay did with one doc: the last verdict it acted on
// (a doc that changed between the read and the write is read and judged
// again), the conflict when it is one, or the dead-letter reason that
// replaced it; a warning, the start-overs, the blobs it created and the
// request units it used.
type docResult struct {
	verdict  verdict
	conflict *Conflict
	// fate is what the answers made of it: its dead letter, the
	// start-overs by kind.
	fate
	warning      string
	blobs, bytes int64
	ru           float64
}

// counts are what res adds to its table's counts: its verdict's count,
// or for a doc that ended as a dead letter only that, and its start-overs.
func (res docResult) counts() ReplayCounts {
	var c ReplayCounts
	if res.deadLetter != "" {
		c.DeadLetters++
	} else {
		res.verdict.count(&c)
	}
	c.PreconditionFailed += res.changes.changed
	c.CreateConflicts += res.changes.exists
	c.DocVanished += res.changes.gone
	return c
}

// tally sets e's warning, blobs and request units from res, and returns
// its conflict (nil for a doc that ended as a dead letter).
func (res docResult) tally(e *entry) *Conflict {
	if res.warning != "" {
		e.warnings = append(e.warnings, res.warning)
	}
	e.blobs, e.blobBytes, e.ru = res.blobs, res.bytes, res.ru
	if res.deadLetter != "" {
		return nil
	}
	return res.conflict
}

// count adds one doc of verdict v to c.
func (v verdict) count(c *ReplayCounts) {
	switch v {
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
}

// wantedOf is what the row's doc o says, for decide.
func wantedOf(row transform.Row, o transform.Outcome) (wantedDoc, error) {
	w := wantedDoc{row: source{row.Table, row.PartitionKey, row.RowKey}, timestamp: row.Timestamp}
	mig, _ := o.Doc.Get("_migration")
	if md, ok := mig.(transform.Doc); ok {
		h, _ := md.Get("hash")
		w.hash, _ = h.(string)
	}
	w.meaning = w.hash
	if n, changed := transform.Normalize(row.Table, o.Doc); changed {
		var err error
		if w.meaning, err = transform.Hash(n); err != nil {
			return w, err
		}
	}
	w.migMeaning = transform.MigrationMeaning(mig)
	var err error
	w.migration, err = transform.Canonical(mig)
	return w, err
}

// apply replays one doc: read it, decide, write with optimistic
// concurrency; a doc that changed meanwhile (409, 412, 404) is read and
// judged again, at most opts.MaxAttempts times.
func (r *replayer) apply(ctx context.Context, it *replayItem) error {
	want, err := wantedOf(it.row, it.out)
	if err != nil {
		return fmt.Errorf("%s: _migration: %w", it.where("replay"), err)
	}
	uploaded := false
	res := &it.res
	exhausted, err := attempts(ctx, r.opts.MaxAttempts, func() (bool, error) { return r.attempt(ctx, it, want, &uploaded) })
	if exhausted {
		res.deadLetter = fmt.Sprintf("the doc kept changing during replay: gave up after %d attempts (%d × 412, %d × 409, %d × 404); replay again",
			r.opts.MaxAttempts, res.changes.changed, res.changes.exists, res.changes.gone)
	}
	return err
}

// where names the row and its doc for errors.
func (it *replayItem) where(op string) string {
	row, o := it.row, it.out
	return fmt.Sprintf("%s %s/%s: %s %s/%s", row.Table, row.PartitionKey, row.RowKey, op, o.Container, o.ID)
}

// attempt is one read-decide-write of a doc; again is true when a 409,
// 412 or 404 says to start over.
func (r *replayer) attempt(ctx context.Context, it *replayItem, want wantedDoc, uploaded *bool) (again bool, err error) {
	o, res := it.out, &it.res
	raw, etag, found, ru, err := r.docs.Read(ctx, o.Container, o.Scope, o.ID)
	res.ru += ru
	if next, err := ruleReadDoc.settle(err, "", &res.fate); next != stepOn {
		return false, wrapIf(err, it.where("read"))
	}
	var s docState
	if found {
		if s, err = readDocState(raw); err != nil {
			return false, fmt.Errorf("%s: %w", it.where("decode"), err)
		}
	}
	res.verdict, res.conflict = decide(found, s, want, r.opts.Force), nil
	if done := r.judged(it, s); done {
		return false, nil
	}
	if !*uploaded {
		created, bytes, next, err := uploadBlobs(ctx, r.blobs, it.row, o.Uploads, &res.fate)
		res.blobs, res.bytes = res.blobs+created, res.bytes+bytes
		if next != stepOn {
			return false, err
		}
		*uploaded = true
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
	next, err := ruleWriteDoc.settle(err, "", &res.fate)
	return next == stepAgain, wrapIf(err, it.where(op))
}

// judged acts on a verdict that writes nothing (unchanged, not older, a
// collision, a conflict left as it is) and reports whether the doc is done.
func (r *replayer) judged(it *replayItem, s docState) (done bool) {
	res := &it.res
	switch res.verdict {
	case verdictUnchanged:
		return true
	case verdictNotOlder:
		res.warning = ReasonNotOlder
		return true
	case verdictCollision:
		from := s.source()
		res.deadLetter = fmt.Sprintf("%s; the doc there was migrated from %s %s/%s",
			transform.CollisionReason(it.out.Container, it.out.Scope, it.out.ID), from.table, from.partitionKey, from.rowKey)
		return true
	case verdictConflict, verdictForce:
		res.conflict = conflictOf(it.row, it.out, s, res.verdict.resolution())
		return res.verdict == verdictConflict
	}
	return false
}

// conflictOf describes a doc the application changed, with its differing
// fields against the row's doc.
func conflictOf(row transform.Row, o transform.Outcome, s docState, res Resolution) *Conflict {
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
	diffs := diffDocs(row.Table, want, s.m)
	c.FieldCount = len(diffs)
	c.Fields = diffs[:min(len(diffs), maxConflictFields)]
	return c
}
