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
	p := pipeline[prunedRow]{
		flow:   r.flow,
		writes: func(it *prunedRow) bool { return it.candidate },
		write:  r.pruneRow,
		record: r.recordPrunedRow,
	}
	for _, table := range tables {
		err := p.run(ctx, tableSource(r.rows, r.opts.TablePrefix, table, store.Query{}, r.log, func(row transform.Row) prunedRow {
			row.Table = table
			it := prunedRow{row: row}
			if _, ok := skip[rowKeyHash(table, row.PartitionKey, row.RowKey)]; ok || !row.Timestamp.Before(r.opts.Since) {
				return it
			}
			it.out = transform.Transform(row, transform.BlobFacts{}, r.topts)
			// Never a doc, or expired: the tables keep it.
			it.candidate = it.out.Disposition == transform.DispositionDoc && !r.mayHaveExpired(row, it.out)
			return it
		}))
		if err != nil {
			return err
		}
	}
	return nil
}

// prunedRow is a row of the tables on its way through reverse's prune.
type prunedRow struct {
	row       transform.Row
	out       transform.Outcome
	candidate bool // its doc may be gone: look and delete
	res       revResult
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

// recordPrunedRow counts what pruning one candidate row did, and records
// its dead letter, if any.
func (r *reverser) recordPrunedRow(it *prunedRow) error {
	if !it.candidate {
		return nil
	}
	res := it.res
	e := entry[ReverseCounts, ReverseConflict]{
		group: it.out.Container, kind: it.out.Kind, plan: res.plan,
		count: func(c *ReverseCounts) {
			addCounts(c, res.counts)
			if res.deadLetter != "" {
				c.DeadLetters++
			}
		},
	}
	if res.deadLetter != "" {
		e.deadLetters = []DeadLetter{newDeadLetter(it.row, it.row.Table, res.deadLetter)}
	}
	return r.rec.add(e)
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
