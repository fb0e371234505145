package verify

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// MaxDetailedDocs is how many differing docs the report lists with their
// field paths (from their second read, recheck.go), and how many docs
// without ttl and docs changed while verify ran it names; beyond it only
// the counts are exact. More differences than this point to a systematic
// cause (wrong options, wrong database) that the first thousand already
// show.
const MaxDetailedDocs = 1000

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
	// DefaultPageSize.
	PageSize int
	// Database is recorded in the report.
	Database string
	// TempDir is where the sorted runs go beyond what memory holds (a
	// directory verify makes and removes); "" means a temporary directory.
	TempDir string
	// Since, when not zero, makes the check a --since (since.go): the
	// rows and docs changed at or after it. Base, when not nil, is the
	// full verify it builds on.
	Since time.Time
	Base  *Base
	// DocsDir, when not empty, is where a full check (every table, no
	// sample) writes DocsFile, for a later --since.
	DocsDir string
	// Started is when verify started (the command's start): a row or a
	// doc written at or after it is a change in flight (recheck.go). Zero
	// means when Run starts.
	Started time.Time

	// Ranges are where the tables split into key ranges read at once:
	// Bifrost's own splits and those a full verify learned
	// (store.LoadRanges); nil means Bifrost's alone. A full check with
	// DocsDir learns them again and writes store.RangesFile there.
	Ranges store.Ranges

	// sizes bound what verify holds in memory; zero fields take the
	// defaults. Tests make them tiny.
	sizes sizes
	// rangeRows is the most rows of a range a full check learns; 0
	// means store.RangeRows. Tests make it small.
	rangeRows int
	// spilled, when not nil, is set when records went to disk.
	spilled *bool
}

// Verifier compares the source tables with Cosmos DB and Blob Storage.
// Its fields are required except Progress. A Verifier is not meant to run
// twice at once.
type Verifier struct {
	Rows     RowSource
	Docs     DocSource
	Blobs    BlobLister
	Progress Progress
	// Changes and Position, needed by --since alone, read the change feed
	// of the containers: Position(t) is where the feed of the docs
	// changed at or after t begins (azure.ChangeFeedSince).
	Changes  ChangeSource
	Position func(t time.Time) string
	// Now is the clock of the report's elapsed time; nil means time.Now.
	Now func() time.Time
}

// key identifies a doc (container, scope, id) or a row (table, PK, RK).
type key [16]byte

