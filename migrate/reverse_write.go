package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// revResult is what reverse did with one doc.
type revResult struct {
	kind      string
	scope, id string    // the doc's
	ts        time.Time // the doc's _ts
	unchanged bool
	wrote     bool // rows were written by an attempt on this doc
	synced    bool
	forced    bool
	conflict  *ReverseConflict
	// fate is what the answers made of the doc: its dead letter (its
	// start-overs are counted in counts, by attempt).
	fate
	dlRow transform.Row // the dead letter's row: the doc's keys, or the row's
	// indexDead are the doc's index rows that cannot be written (their
	// keys hold a character Table Storage forbids); the rest of the doc is
	// written.
	indexDead []transform.IndexDeadLetter
	warnings  []string
	counts    ReverseCounts // rows written, start-overs
	blobs     int64
	bytes     int64
	plan      []PlannedWrite
}

// deadLetters are the doc's dead letters: the doc's own (nothing of it
// written), or the index rows that could not be written, each naming the
// doc.
func (res *revResult) deadLetters(container string) []DeadLetter {
	doc := &DeadLetterDoc{Container: container, Scope: res.scope, ID: res.id}
	var dls []DeadLetter
	if res.deadLetter != "" {
		dls = append(dls, newDeadLetter(res.dlRow, res.dlRow.Table, res.deadLetter))
	}
	for _, ix := range res.indexDead {
		row := transform.Row{Table: ix.Row.Table, PartitionKey: ix.Row.PartitionKey, RowKey: ix.Row.RowKey}
		dls = append(dls, newDeadLetter(row, row.Table, fmt.Sprintf("%s: %s (the doc's row and its other index rows are written)", ix.Reason, ix.Detail)))
	}
	for i := range dls {
		dls[i].Doc = doc
	}
	return dls
}

// apply writes back one doc (decide, write the rows with optimistic
// concurrency, record the sync on the doc); a row or the doc changing
// meanwhile makes it read the doc again and decide again.
func (r *reverser) apply(ctx context.Context, it *reverseItem) error {
	c, raw, info := it.container, it.raw, it.info
	res := &it.res
	*res = revResult{kind: info.typ, ts: info.ts, scope: info.scope, id: info.id, dlRow: transform.Row{Table: c, PartitionKey: info.scope, RowKey: info.id}}
	where := fmt.Sprintf("doc %s/%s/%s", c, info.scope, info.id)
	exhausted, err := attempts(ctx, r.opts.MaxAttempts, func() (bool, error) {
		again, err := r.attempt(ctx, c, raw, info, res)
		if err != nil || !again {
			return false, wrapIf(err, where)
		}
		res.counts.StartOvers++
		// Read the doc again: it may have changed meanwhile.
		doc, _, found, _, err := r.docs.Read(ctx, c, info.scope, info.id)
		if next, err := ruleReadDoc.settle(err, "read again: ", &res.fate); next != stepOn || !found {
			return false, wrapIf(err, where+": read again") // deleted meanwhile: nothing to write back
		}
		raw, info = doc, infoOf(doc)
		return true, nil
	})
	if exhausted {
		res.deadLetter = fmt.Sprintf("the doc or its rows kept changing during reverse: gave up after %d attempts; reverse again", r.opts.MaxAttempts)
	}
	return err
}

// attempt is one read-decide-write of a doc; again is true when a 412,
// 409 or 404 says to start over.
func (r *reverser) attempt(ctx context.Context, c string, raw []byte, info docInfo, res *revResult) (again bool, err error) {
	res.conflict, res.forced, res.unchanged, res.indexDead = nil, false, false, nil
	d, reason := readRevDoc(raw)
	if reason != "" {
		res.deadLetter = reason
		return false, nil
	}
	if d.unchanged(res.wrote) {
		res.unchanged = true
		return false, nil
	}
	key, dl := transform.DocRowRef(d.doc)
	if dl != nil {
		res.deadLetter = fmt.Sprintf("%s: %s", dl.Reason, dl.Detail)
		return false, nil
	}
	res.dlRow = transform.Row{Table: key.Table, PartitionKey: key.PartitionKey, RowKey: key.RowKey}
	current, next, err := r.lookup(ctx, key, &res.fate)
	if next != stepOn {
		return false, err
	}
	out, err := transform.ReverseDoc(d.doc, current, r.topts)
	if err != nil {
		return false, err
	}
	if out.DeadLetter != nil {
		res.deadLetter = fmt.Sprintf("%s: %s; nothing of the doc is written", out.DeadLetter.Reason, out.DeadLetter.Detail)
		return false, nil
	}
	res.indexDead = out.IndexDeadLetters
	res.warnings = res.warnings[:0]
	for _, w := range out.Warnings {
		res.warnings = append(res.warnings, w.Reason)
	}
	if !r.judged(c, info, d, key, current, out.Row, res) {
		return false, nil
	}
	ts, again, err := r.writeRows(ctx, out, current, res)
	if again || err != nil || res.deadLetter != "" {
		return again, err
	}
	return r.recordSync(ctx, c, info, d, key, ts, res)
}

