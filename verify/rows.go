package verify

import (
	"context"
	"fmt"
	"runtime"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/bifrost/bifrost-migrate/internal/spill"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

type tableKind struct{ table, kind string }

// rowIndex is the row side of verify: the entry of every selected row
// whose doc must exist (sorted by its place, in exp) and the disposition
// of every selected row (by its keys, in seen), on their way to disk
// beyond what memory holds; the counts per table and kind, the warnings,
// the first dead letters and the access-pattern check. One goroutine
// builds it, in read order.
type rowIndex struct {
	exp, seen *spill.Sorter
	rec       recWriter
	kinds     []Counts
	kindIndex map[tableKind]int
	kindNames []tableKind
	warnings  map[string]int
	access    *accessIndex
	// deadLetters are the first MaxDeadLetters rows dead-lettered.
	deadLetters []DeadLetterRow
	// read counts every row read, sampled or not.
	read int
	// changed, in a --since, holds the keys of the selected rows.
	changed *spill.KeySet
}

func newRowIndex(w *work) *rowIndex {
	return &rowIndex{exp: w.sorter("expected"), seen: w.sorter("seen"), kindIndex: map[tableKind]int{}, warnings: map[string]int{},
		deadLetters: []DeadLetterRow{}}
}

// kind returns the index of table and kind's counts, adding them.
func (x *rowIndex) kind(table, kind string) int {
	tk := tableKind{table, kind}
	i, ok := x.kindIndex[tk]
	if !ok {
		i = len(x.kinds)
		x.kindIndex[tk] = i
		x.kinds = append(x.kinds, Counts{})
		x.kindNames = append(x.kindNames, tk)
	}
	return i
}

// add records one selected row, the seq-th in read order, and its
// outcome.
func (x *rowIndex) add(row transform.Row, seq uint64, o transform.Outcome) error {
	ki := x.kind(row.Table, transform.Kind(row.RowKey))
	c := &x.kinds[ki]
	c.Rows++
	if x.changed != nil {
		if _, err := x.changed.Add(keyOf(row.Table, row.PartitionKey, row.RowKey)); err != nil {
			return err
		}
	}
	x.rec.seen(seenRow{row.Table, row.PartitionKey, row.RowKey, o.Disposition})
	if err := x.seen.Add(x.rec.b); err != nil {
		return err
	}
	for _, w := range o.Warnings {
		x.warnings[w.Reason]++
	}
	switch o.Disposition {
	case transform.DispositionDoc, transform.DispositionExpired:
		if o.Disposition == transform.DispositionDoc {
			c.ExpectedDocs++
		} else {
			c.Expired++
		}
		e, err := expectedOf(row, o)
		if err != nil {
			return err
		}
		e.seq, e.kind = seq, ki
		x.rec.expected(&e, false)
		return x.exp.Add(x.rec.b)
	case transform.DispositionDroppedIndex:
		c.DroppedIndex++
	case transform.DispositionKeptInTables:
		c.KeptInTables++
	case transform.DispositionDeadLetter:
		c.DeadLetter++
		if len(x.deadLetters) < MaxDeadLetters {
			x.deadLetters = append(x.deadLetters, DeadLetterRow{Table: row.Table, PartitionKey: row.PartitionKey, RowKey: row.RowKey,
				Kind: x.kindNames[ki].kind, Reason: o.DeadLetter, Row: transform.EncodeEntity(transform.RedactRow(row))})
		}
	}
	return nil
}

// expectedOf is the expected doc of row, whose outcome o is doc or
// expired (without its seq and kind).
func expectedOf(row transform.Row, o transform.Outcome) (expectedDoc, error) {
	e := expectedDoc{
		ref:   DocRef{Table: row.Table, PartitionKey: row.PartitionKey, RowKey: row.RowKey, Container: o.Container, Scope: o.Scope, ID: o.ID},
		rowTS: row.Timestamp,
	}
	if o.Disposition != transform.DispositionDoc {
		e.expired = true
		return e, nil
	}
	mig, _ := o.Doc.Get("_migration")
	migDoc, _ := mig.(transform.Doc)
	// The doc by meaning (SPEC §12), hashed as the doc was
	// (transform.TransformMeaning).
	if e.docHash = o.MeaningHash; e.docHash == "" {
		return e, fmt.Errorf("table %s %s/%s: the doc has no hash by meaning", row.Table, row.PartitionKey, row.RowKey)
	}
	e.migHash = migrationKey(migDoc)
	e.wantTTL = o.Doc.Has("ttl")
	return e, nil
}

// rowReader reads the selected tables into a rowIndex, transforming every
// row as run does.
type rowReader struct {
	rows     RowSource
	opts     Options
	blobs    transform.BlobIndex
	progress Progress
	work     *work
	// q selects the rows (a --since: its Timestamp filter).
	q store.Query
	// learn, when not nil, learns where the tables split as every row
	// passes (a full check).
	learn *store.KeySampler
}

// read reads the selected tables, transforms every row (collisions need
// every earlier row, sampled or not) and indexes the sampled ones. Every
// execution and every dropped index row goes to the access-pattern
// check, which needs both Entities and Relationships.
//
// The tables are read as a pass reads them (migrate's startReads): one
// store.ScanSpans of them all, every key range of every table at once,
// the pages still passed on in key order, one table after the other. A
// --since, whose Timestamp filter has the service read every row of each
// range, then takes about the time of the slowest range of all the
// tables, not the sum of each table's slowest.
func (rr rowReader) read(ctx context.Context, x *rowIndex) error {
	z := rr.work.z
	ids := rr.work.keySet("ids", z.idMemoryKeys, z.idFilterBytes)
	x.access = newAccessIndex(slices.Contains(rr.opts.Tables, transform.TableEntities) &&
		slices.Contains(rr.opts.Tables, transform.TableRelationships), rr.work)
	spans := make([]store.Span, len(rr.opts.Tables))
	for i, table := range rr.opts.Tables {
		spans[i] = rr.opts.Ranges.Span(table, rr.q)
	}
	var seq uint64
	// The outcomes of a chunk of a page at a time (an outcome holds its
	// doc's tree, and only the entries outlive it), in one array for all
	// the chunks.
	outcomes := make([]transform.Outcome, transformChunk)
	current := 0 // the span whose pages are being judged
	if len(spans) > 0 {
		rr.progress.Step("reading table " + spans[0].Table)
	}
	return store.ScanSpans(ctx, rr.rows, rr.opts.TablePrefix, spans, func(span int, p store.Page) error {
		table := spans[span].Table
		if span != current {
			current = span
			rr.progress.Step("reading table " + table)
		}
		x.read += len(p.Rows)
		if rr.learn != nil {
			rr.learn.Add(table, p.Rows)
		}
		for i, row := range p.Rows {
			if i%transformChunk == 0 {
				if err := rr.transformAll(ctx, p.Rows[i:min(i+transformChunk, len(p.Rows))], outcomes); err != nil {
					return err
				}
			}
			seq++
			o, err := transform.CheckID(ids, outcomes[i%transformChunk])
			if err != nil {
				return err
			}
			sampled := Sampled(table, row.PartitionKey, row.RowKey, rr.opts.Sample)
			switch {
			case table == transform.TableEntities && o.Kind == "execution":
				err = x.access.addExecution(row, seq, o, sampled)
			case o.Disposition == transform.DispositionDroppedIndex:
				err = x.access.addIndex(row, seq, sampled)
			}
			if err != nil {
				return err
			}
			if !sampled {
				continue
			}
			if err := x.add(row, seq, o); err != nil {
				return err
			}
		}
		return nil
	})
}

// transformChunk is how many rows of a page are transformed at once.
const transformChunk = 128

// transformAll transforms rows into out[:len(rows)] on all CPUs
// (Transform is pure).
func (rr rowReader) transformAll(ctx context.Context, rows []transform.Row, out []transform.Outcome) error {
	n := runtime.GOMAXPROCS(0)
	g, gctx := errgroup.WithContext(ctx)
	for w := range n {
		g.Go(func() error {
			for i := w; i < len(rows); i += n {
				if err := gctx.Err(); err != nil {
					return err
				}
				out[i] = rr.transformHashes(rows[i])
			}
			return nil
		})
	}
	return g.Wait()
}

// transform is run's transform of one row, with the blob facts of the
// listing, and its doc's hash by meaning.
func (rr rowReader) transform(row transform.Row) transform.Outcome {
	return transform.TransformMeaning(row, rr.facts(row), rr.opts.Transform)
}

// transformHashes is transform without the doc's JSON, which the index
// does not keep (transform.TransformHashes).
func (rr rowReader) transformHashes(row transform.Row) transform.Outcome {
	return transform.TransformHashes(row, rr.facts(row), rr.opts.Transform)
}

// facts are the blob facts of the listing that row's transform needs.
func (rr rowReader) facts(row transform.Row) transform.BlobFacts {
	if row.Table == transform.TableEntities && transform.Kind(row.RowKey) == "execution" {
		return rr.blobs.Facts(transform.ExecutionID(row))
	}
	return transform.BlobFacts{}
}
