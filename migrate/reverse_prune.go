package migrate

import (
	"context"
	"path/filepath"
	"time"

	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

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
	scans := make([]scan, len(tables))
	for i, table := range tables {
		scans[i] = scan{table, store.Query{}}
	}
	reads, stop := readTables(ctx, r.rows, r.opts.TablePrefix, nil, scans)
	defer stop()
	for _, rd := range reads {
		if err := r.pruneTable(ctx, rd, skip); err != nil {
			return err
		}
	}
	return nil
}

// pruneTable prunes the rows of one table, which rd reads: each row that
// is a candidate (candidate) goes to the pool, to be pruned and recorded
// (pruneCandidate).
func (r *reverser) pruneTable(ctx context.Context, rd *tableRead, skip map[[16]byte]struct{}) error {
	pool := newPool(ctx, r.flow)
	return pool.end(ctx, r.dispatchPrune(pool, rd, skip))
}

// dispatchPrune hands the candidates among the rows rd reads to the pool.
func (r *reverser) dispatchPrune(pool *pool, rd *tableRead, skip map[[16]byte]struct{}) error {
	return eachPage(pool, rd, func(p store.Page) error {
		logPage(r.log, rd.table, rd.q, p)
		for _, row := range p.Rows {
			it := &prunedRow{row: row}
			if !r.candidate(it, skip) {
				continue
			}
			if err := pool.Go(func(ctx context.Context) error { return r.pruneCandidate(ctx, it) }); err != nil {
				return err
			}
		}
		return nil
	})
}

// candidate decides whether the row of it may be one whose doc is gone
// (its outcome in it): not skipped (a dead letter, or named by a doc's
// _migration), last written before Since, and a row run makes a doc of
// whose doc cannot have expired by its ttl (the tables keep it).
func (r *reverser) candidate(it *prunedRow, skip map[[16]byte]struct{}) bool {
	row := it.row
	if _, ok := skip[rowKeyHash(row.Table, row.PartitionKey, row.RowKey)]; ok || !row.Timestamp.Before(r.opts.Since) {
		return false
	}
	it.out = transform.Transform(row, transform.BlobFacts{}, r.topts)
	return it.out.Disposition == transform.DispositionDoc && !r.mayHaveExpired(row, it.out)
}

// pruneCandidate prunes one candidate row (pruneRow) and records it.
func (r *reverser) pruneCandidate(ctx context.Context, it *prunedRow) error {
	if err := r.pruneRow(ctx, it); err != nil {
		return err
	}
	return r.recordPrunedRow(it)
}

// prunedRow is a row of the tables on its way through reverse's prune.
type prunedRow struct {
	row transform.Row
	out transform.Outcome
	res revResult
}

// pruneRow deletes the row of it, whose doc is gone, after its index rows.
// Its result counts what it deleted (nothing when the doc is back, or a
// 412 says the row changed meanwhile: the next prune decides again); a
// delete the service refuses for good, of the row or of one of its index
// rows, makes the row a dead letter, and the row stays.
func (r *reverser) pruneRow(ctx context.Context, it *prunedRow) error {
	row, o, res := it.row, it.out, &it.res
	_, _, found, _, err := r.docs.Read(ctx, o.Container, o.Scope, o.ID)
	if next, err := ruleReadDoc.settle(err, "read "+o.Container+"/"+o.Scope+"/"+o.ID+": ", &res.fate); next != stepOn || found {
		return err // a refusal is the row's dead letter; a doc there: the row stays
	}
	if o.Kind == "execution" {
		back, err := transform.ReverseDoc(o.Doc, &row, r.topts)
		if err != nil {
			return err
		}
		for _, ix := range back.Index {
			again, err := r.remove(ctx, transform.RowRef{Table: ix.Table, PartitionKey: ix.PartitionKey, RowKey: ix.RowKey}, res)
			if err != nil || res.deadLetter != "" {
				return err // an index row refused: the row stays, naming it
			}
			if again {
				res.counts.StartOvers++
				return nil
			}
		}
	}
	err = r.rows.Delete(ctx, r.opts.TablePrefix+row.Table, store.Key{PartitionKey: row.PartitionKey, RowKey: row.RowKey}, row.ETag)
	item := rowItem("prune", transform.RowRef{Table: row.Table, PartitionKey: row.PartitionKey, RowKey: row.RowKey})
	next, err := rulePruneRow.settle(err, item+": ", &res.fate)
	if next == stepAgain {
		res.counts.StartOvers++ // changed or deleted meanwhile: left to the next prune
	}
	if next != stepOn {
		return wrapIf(err, item) // a refusal is the row's dead letter
	}
	res.counts.Pruned++
	res.plan = append([]PlannedWrite{{Action: "delete", Table: row.Table, PartitionKey: row.PartitionKey, RowKey: row.RowKey}}, res.plan...)
	return nil
}

// recordPrunedRow counts what pruning one candidate row did, and
// records its dead letter, if any.
func (r *reverser) recordPrunedRow(it *prunedRow) error {
	res := it.res
	c := res.counts
	e := entry{plan: res.plan}
	if res.deadLetter != "" {
		c.DeadLetters++
		e.deadLetters = []DeadLetter{newDeadLetter(it.row, it.row.Table, res.deadLetter)}
	}
	r.book.add(it.out.Container, it.out.Kind, c, nil)
	return r.ledger.add(e)
}

// mayHaveExpired reports whether the doc of an execution row may have
// expired by its ttl although Transform (which knows only --execution-ttl
// remaining's expiry) makes a doc of it: with full or none the doc lives
// 14 days from its write, which came after the row's Timestamp.
func (r *reverser) mayHaveExpired(row transform.Row, o transform.Outcome) bool {
	if ttl := r.topts.ExecutionTTL; o.Container != transform.ContainerExecutions || ttl != transform.TTLFull && ttl != transform.TTLNone { // remaining, or "" (its default)
		return false
	}
	return !r.topts.Now.Before(row.Timestamp.Add(transform.ExecutionRetention * time.Second))
}
