package verify

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// MaxDetailedDocs is how many differing docs verify reads again to compute
// their field paths; beyond it only the count is exact. More differences
// than this point to a systematic cause (wrong options, wrong database)
// that the first thousand already show.
const MaxDetailedDocs = 1000

// detailConcurrency is the number of differing docs fetched at once.
const detailConcurrency = 8

// Options say what verify checks.
type Options struct {
	// Transform are the options run used. Now is required for
	// transform.TTLRemaining; it decides which executions are expired.
	Transform transform.Options
	// Tables are the tables checked, in read order; empty means all three.
	Tables []string
	// TablePrefix is put before every table name when reading (tests and
	// side-by-side benchmarks); reports use the names without it.
	TablePrefix string
	// Sample, when 0 < Sample < 1, checks only the rows whose key hash
	// falls below it, and judges only the docs of those rows. 0 means 1.
	Sample float64
	// PageSize is the most docs per query page; 0 means
	// store.DefaultQueryPageSize.
	PageSize int
	// Database is recorded in the report.
	Database string
}

// Verifier compares the source tables with Cosmos DB and Blob Storage.
// Its fields are required except Progress. A Verifier is not meant to run
// twice at once.
type Verifier struct {
	Rows     RowSource
	Docs     DocSource
	Blobs    BlobLister
	Progress Progress
	// Now is the clock of the report's elapsed time; nil means time.Now.
	Now func() time.Time
}

// key identifies a doc (container, scope, id) or a row (table, PK, RK).
type key [16]byte

func keyOf(a, b, c string) key {
	h := sha256.New()
	h.Write([]byte(a))
	h.Write([]byte{0})
	h.Write([]byte(b))
	h.Write([]byte{0})
	h.Write([]byte(c))
	var k key
	copy(k[:], h.Sum(nil))
	return k
}

// Sampled reports whether the row (table, partitionKey, rowKey) is in a
// sample of fraction f: the first 53 bits of the SHA-256 of its keys, as a
// fraction of 2^53, fall below f. The choice is deterministic, so two
// verify runs with the same f check the same rows.
func Sampled(table, partitionKey, rowKey string, f float64) bool {
	if f <= 0 || f >= 1 {
		return true
	}
	return sampledKey(keyOf(table, partitionKey, rowKey), f)
}

func sampledKey(k key, f float64) bool {
	if f <= 0 || f >= 1 {
		return true
	}
	return float64(binary.BigEndian.Uint64(k[:8])>>11)/(1<<53) < f
}

// state is one verify run: its options and its two indexes.
type state struct {
	v    *Verifier
	opts Options

	blobs       transform.BlobIndex
	blobsListed int
	docs        *docIndex
	rows        *rowIndex
}

