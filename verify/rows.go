package verify

import (
	"context"
	"fmt"
	"runtime"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// expectedDoc is the compact entry of one selected row whose disposition
// is doc (or expired, when expired is set): where its doc must be and
// what it must hash to.
type expectedDoc struct {
	ref     DocRef
	kind    int // index into rowIndex.kinds
	docKey  key
	docHash string // transform.MeaningHash
	migHash key    // migrationKey
	wantTTL bool
	expired bool
}

type tableKind struct{ table, kind string }

// rowIndex is the row side of verify: an entry per selected row whose
// doc must exist, the disposition of every selected row, the counts per
// table and kind, the warnings and the access-pattern check. One
// goroutine builds it, in read order.
type rowIndex struct {
	expected  []expectedDoc
	seen      map[key]transform.Disposition
	kinds     []Counts
	kindIndex map[tableKind]int
	kindNames []tableKind
	warnings  map[string]int
	access    *accessIndex
	// deadLetters are the first MaxDeadLetters rows dead-lettered.
	deadLetters []DeadLetterRow
	// read counts every row read, sampled or not.
	read int
}

func newRowIndex() *rowIndex {
	return &rowIndex{seen: map[key]transform.Disposition{}, kindIndex: map[tableKind]int{}, warnings: map[string]int{},
		access: newAccessIndex(false), deadLetters: []DeadLetterRow{}}
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

// add records one selected row and its outcome.
func (x *rowIndex) add(row transform.Row, src key, o transform.Outcome) error {
	ki := x.kind(row.Table, transform.Kind(row.RowKey))
	c := &x.kinds[ki]
	c.Rows++
	x.seen[src] = o.Disposition
	for _, w := range o.Warnings {
		x.warnings[w.Reason]++
	}
	ref := DocRef{Table: row.Table, PartitionKey: row.PartitionKey, RowKey: row.RowKey, Container: o.Container, Scope: o.Scope, ID: o.ID}
	switch o.Disposition {
	case transform.DispositionDoc:
		c.ExpectedDocs++
		e := expectedDoc{ref: ref, kind: ki, docKey: keyOf(o.Container, o.Scope, o.ID)}
		mig, _ := o.Doc.Get("_migration")
		migDoc, _ := mig.(transform.Doc)
		// The doc by meaning (SPEC §12); its hash is the provenance hash
		// unless it has null fields.
		if n, changed := transform.Normalize(row.Table, o.Doc); changed {
			var err error
			if e.docHash, err = transform.Hash(n); err != nil {
				return fmt.Errorf("table %s %s/%s: %w", row.Table, row.PartitionKey, row.RowKey, err)
			}
		} else {
			h, _ := migDoc.Get("hash")
			e.docHash, _ = h.(string)
		}
		e.migHash = migrationKey(migDoc)
		e.wantTTL = o.Doc.Has("ttl")
		x.expected = append(x.expected, e)
	case transform.DispositionExpired:
		c.Expired++
		x.expected = append(x.expected, expectedDoc{ref: ref, kind: ki, docKey: keyOf(o.Container, o.Scope, o.ID), expired: true})
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

// rowReader reads the selected tables into a rowIndex, transforming every
// row as run does.
type rowReader struct {
	rows     RowSource
	opts     Options
	blobs    transform.BlobIndex
	progress Progress
}

// read reads the selected tables in order, transforms every row
// (collisions need every earlier row, sampled or not) and indexes the
// sampled ones. Every execution and every dropped index row goes to the
// access-pattern check, which needs both Entities and Relationships.
func (rr rowReader) read(ctx context.Context, x *rowIndex) error {
	ids := transform.NewIDSet()
	x.access = newAccessIndex(slices.Contains(rr.opts.Tables, transform.TableEntities) &&
		slices.Contains(rr.opts.Tables, transform.TableRelationships))
	for _, table := range rr.opts.Tables {
		rr.progress.Step("reading table " + table)
		// Key ranges read at the same time, pages still in key order.
		err := store.ScanRanges(ctx, rr.rows, rr.opts.TablePrefix, table, store.Query{}, store.Splits(table), func(p store.Page) error {
			outcomes, err := rr.transformAll(ctx, p.Rows)
			if err != nil {
				return err
			}
			x.read += len(p.Rows)
			for i, row := range p.Rows {
				o := ids.Check(outcomes[i])
				src := keyOf(table, row.PartitionKey, row.RowKey)
				sampled := sampledKey(src, rr.opts.Sample)
				switch {
				case table == transform.TableEntities && o.Kind == "execution":
					x.access.addExecution(row, o, sampled)
				case o.Disposition == transform.DispositionDroppedIndex:
					if x.access.addIndex(row, sampled) == FindingDangling {
						// The warning run gives the same row.
						x.warnings[transform.ReasonDanglingIndex]++
					}
				}
				if !sampled {
					continue
				}
				if err := x.add(row, src, o); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// transformAll transforms a page of rows on all CPUs (Transform is pure).
func (rr rowReader) transformAll(ctx context.Context, rows []transform.Row) ([]transform.Outcome, error) {
	out := make([]transform.Outcome, len(rows))
	n := runtime.GOMAXPROCS(0)
	g, gctx := errgroup.WithContext(ctx)
	for w := range n {
		g.Go(func() error {
			for i := w; i < len(rows); i += n {
				if err := gctx.Err(); err != nil {
					return err
				}
				out[i] = rr.transform(rows[i])
			}
			return nil
		})
	}
	return out, g.Wait()
}

// transform is run's transform of one row, with the blob facts of the
// listing.
func (rr rowReader) transform(row transform.Row) transform.Outcome {
	var facts transform.BlobFacts
	if row.Table == transform.TableEntities && transform.Kind(row.RowKey) == "execution" {
		facts = rr.blobs.Facts(transform.ExecutionID(row))
	}
	return transform.Transform(row, facts, rr.opts.Transform)
}
