package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

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
// exists. It reads the keys of every selected table into a compact set,
// lists the migrated docs of both containers in bulk, and for each doc
// whose row is not in the set checks the row once more (it may have been
// added since) before deleting the doc with If-Match.
func (r *replayer) prune(ctx context.Context) error {
	r.progress.Message("prune: reading the keys of the tables")
	rows := map[[16]byte]struct{}{}
	keysOnly := store.Query{Select: []string{"PartitionKey", "RowKey"}}
	for _, t := range r.tables {
		err := store.Scan(ctx, r.src, r.opts.TablePrefix, t, keysOnly, store.Cursor{}, func(p store.Page) error {
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
	p := pipeline[pruneCandidate]{
		flow:   r.flow,
		writes: func(*pruneCandidate) bool { return true },
		write:  r.pruneOne,
		record: r.recordPrune,
	}
	return p.run(ctx, sliceSource(cands))
}

// sliceSource is the source of items already in memory: one batch.
func sliceSource[T any](items []T) itemSource[T] {
	return func(_ context.Context, emit func(*batch[T]) error) error {
		return emit(&batch[T]{items: items})
	}
}

// recordPrune counts what pruning one candidate did (nothing when its row
// is back or its doc gone, without start-overs or a dead letter).
func (r *replayer) recordPrune(pc *pruneCandidate) error {
	res := pc.res
	if res.verdict == verdictNone && res.deadLetter == "" && res.starts.total() == 0 {
		return nil
	}
	e := entry[ReplayCounts, Conflict]{group: pc.table, kind: transform.Kind(pc.rk)}
	res.tally(&e)
	if res.deadLetter != "" {
		dl := newDeadLetter(transform.Row{Table: pc.table, PartitionKey: pc.pk, RowKey: pc.rk}, pc.table, res.deadLetter)
		e.deadLetters = []DeadLetter{dl}
	}
	return r.rec.add(e)
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
func (r *replayer) pruneOne(ctx context.Context, pc *pruneCandidate) error {
	res := &pc.res
	where := fmt.Sprintf("prune %s/%s/%s", pc.container, pc.scope, pc.id)
	exhausted, err := attempts(ctx, r.opts.MaxAttempts, func() (bool, error) {
		etag, err := r.judgePrune(ctx, pc)
		if err != nil || !res.verdict.writes() {
			return false, wrapIf(err, where)
		}
		wr, err := r.docs.Delete(ctx, pc.container, pc.scope, pc.id, etag)
		res.ru += wr.RequestCharge
		if answerOf(err) == answerGone {
			res.starts.gone++
			res.verdict = verdictNone // deleted meanwhile: nothing left to do
			return false, nil
		}
		return settle(err, &res.starts, &res.deadLetter, fmt.Sprintf("prune: Cosmos DB refused to delete %s/%s/%s", pc.container, pc.scope, pc.id), where)
	})
	if exhausted {
		res.deadLetter = fmt.Sprintf("prune: the doc %s/%s/%s kept changing: gave up after %d attempts", pc.container, pc.scope, pc.id, r.opts.MaxAttempts)
	}
	return err
}

// judgePrune looks the candidate's row up again and reads its doc, then
// decides (decidePrune) into pc.res; it returns the doc's etag.
func (r *replayer) judgePrune(ctx context.Context, pc *pruneCandidate) (etag string, err error) {
	res := &pc.res
	_, exists, err := store.Lookup(ctx, r.src, r.opts.TablePrefix, pc.table, store.Key{PartitionKey: pc.pk, RowKey: pc.rk}, "PartitionKey", "RowKey")
	if err != nil {
		return "", err
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
		if err != nil {
			return "", err
		}
		if found {
			if s, err = readDocState(raw); err != nil {
				return "", err
			}
		}
	}
	res.verdict, res.conflict = decidePrune(exists, found, s, source{pc.table, pc.pk, pc.rk}, r.opts.Force), nil
	if res.verdict == verdictPruneConflict || res.verdict == verdictPruneForce {
		res.conflict = &Conflict{Table: pc.table, PartitionKey: pc.pk, RowKey: pc.rk, Container: pc.container, Scope: pc.scope, ID: pc.id,
			Migrated: true, Reason: "its row was deleted from the tables, but the application changed the doc after it was migrated",
			Resolution: res.verdict.resolution(), Fields: []FieldDiff{}}
	}
	return etag, nil
}

// wrapIf prefixes a non-nil err with where.
func wrapIf(err error, where string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", where, err)
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
		record: r.recordPruned,
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

// recordPruned counts what pruning one candidate row did.
func (r *reverser) recordPruned(it *prunedRow) error {
	if !it.candidate {
		return nil
	}
	return r.rec.add(entry[ReverseCounts, ReverseConflict]{
		group: it.out.Container, kind: it.out.Kind, plan: it.res.plan,
		count: func(c *ReverseCounts) { addCounts(c, it.res.counts) },
	})
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

// pruneRow deletes the row of it, whose doc is gone, after its index rows.
// Its result counts what it deleted (nothing when the doc is back, or a
// 412 says the row changed meanwhile: the next prune decides again).
func (r *reverser) pruneRow(ctx context.Context, it *prunedRow) error {
	row, o, res := it.row, it.out, &it.res
	_, _, found, _, err := r.docs.Read(ctx, o.Container, o.Scope, o.ID)
	if err != nil || found {
		return err
	}
	if o.Kind == "execution" {
		back, err := transform.ReverseDoc(o.Doc, &row, r.topts)
		if err != nil {
			return err
		}
		for _, ix := range back.Index {
			again, err := r.remove(ctx, transform.RowRef{Table: ix.Table, PartitionKey: ix.PartitionKey, RowKey: ix.RowKey}, res)
			if err != nil {
				return err
			}
			if again {
				res.counts.StartOvers++
				return nil
			}
		}
	}
	err = r.rows.Delete(ctx, r.opts.TablePrefix+row.Table, store.Key{PartitionKey: row.PartitionKey, RowKey: row.RowKey}, row.ETag)
	switch answerOf(err) {
	case answerOK:
	case answerChanged, answerGone:
		res.counts.StartOvers++
		return nil // changed or deleted meanwhile: leave it to the next prune
	default:
		return fmt.Errorf("prune %s %s/%s: %w", row.Table, row.PartitionKey, row.RowKey, err)
	}
	res.counts.Pruned++
	res.plan = append([]PlannedWrite{{Action: "delete", Table: row.Table, PartitionKey: row.PartitionKey, RowKey: row.RowKey}}, res.plan...)
	return nil
}
