package migrate

import (
	"context"
	"fmt"
	"slices"

	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// pruneCandidate is a migrated doc whose row was not found, with what
// pruning it did.
type pruneCandidate struct {
	table, pk, rk    string
	container, scope string
	id               string
	res              docResult
}

// prune deletes unchanged migrated docs whose source row no longer
// exists. It reads the keys of every selected table (every key range of
// every table at once) into a compact set,
// lists the migrated docs of both containers in bulk, and for each doc
// whose row is not in the set checks the row once more (it may have been
// added since) before deleting the doc with If-Match.
func (r *replayer) prune(ctx context.Context) error {
	r.progress.Message("prune: reading the keys of the tables")
	rows := map[[16]byte]struct{}{}
	spans := make([]store.Span, len(r.tables))
	for i, t := range r.tables {
		spans[i] = r.ranges.Span(t, store.Query{Select: []string{"PartitionKey", "RowKey"}})
	}
	err := store.ScanSpans(ctx, r.src, r.opts.TablePrefix, spans, func(_ int, p store.Page) error {
		for _, row := range p.Rows {
			rows[rowKeyHash(row.Table, row.PartitionKey, row.RowKey)] = struct{}{}
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.progress.Message("prune: listing migrated docs")
	var cands []pruneCandidate
	err = listMigrated(ctx, r.query, func(c string, src source, scope, id string) {
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
	pool := newPool(ctx, r.flow)
	for i := range cands {
		pc := &cands[i]
		if err := pool.Go(func(ctx context.Context) error { return r.pruneCandidate(ctx, pc) }); err != nil {
			return pool.end(ctx, err)
		}
	}
	return pool.end(ctx, nil)
}

// pruneCandidate prunes one candidate doc (pruneDoc) and records it.
func (r *replayer) pruneCandidate(ctx context.Context, pc *pruneCandidate) error {
	if err := r.pruneDoc(ctx, pc); err != nil {
		return err
	}
	return r.recordPrunedDoc(pc)
}

// pruneDoc deletes one candidate doc when its row is still gone and the
// doc is unchanged (or --force), with If-Match; a 412 reads and decides
// again, at most opts.MaxAttempts times.
func (r *replayer) pruneDoc(ctx context.Context, pc *pruneCandidate) error {
	where := fmt.Sprintf("prune %s/%s/%s", pc.container, pc.scope, pc.id)
	exhausted, err := attempts(ctx, r.opts.MaxAttempts, func() (bool, error) { return r.pruneAttempt(ctx, pc, where) })
	if exhausted {
		pc.res.deadLetter = fmt.Sprintf("prune: the doc %s/%s/%s kept changing: gave up after %d attempts", pc.container, pc.scope, pc.id, r.opts.MaxAttempts)
	}
	return err
}

// pruneAttempt is one look-decide-delete of a candidate doc (where names
// it); again is true when a 409 or 412 says to start over. Every answer is
// taken by its rule (settle): a refusal dead-letters the candidate.
func (r *replayer) pruneAttempt(ctx context.Context, pc *pruneCandidate, where string) (again bool, err error) {
	res := &pc.res
	etag, next, err := r.judgePrune(ctx, pc, where+": ")
	if next != stepOn || !res.verdict.writes() {
		return false, wrapIf(err, where)
	}
	wr, err := r.docs.Delete(ctx, pc.container, pc.scope, pc.id, etag)
	res.ru += wr.RequestCharge
	if next, err = rulePruneDoc.settle(err, where+": ", &res.fate); next != stepOn {
		res.verdict = verdictNone // deleted meanwhile, changed or refused: not pruned
	}
	return next == stepAgain, wrapIf(err, where)
}

// judgePrune looks the candidate's row up again and reads its doc, then
// decides (decidePrune) into pc.res; it returns the doc's etag, and the
// step of the reads' answers (settle; item names the candidate in a dead
// letter).
func (r *replayer) judgePrune(ctx context.Context, pc *pruneCandidate, item string) (etag string, next step, err error) {
	res := &pc.res
	_, exists, err := store.Lookup(ctx, r.src, r.opts.TablePrefix, pc.table, store.Key{PartitionKey: pc.pk, RowKey: pc.rk}, "PartitionKey", "RowKey")
	if next, err := ruleReadRow.settle(err, item, &res.fate); next != stepOn {
		return "", next, err
	}
	var (
		found bool
		s     docState
	)
	if !exists {
		var (
			raw []byte
			ru  float64
		)
		raw, etag, found, ru, err = r.docs.Read(ctx, pc.container, pc.scope, pc.id)
		res.ru += ru
		if next, err := ruleReadDoc.settle(err, item, &res.fate); next != stepOn {
			return "", next, err
		}
		if found {
			if s, err = readDocState(raw); err != nil {
				return "", stepStop, err
			}
		}
	}
	res.verdict, res.conflict = decidePrune(exists, found, s, source{pc.table, pc.pk, pc.rk}, r.opts.Force), nil
	if res.verdict == verdictPruneConflict || res.verdict == verdictPruneForce {
		res.conflict = &Conflict{Table: pc.table, PartitionKey: pc.pk, RowKey: pc.rk, Container: pc.container, Scope: pc.scope, ID: pc.id,
			Migrated: true, Reason: "its row was deleted from the tables, but the application changed the doc after it was migrated",
			Resolution: res.verdict.resolution(), Fields: []FieldDiff{}}
	}
	return etag, stepOn, nil
}

// recordPrunedDoc counts what pruning one candidate doc did (nothing
// when its row is back or its doc gone, without start-overs or a dead
// letter), and records its dead letter, if any.
func (r *replayer) recordPrunedDoc(pc *pruneCandidate) error {
	res := pc.res
	if res.verdict == verdictNone && res.deadLetter == "" && res.changes.total() == 0 {
		return nil
	}
	var e entry
	conflict := res.tally(&e)
	if res.deadLetter != "" {
		e.deadLetters = []DeadLetter{newDeadLetter(transform.Row{Table: pc.table, PartitionKey: pc.pk, RowKey: pc.rk}, pc.table, res.deadLetter)}
	}
	r.book.add(pc.table, transform.Kind(pc.rk), res.counts(), conflict)
	return r.ledger.add(e)
}
