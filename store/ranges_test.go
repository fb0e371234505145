package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// The scans of a pass (ScanSpans with Query.Since), against a Table
// service simulated over the checked fake (fakes.Tables, which the
// conformance suite runs against Azurite) as the real one answers a
// filter: it evaluates the filter over at most scanRows rows per request,
// so a range where little changed comes back as empty pages with a
// continuation, and a page holds only what matched.

// scanRows is how many rows the simulated service examines per request.
const scanRows = 10

var (
	loaded  = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	changed = loaded.Add(time.Hour)
)

// filterService is the simulated service. Its reads pass through before,
// when set, which may hold or delay them (it gets the table and the
// query, and the read's number within its range, from 1).
type filterService struct {
	t      *testing.T
	fake   *fakes.Tables
	before func(ctx context.Context, table string, q store.Query, n int) error

	mu    sync.Mutex
	reads map[string]int // per table and range
	total int
}

func newFilterService(t *testing.T, tables map[string][]transform.Row) *filterService {
	f := fakes.NewTables()
	for name, rows := range tables {
		f.Add(name, rows...)
	}
	return &filterService{t: t, fake: f, reads: map[string]int{}}
}

// rangeOf names the range q reads in table: its bounds (none for a span's
// first page, which is read over the whole span).
func rangeOf(table string, q store.Query) string {
	k := func(k *store.Key) string {
		if k == nil {
			return "-"
		}
		return k.PartitionKey + "/" + k.RowKey
	}
	return table + " [" + k(q.From) + ", " + k(q.To) + ")"
}

func (s *filterService) ReadPage(ctx context.Context, table string, q store.Query, from store.Cursor) (store.Page, error) {
	s.mu.Lock()
	s.reads[rangeOf(table, q)]++
	n := s.reads[rangeOf(table, q)]
	s.total++
	s.mu.Unlock()
	if q.Top > 0 && q.Top < scanRows {
		s.t.Errorf("a page of %d rows asked for: fewer than the %d a request may match", q.Top, scanRows)
	}
	if s.before != nil {
		if err := s.before(ctx, table, q, n); err != nil {
			return store.Page{}, err
		}
	}
	raw := q
	raw.Since, raw.Top = time.Time{}, scanRows
	p, err := s.fake.ReadPage(ctx, table, raw, from)
	if err != nil {
		return store.Page{}, err
	}
	out := store.Page{Rows: []transform.Row{}, Next: p.Next}
	for _, row := range p.Rows {
		if q.Match(row.PartitionKey, row.RowKey, row.Timestamp) {
			out.Rows = append(out.Rows, row)
		}
	}
	return out, nil
}

// passTables is a deployment's tables for a pass, with rows in every
// range of the test splits: T, where one row in 37 changed since loaded
// (none among the first); U, where nothing changed; V, where one row in
// 50 changed.
func passTables(n int) map[string][]transform.Row {
	table := func(n, every int) []transform.Row {
		rows := memRows(n)
		for i := range rows {
			rows[i].Timestamp = loaded
			if every > 0 && i%every == every-1 {
				rows[i].Timestamp = changed
			}
		}
		return rows
	}
	return map[string][]transform.Row{"T": table(n, 37), "U": table(n/2, 0), "V": table(n/3, 50)}
}

var passSpans = []store.Span{
	{Table: "T", Query: store.Query{Since: changed}, Splits: testSplits},
	{Table: "U", Query: store.Query{Since: changed}, Splits: testSplits},
	{Table: "V", Query: store.Query{Since: changed}, Splits: testSplits[:3]},
}