// judged decides (decideReverse) and reports whether the doc's rows are to
// be written; a conflict is set in res.
func (r *reverser) judged(c string, info docInfo, d revDoc, key transform.RowRef, current *transform.Row, want transform.Row, res *revResult) bool {
	ours := current != nil && r.ours(*current)
	v := decideReverse(d, current, ours, want, r.opts.Start, r.opts.Force)
	if v == revWrite {
		return true
	}
	cf := &ReverseConflict{Container: c, Scope: info.scope, ID: info.id, Table: key.Table, PartitionKey: key.PartitionKey, RowKey: key.RowKey,
		Reason: "the row changed in the tables after the doc was migrated, and the application changed the doc too", Properties: transform.DiffRows(*current, want)}
	if !d.hasMig {
		cf.Reason = "the application wrote the doc without _migration, and the row changed in the tables after --since"
	}
	res.conflict = cf
	if v == revConflict {
		cf.Resolution = NotWritten
		return false
	}
	cf.Resolution = Overwritten
	res.forced = true
	return true
}

// lookup reads the row at ref (nil when there is none), the answer taken
// by ruleReadRow (settle): the step, and a refusal dead-letters the doc
// (in f), naming the row.
func (r *reverser) lookup(ctx context.Context, ref transform.RowRef, f *fate, sel ...string) (*transform.Row, step, error) {
	row, found, err := store.Lookup(ctx, r.rows, r.opts.TablePrefix, ref.Table, store.Key{PartitionKey: ref.PartitionKey, RowKey: ref.RowKey}, sel...)
	if next, err := ruleReadRow.settle(err, rowItem("look up", ref)+": ", f); next != stepOn || !found {
		return nil, next, err
	}
	return &row, stepOn, nil
}

// rowItem names a request for the row at ref in dead letters and errors:
// "insert Entities GLOBAL/user:x".
func rowItem(action string, ref transform.RowRef) string {
	return fmt.Sprintf("%s %s %s/%s", action, ref.Table, ref.PartitionKey, ref.RowKey)
}

// writeRows uploads the blobs of out, then writes its index rows, deletes
// the stale ones, and writes the doc's own row last: until it is written,
// the existing row still names the stale index rows, so a start-over or a
// rerun after a kill finds them again. A 409, 412 or 404 on any of them
// starts the doc over (again). It returns the main row's Timestamp.
func (r *reverser) writeRows(ctx context.Context, out transform.ReverseOutcome, current *transform.Row, res *revResult) (ts time.Time, again bool, err error) {
	created, bytes, next, err := uploadBlobs(ctx, r.blobs, res.dlRow, out.Uploads, &res.fate)
	res.blobs, res.bytes = res.blobs+created, res.bytes+bytes
	if next != stepOn {
		return ts, false, err
	}
	if again, err := r.sideRows(ctx, out, res); again || err != nil || res.deadLetter != "" {
		return ts, again, err
	}
	return r.put(ctx, out.Row, current, false, res)
}

// sideRowsAtOnce bounds the index rows of one doc written or deleted at
// the same time.
const sideRowsAtOnce = 4