// keyOf is the first 16 bytes of the SHA-256 of a, b and c, each
// followed by a zero byte but the last.
func keyOf(a, b, c string) key {
	var buf [256]byte
	in := append(append(append(append(append(buf[:0], a...), 0), b...), 0), c...)
	sum := sha256.Sum256(in)
	return key(sum[:16])
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

// full reports whether opts (defaulted) judge every row: every table, no
// sample, not --since.
func (o Options) full() bool {
	return o.Sample >= 1 && slices.Equal(o.Tables, transform.Tables()) && o.Since.IsZero()
}

// state is one verify run: its options, the blob listing and the
// sorters it works with.
type state struct {
	v    *Verifier
	opts Options
	work *work
	now  func() time.Time

	blobs       transform.BlobIndex
	blobsListed int
	// learned learns the tables' key ranges in a full check with
	// DocsDir, saved with its docs file; nil otherwise.
	learned *store.KeySampler
}

// Run verifies and returns the report. It returns an error only when it
// could not finish (a service error, ctx cancelled, sorted runs that
// could not be written or read); a selected table that does not exist is
// such an error (the RowSource's, naming the table), never an empty
// table. Mismatches and rows that are not migrated are in the report
// (Report.OK false), not errors. It removes its sorted runs before it
// returns.
func (v *Verifier) Run(ctx context.Context, opts Options) (r *Report, err error) {
	now := v.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	if opts.Started.IsZero() {
		opts.Started = start
	}
	if v.Progress == nil {
		v.Progress = noProgress{}
	}
	if len(opts.Tables) == 0 {
		opts.Tables = transform.Tables()
	}
	if opts.Sample <= 0 || opts.Sample > 1 {
		opts.Sample = 1
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	opts.Transform = opts.Transform.WithDefaults()
	if err := opts.Transform.Validate(); err != nil {
		return nil, err
	}
	s := &state{v: v, opts: opts, blobs: transform.BlobIndex{}, work: newWork(opts.TempDir, opts.sizes), now: now}
	defer func() {
		if opts.spilled != nil {
			s.work.mu.Lock()
			*opts.spilled = s.work.base != ""
			s.work.mu.Unlock()
		}
		if cerr := s.work.close(); cerr != nil && err == nil {
			r, err = nil, fmt.Errorf("remove verify's sorted runs: %w", cerr)
		}
	}()
	v.Progress.Step("listing blobs of execution-data")
	if err := s.listBlobs(ctx); err != nil {
		return nil, err
	}
	var j joined
	var dw *docsWriter
	if opts.Since.IsZero() {
		j, dw, err = s.full(ctx)
	} else {
		j, err = s.since(ctx)
	}
	if err != nil {
		return nil, err
	}
	if dw != nil {
		defer func() {
			if err != nil {
				dw.abort()
			}
		}()
	}
	r = j.r
	r.Started, r.startedAt = opts.Started.UTC().Format(time.RFC3339), opts.Started
	r.BlobsListed = s.blobsListed
	r.Settings = Settings{
		Database: opts.Database, Tables: opts.Tables, Sample: opts.Sample,
		ExecutionTTL: string(opts.Transform.ExecutionTTL), BlobThreshold: opts.Transform.BlobThreshold,
		Relationships: string(opts.Transform.Relationships), Strict: opts.Transform.Strict,
		Now: transform.FormatTimestamp(opts.Transform.Now),
	}
	if err := s.recheck(ctx, r, j.counts, j.jobs, j.missing); err != nil {
		return nil, err
	}
	r.Scope = newScope(opts, r.Totals.Rows, j.rowsRead)
	r.Scope.DocsJudged, r.Scope.Base = j.docsJudged, j.base
	r.Partial = r.Scope.partial()
	if dw != nil {
		if err := dw.commit(); err != nil {
			return nil, err
		}
		r.docsWritten = true
	}
	if s.learned != nil {
		if err := store.SaveRanges(opts.DocsDir, s.learned.Ranges()); err != nil {
			return nil, fmt.Errorf("save the tables' key ranges: %w", err)
		}
	}
	r.ElapsedSeconds = now().Sub(start).Seconds()
	return r, nil
}

// full reads every row of the selected tables and every doc, and joins
// them; a full check (every table, no sample) with DocsDir also writes
// DocsFile, which the caller commits once the report is whole.
func (s *state) full(ctx context.Context) (j joined, dw *docsWriter, err error) {
	opts, v := s.opts, s.v
	rows, docs := newRowIndex(s.work), newDocIndex(s.blobs, s.work)
	if opts.DocsDir != "" && opts.full() {
		s.learned = store.NewKeySampler(cmp.Or(opts.rangeRows, store.RangeRows))
	}
	// The two services are read at the same time: neither side needs the
	// other until the join. The first failure stops the other side.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return readDocs(gctx, v.Docs, opts.PageSize, v.Progress, docs) })
	g.Go(func() error {
		return rowReader{rows: v.Rows, opts: opts, blobs: s.blobs, progress: v.Progress, work: s.work, learn: s.learned}.read(gctx, rows)
	})
	if err := g.Wait(); err != nil {
		return j, nil, err
	}
	v.Progress.Step("comparing")
	var manifest func(*actualDoc) error
	if opts.DocsDir != "" && opts.full() {
		if dw, err = newDocsWriter(filepath.Join(opts.DocsDir, DocsFile), opts.Started); err != nil {
			return j, nil, err
		}
		manifest = dw.add
	}
	fail := func(err error) (joined, *docsWriter, error) {
		if dw != nil {
			dw.abort()
		}
		return joined{}, nil, fmt.Errorf("verify's sorted runs: %w", err)
	}
	if j, err = join(rows, docs, s.work, opts.Tables, opts.Sample, MaxRecheck, manifest); err != nil {
		return fail(err)
	}
	r := j.r
	if r.AccessPatterns, r.Warnings[transform.ReasonDanglingIndex], err = rows.access.result(s.work); err != nil {
		return fail(err)
	}
	if r.Warnings[transform.ReasonDanglingIndex] == 0 {
		delete(r.Warnings, transform.ReasonDanglingIndex)
	}
	j.rowsRead = rows.read
	return j, dw, nil
}

func (s *state) listBlobs(ctx context.Context) error {
	return s.v.Blobs.List(ctx, func(name string, size int64) error {
		s.blobsListed++
		return s.blobs.Add(name, size)
	})
}