// Run verifies and returns the report. It returns an error only when it
// could not finish (a service error, ctx cancelled); a selected table that
// does not exist is such an error (the RowSource's, naming the table),
// never an empty table. Mismatches and rows that are not migrated are in
// the report (Report.OK false), not errors.
func (v *Verifier) Run(ctx context.Context, opts Options) (*Report, error) {
	now := v.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	if v.Progress == nil {
		v.Progress = noProgress{}
	}
	if len(opts.Tables) == 0 {
		opts.Tables = transform.Tables()
	}
	if opts.Sample <= 0 || opts.Sample > 1 {
		opts.Sample = 1
	}
	opts.Transform = opts.Transform.WithDefaults()
	if err := opts.Transform.Validate(); err != nil {
		return nil, err
	}
	s := &state{v: v, opts: opts, blobs: transform.BlobIndex{}, rows: newRowIndex()}
	v.Progress.Step("listing blobs of execution-data")
	if err := s.listBlobs(ctx); err != nil {
		return nil, err
	}
	s.docs = newDocIndex(s.blobs)
	// The two services are read at the same time: neither side needs the
	// other until the join. The first failure stops the other side.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return readDocs(gctx, v.Docs, opts.PageSize, v.Progress, s.docs) })
	g.Go(func() error {
		return rowReader{rows: v.Rows, opts: opts, blobs: s.blobs, progress: v.Progress}.read(gctx, s.rows)
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	v.Progress.Step("comparing")
	r, jobs := join(s.rows, s.docs, opts.Tables, opts.Sample)
	r.BlobsListed = s.blobsListed
	r.Scope = newScope(opts, r.Totals.Rows, s.rows.read)
	r.Partial = r.Scope.partial()
	r.Settings = Settings{
		Database: opts.Database, Tables: opts.Tables, Sample: opts.Sample,
		ExecutionTTL: string(opts.Transform.ExecutionTTL), BlobThreshold: opts.Transform.BlobThreshold,
		Relationships: string(opts.Transform.Relationships), Strict: opts.Transform.Strict,
		Now: transform.FormatTimestamp(opts.Transform.Now),
	}
	if err := s.details(ctx, r, jobs); err != nil {
		return nil, err
	}
	r.ElapsedSeconds = now().Sub(start).Seconds()
	return r, nil
}

func (s *state) listBlobs(ctx context.Context) error {
	return s.v.Blobs.List(ctx, func(name string, size int64) error {
		s.blobsListed++
		return s.blobs.Add(name, size)
	})
}

// details reads the first MaxDetailedDocs differing docs and their rows
// again and computes their field paths, in row order.
func (s *state) details(ctx context.Context, r *Report, jobs []detailJob) error {
	if len(jobs) > MaxDetailedDocs {
		r.DetailsTruncated = true
		jobs = jobs[:MaxDetailedDocs]
	}
	if len(jobs) == 0 {
		return nil
	}
	s.v.Progress.Step(fmt.Sprintf("reading %d differing doc(s) again for their field paths", len(jobs)))
	results := make([][]Difference, len(jobs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(detailConcurrency)
	for i := range jobs {
		g.Go(func() error {
			var err error
			results[i], err = s.detail(gctx, jobs[i])
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, d := range results {
		r.Differences = append(r.Differences, d...)
	}
	return nil
}

func (s *state) detail(ctx context.Context, j detailJob) ([]Difference, error) {
	e := s.rows.expected[j.exp]
	var actualRef *DocRef
	fields := j.fields
	if j.act >= 0 {
		a := s.docs.actual[j.act]
		if j.moved {
			ref := a.ref
			actualRef = &ref
		}
		diffs, err := s.readAndCompare(ctx, e.ref, a.ref)
		if err != nil {
			return nil, err
		}
		fields = append(diffs, fields...)
	}
	out := make([]Difference, 0, len(fields))
	for _, f := range fields {
		out = append(out, Difference{Doc: e.ref, ActualDoc: actualRef, Path: f.path, Problem: f.problem, Expected: f.expected, Actual: f.actual})
	}
	if len(out) == 0 {
		// The doc or its row changed between the scan and this read.
		out = append(out, Difference{Doc: e.ref, ActualDoc: actualRef, Path: "", Problem: "changed while verify ran; run verify again"})
	}
	return out, nil
}

// readAndCompare reads the row of exp and the doc at act and compares
// them field by field.
func (s *state) readAndCompare(ctx context.Context, exp, act DocRef) ([]fieldDiff, error) {
	row, found, err := store.Lookup(ctx, s.v.Rows, s.opts.TablePrefix, exp.Table, store.Key{PartitionKey: exp.PartitionKey, RowKey: exp.RowKey})
	if err != nil || !found {
		return nil, err
	}
	o := rowReader{opts: s.opts, blobs: s.blobs}.transform(row)
	if o.Disposition != transform.DispositionDoc {
		return nil, nil
	}
	want, err := transform.DecodeDoc(o.DocJSON)
	if err != nil {
		return nil, fmt.Errorf("expected doc %s: %w", exp, err)
	}
	raw, found, err := s.v.Docs.Read(ctx, act.Container, act.Scope, act.ID)
	if err != nil || !found {
		return nil, err
	}
	got, err := transform.DecodeDoc(raw)
	if err != nil {
		return nil, fmt.Errorf("doc %s/%s/%s: %w", act.Container, act.Scope, act.ID, err)
	}
	return compareDocs(exp.Table, want, got), nil
}