// sideRows writes out's index rows and deletes its stale ones, each
// looked up and written with the ETag just read. They do not depend on
// each other (only the doc's own row must come after them), so they go at
// the same time: a doc far from the tables takes a few round trips, not
// one per row. Each reports into a result of its own, merged into res in
// their order.
func (r *reverser) sideRows(ctx context.Context, out transform.ReverseOutcome, res *revResult) (again bool, err error) {
	n := len(out.Index) + len(out.Delete)
	parts := make([]revResult, n)
	agains := make([]bool, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(sideRowsAtOnce)
	for i, ix := range out.Index {
		g.Go(func() (err error) {
			cur, next, err := r.lookup(gctx, transform.RowRef{Table: ix.Table, PartitionKey: ix.PartitionKey, RowKey: ix.RowKey}, &parts[i].fate)
			if next == stepOn {
				_, agains[i], err = r.put(gctx, ix, cur, true, &parts[i])
			}
			return err
		})
	}
	for j, d := range out.Delete {
		i := len(out.Index) + j
		g.Go(func() (err error) {
			agains[i], err = r.remove(gctx, d, &parts[i])
			return err
		})
	}
	err = g.Wait()
	for i, p := range parts {
		again = again || agains[i]
		res.wrote = res.wrote || p.wrote
		res.counts.Add(p.counts)
		res.plan = append(res.plan, p.plan...)
		if res.deadLetter == "" {
			res.deadLetter = p.deadLetter
		}
	}
	return again, err
}

// recordSync records the sync on the doc (its _migration: the row's keys,
// its Timestamp ts, the doc's hash), with If-Match on the doc's _etag, so
// that the next pass skips it; a 412 starts the doc over.
func (r *reverser) recordSync(ctx context.Context, c string, info docInfo, d revDoc, key transform.RowRef, ts time.Time, res *revResult) (again bool, err error) {
	m := transform.Migration{Table: key.Table, PartitionKey: key.PartitionKey, RowKey: key.RowKey, Timestamp: transform.FormatTimestamp(ts), Hash: d.hash}
	if d.hasMig && d.mig == m {
		res.synced = true // already recorded (a start-over that found its rows right)
		return false, nil
	}
	synced, err := withMigration(d.doc, m)
	if err != nil {
		return false, err
	}
	_, err = r.docs.Replace(ctx, c, info.scope, info.id, synced, info.etag)
	next, err := ruleRecordSync.settle(err, "", &res.fate)
	if !next.holds() {
		return next == stepAgain, wrapIf(err, "record the sync") // again: the doc changed since it was read
	}
	res.synced = true // written, or deleted since: its rows are written
	return false, nil
}

// put writes row (an execution's index row when index) unless cur (the
// row the table holds, nil when none) already holds the same: insert, or
// replace with If-Match on cur's ETag. It returns the row's Timestamp
// after the write (cur's when nothing was written). again is true when a
// 409, 412 or 404 says to start over; a row the service refuses for good
// makes the doc a dead letter (res.deadLetter, no error).
func (r *reverser) put(ctx context.Context, row transform.Row, cur *transform.Row, index bool, res *revResult) (ts time.Time, again bool, err error) {
	ref := transform.RowRef{Table: row.Table, PartitionKey: row.PartitionKey, RowKey: row.RowKey}
	if cur != nil && len(transform.DiffRows(*cur, row)) == 0 {
		r.inStep.note(ref, cur.ETag)
		return cur.Timestamp, false, nil
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
	item := rowItem(action, ref)
	if next, err := ruleWriteRow.settle(err, item+": ", &res.fate); next != stepOn {
		return ts, next == stepAgain, wrapIf(err, item)
	}
	r.inStep.note(ref, etag)
	res.wrote = true
	if index {
		res.counts.IndexWritten++
	} else {
		res.counts.RowsWritten++
	}
	res.plan = append(res.plan, PlannedWrite{Action: action, Table: row.Table, PartitionKey: row.PartitionKey, RowKey: row.RowKey})
	return r.writtenAt(ctx, row, etag, &res.fate)
}

// writtenAt is when the row was written, from the ETag its write returned
// or, when the ETag does not say, read back (gone already, or changed
// since — its ETag is not ours: start over), that read's answer taken by
// its rule into f.
func (r *reverser) writtenAt(ctx context.Context, row transform.Row, etag string, f *fate) (ts time.Time, again bool, err error) {
	if t, ok := etagTime(etag); ok {
		return t, false, nil
	}
	if r.opts.DryRun {
		return r.now(), false, nil
	}
	back, next, err := r.lookup(ctx, transform.RowRef{Table: row.Table, PartitionKey: row.PartitionKey, RowKey: row.RowKey}, f)
	switch {
	case next != stepOn:
		return ts, false, err
	case back == nil || back.ETag != etag:
		return ts, true, nil // gone or changed since: start over
	}
	return back.Timestamp, false, nil
}

// remove deletes a stale row when it is there, with If-Match on the ETag
// just read; again is true when a 412 says to start over; a row deleted
// meanwhile is what was wanted; a delete the service refuses for good
// makes the doc a dead letter.
func (r *reverser) remove(ctx context.Context, ref transform.RowRef, res *revResult) (again bool, err error) {
	cur, next, err := r.lookup(ctx, ref, &res.fate, "PartitionKey", "RowKey")
	if next != stepOn || cur == nil {
		return false, err
	}
	err = r.rows.Delete(ctx, r.opts.TablePrefix+ref.Table, store.Key{PartitionKey: ref.PartitionKey, RowKey: ref.RowKey}, cur.ETag)
	item := rowItem("delete", ref)
	if next, err := ruleRemoveRow.settle(err, item+": ", &res.fate); next != stepOn {
		return next == stepAgain, wrapIf(err, item) // gone: what was wanted
	}
	res.counts.IndexDeleted++
	res.plan = append(res.plan, PlannedWrite{Action: "delete", Table: ref.Table, PartitionKey: ref.PartitionKey, RowKey: ref.RowKey})
	return false, nil
}

// rowID is the key of a row in RowsInStep.
func rowID(table, pk, rk string) string { return table + "\x00" + pk + "\x00" + rk }

// ours reports whether row is as this reverse, or an earlier pass of its
// --follow, left it in step with a doc (RowsInStep): a later attempt on
// the same doc, a second copy of the doc in the change feed, or the
// application's next version of a doc an earlier pass wrote back, does
// not take the tool's own write for a change in the tables.
func (r *reverser) ours(row transform.Row) bool { return r.inStep.holds(row) }

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