// want is what one plain scan of each span's table (store.Scan, one
// range, page after page) reads, span by span.
func (s *filterService) want(t *testing.T, spans []store.Span) [][]string {
	t.Helper()
	out := make([][]string, len(spans))
	for i, sp := range spans {
		err := store.Scan(context.Background(), s.fake, "", sp.Table, sp.Query, store.Cursor{}, func(p store.Page) error {
			out[i] = append(out[i], keysOf(p.Rows)...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// scanned is what ScanSpans passed on: the keys span by span, and each
// span's pages without a Next (its last).
type scannedSpans struct {
	keys  [][]string
	ends  []int
	order []int // the span of each page, in the order passed on
}

func scanSpans(ctx context.Context, s store.PageReader, spans []store.Span) (scannedSpans, error) {
	got := scannedSpans{keys: make([][]string, len(spans)), ends: make([]int, len(spans))}
	err := store.ScanSpans(ctx, s, "", spans, func(i int, p store.Page) error {
		for _, row := range p.Rows {
			if row.Table != spans[i].Table {
				return fmt.Errorf("a row of %s passed on with Table %q", spans[i].Table, row.Table)
			}
		}
		got.keys[i] = append(got.keys[i], keysOf(p.Rows)...)
		got.order = append(got.order, i)
		if p.Next.IsZero() {
			got.ends[i]++
		}
		return nil
	})
	return got, err
}

// TestScanSpansInOrder: the rows of every span once, in key order, span
// after span, each span's last page alone without a Next (a table where
// nothing changed passes one empty page), whatever the splits.
func TestScanSpansInOrder(t *testing.T) {
	s := newFilterService(t, passTables(3000))
	want := s.want(t, passSpans)
	if len(want[0]) == 0 || len(want[1]) != 0 || len(want[2]) == 0 {
		t.Fatalf("the tables do not test what they should: %d, %d and %d rows changed", len(want[0]), len(want[1]), len(want[2]))
	}
	got, err := scanSpans(context.Background(), s, passSpans)
	if err != nil {
		t.Fatal(err)
	}
	for i := range passSpans {
		if !slices.Equal(got.keys[i], want[i]) || got.ends[i] != 1 {
			t.Errorf("span %d: %d rows (in order: %v), %d last pages; want the %d one scan reads and 1 last page", i, len(got.keys[i]), slices.Equal(got.keys[i], want[i]), got.ends[i], len(want[i]))
		}
	}
	if !slices.IsSorted(got.order) {
		t.Errorf("pages passed on by span %v: not span after span", got.order)
	}
}

// TestScanSpansReadsEveryRangeAtOnce: a pass reads every range of every
// table at the same time, however many rows each holds and whatever the
// caller does: each range's n-th read waits until every range still
// reading has started its n-th, which only ranges read side by side get
// past (ranges read a few at a time, or one table after the other, wait
// for each other until the hang bound). Large spans (store.Ranges.Span)
// the same, without their first page over the whole span.
func TestScanSpansReadsEveryRangeAtOnce(t *testing.T) {
	for _, large := range []bool{false, true} {
		spans := slices.Clone(passSpans)
		for i := range spans {
			spans[i].Large = large
		}
		s := newFilterService(t, passTables(3000))
		b := newLockstep(s, spans)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang bound, not a timing
		got, err := scanSpans(ctx, b, spans)
		cancel()
		if err != nil {
			t.Fatalf("large %v: the ranges were not read at once: %v (%s)", large, err, b.stuck())
		}
		want := s.want(t, spans)
		for i := range spans {
			if !slices.Equal(got.keys[i], want[i]) || got.ends[i] != 1 {
				t.Errorf("large %v, span %d: %d rows, %d last pages; want the %d one scan reads and 1 last page", large, i, len(got.keys[i]), got.ends[i], len(want[i]))
			}
			// A Large span's ranges start at once, without a first page
			// over the whole span (for a filter, a whole partition).
			if n := s.reads[rangeOf(spans[i].Table, store.Query{})]; large && n != 0 {
				t.Errorf("large span %d: %d reads over the whole span, want none", i, n)
			}
		}
		if !slices.IsSorted(got.order) {
			t.Errorf("large %v: pages passed on by span %v: not span after span", large, got.order)
		}
		if b.rounds < 10 {
			t.Errorf("large %v: the ranges read in %d rounds: the test reads too few pages to tell", large, b.rounds)
		}
	}
}

// rangesOf lists the ranges a ScanSpans of spans reads after each span's
// first page, as rangeOf names them.
func rangesOf(spans []store.Span) []string {
	var out []string
	for _, sp := range spans {
		for i := 0; i <= len(sp.Splits); i++ {
			q := store.Query{}
			if i > 0 {
				q.From = &sp.Splits[i-1]
			}
			if i < len(sp.Splits) {
				q.To = &sp.Splits[i]
			}
			out = append(out, rangeOf(sp.Table, q))
		}
	}
	return out
}

// lockstep reads through inner, holding each range's n-th read until
// every range not read to its end has started its n-th; a span's first
// page goes through.
type lockstep struct {
	inner   store.PageReader
	mu      sync.Mutex
	changed chan struct{}
	started map[string]int  // reads started, by range
	done    map[string]bool // the ranges read to their end
	rounds  int
}

// newLockstep reads through inner in lockstep across the ranges of a
// ScanSpans of spans.
func newLockstep(inner store.PageReader, spans []store.Span) *lockstep {
	b := &lockstep{inner: inner, changed: make(chan struct{}), started: map[string]int{}, done: map[string]bool{}}
	for _, r := range rangesOf(spans) {
		b.started[r] = 0
	}
	return b
}

func (b *lockstep) ReadPage(ctx context.Context, table string, q store.Query, from store.Cursor) (store.Page, error) {
	r := rangeOf(table, q)
	b.mu.Lock()
	if _, ok := b.started[r]; !ok {
		b.mu.Unlock()
		return b.inner.ReadPage(ctx, table, q, from) // a span's first page
	}
	b.started[r]++
	n := b.started[r]
	b.rounds = max(b.rounds, n)
	b.signal()
	for !b.allStarted(n) {
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return store.Page{}, ctx.Err()
		}
		b.mu.Lock()
	}
	b.mu.Unlock()
	p, err := b.inner.ReadPage(ctx, table, q, from)
	if err == nil && p.Next.IsZero() {
		b.mu.Lock()
		b.done[r] = true
		b.signal()
		b.mu.Unlock()
	}
	return p, err
}

// signal wakes the reads that wait (the caller holds mu).
func (b *lockstep) signal() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// allStarted reports whether every range not read to its end has
// started its n-th read (the caller holds mu).
func (b *lockstep) allStarted(n int) bool {
	for r, started := range b.started {
		if started < n && !b.done[r] {
			return false
		}
	}
	return true
}

// stuck says how far each range got, for a failure.
func (b *lockstep) stuck() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return fmt.Sprintf("reads started per range: %v; read to the end: %v", b.started, b.done)
}

// TestScanSpansExactUnderAnyTiming: whatever order the ranges' reads
// end in (each read delayed at random), a pass passes on exactly the rows
// one scan of each table reads, in that order.
func TestScanSpansExactUnderAnyTiming(t *testing.T) {
	s := newFilterService(t, passTables(2000))
	want := s.want(t, passSpans)
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var mu sync.Mutex
		s.before = func(ctx context.Context, _ string, _ store.Query, _ int) error {
			mu.Lock()
			d := time.Duration(rng.IntN(300)) * time.Microsecond
			mu.Unlock()
			time.Sleep(d)
			return nil
		}
		got, err := scanSpans(context.Background(), s, passSpans)
		if err != nil {
			t.Fatal(err)
		}
		for i := range passSpans {
			if !slices.Equal(got.keys[i], want[i]) || got.ends[i] != 1 {
				t.Errorf("seed %d, span %d: %d rows, %d last pages; want the %d one scan reads and 1 last page", seed, i, len(got.keys[i]), got.ends[i], len(want[i]))
			}
		}
	}
}

// TestScanSpansOneRequestWhenItFits: a span whose rows fit in its first
// page is read with that one request, its ranges not at all; a span
// whose first page says more follows is read in its ranges, each after
// that page's last row.
func TestScanSpansOneRequestWhenItFits(t *testing.T) {
	f := fakes.NewTables()
	f.Add("T", memRows(500)...)
	rows := f.Rows("T")
	m := &countingReader{inner: f}
	var got []string
	err := store.ScanRanges(context.Background(), m, "", "T", store.Query{}, testSplits, func(p store.Page) error {
		got = append(got, keysOf(p.Rows)...)
		return nil
	})
	if err != nil || !slices.Equal(got, keysOf(rows)) || m.reads != 1 {
		t.Errorf("err %v, %d rows of %d, %d requests; want every row in one request", err, len(got), len(rows), m.reads)
	}
	f.PageSize = 100
	m.reads, m.queries, got = 0, nil, nil
	err = store.ScanRanges(context.Background(), m, "", "T", store.Query{}, testSplits, func(p store.Page) error {
		got = append(got, keysOf(p.Rows)...)
		return nil
	})
	if err != nil || !slices.Equal(got, keysOf(rows)) {
		t.Errorf("in pages of 100: err %v, %d rows of %d", err, len(got), len(rows))
	}
	if first := m.queries[0]; first.From != nil || first.To != nil || first.After != nil {
		t.Errorf("the first request read %+v, want the whole table", first)
	}
	last := rows[99] // the first page's last row
	for _, q := range m.queries[1:] {
		if q.After == nil || *q.After != (store.Key{PartitionKey: last.PartitionKey, RowKey: last.RowKey}) {
			t.Errorf("a range read %+v, want it after the first page's last row %s/%s", q, last.PartitionKey, last.RowKey)
		}
	}
}

// countingReader counts the requests to inner and keeps their queries.
type countingReader struct {
	inner   store.PageReader
	mu      sync.Mutex
	reads   int
	queries []store.Query
}

func (c *countingReader) ReadPage(ctx context.Context, table string, q store.Query, from store.Cursor) (store.Page, error) {
	c.mu.Lock()
	c.reads++
	if from.IsZero() {
		c.queries = append(c.queries, q)
	}
	c.mu.Unlock()
	return c.inner.ReadPage(ctx, table, q, from)
}

// TestScanSpansFailedRange: a range whose read fails ends the scan with
// that error, named with its table, after every row before the range;
// the context's end ends it with the context's error.
func TestScanSpansFailedRange(t *testing.T) {
	s := newFilterService(t, passTables(3000))
	want := s.want(t, passSpans)
	boom := errors.New("boom")
	s.before = func(_ context.Context, table string, q store.Query, n int) error {
		if table == "V" && q.From != nil && *q.From == testSplits[2] && n == 2 {
			return boom
		}
		return nil
	}
	got, err := scanSpans(context.Background(), s, passSpans)
	if !errors.Is(err, boom) || err.Error() != "read V: boom" {
		t.Fatalf("err %v, want read V: boom", err)
	}
	if !slices.Equal(got.keys[0], want[0]) || !slices.Equal(got.keys[1], want[1]) {
		t.Errorf("the spans before the failure: %d and %d rows, want %d and %d", len(got.keys[0]), len(got.keys[1]), len(want[0]), len(want[1]))
	}
	for _, k := range got.keys[2] {
		if k >= testSplits[2].PartitionKey {
			t.Errorf("row %s of the failed range or after it passed on", k)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.before = func(ctx context.Context, table string, _ store.Query, _ int) error {
		if table == "U" {
			cancel()
		}
		return ctx.Err()
	}
	if _, err := scanSpans(ctx, s, passSpans); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err %v, want context.Canceled", err)
	}
}
