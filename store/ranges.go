package store

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/bifrost/bifrost-migrate/transform"
)

// Span is one table's part of a scan (ScanSpans): the rows of Table that
// Query selects, read in key ranges split at Splits (keys in ascending
// order; Splits gives those of the Bifrost tables).
type Span struct {
	Table  string
	Query  Query
	Splits []Key
	// Large says the table is known to hold many pages of rows (a full
	// read learned splits of it: Ranges.Large): its ranges are read at
	// once from the start, without the first page over the whole span,
	// which for a filter would have the service read a whole partition
	// before any range starts.
	Large bool
}

// RowsAhead is how many rows the ranges after the one being delivered may
// hold between them, read or being read, and not yet passed on: one
// page's worth (a page is megabytes; one page ahead was as fast as two at
// 150 ms: commit b730f09, docs/performance.md). A range reading ahead
// holds, while its request is out, as many rows as the page may bring
// (its Top), and afterwards the rows it brought.
const RowsAhead = PageSize

// How much of RowsAhead a range asks for at once. A range of a scan that
// filters (Query.Since) asks for pages of sparsePage rows at first (fewer
// when there are more ranges than RowsAhead/sparsePage: each its share
// of RowsAhead), the size doubling after each page that came back full:
// where little changed, every range of a pass keeps a request out at
// once within RowsAhead (37 ranges × 16 = 592 rows), while a range where
// much changed soon reads full pages. Any other range, and a span's first page, asks
// for full pages. A range reads ahead once minAhead rows are free (or all
// it asks for), in a page of at most the rows free.
const (
	sparsePage = 16
	minAhead   = PageSize / 10
)

// ScanRanges is ScanSpans of one span: the rows of table that q selects,
// split at splits.
func ScanRanges(ctx context.Context, r PageReader, prefix, table string, q Query, splits []Key, fn func(Page) error) error {
	return ScanSpans(ctx, r, prefix, []Span{{Table: table, Query: q, Splits: splits}}, func(_ int, p Page) error { return fn(p) })
}

// ScanSpans reads the rows the spans select and passes them to fn a page
// at a time, in order: the spans one after the other, each span's rows in
// key order, with the index of the page's span and every row's Table set
// to its span's table. A caller that checkpoints after each page stays
// exact, and one that judges rows in read order (SPEC §10: the first row
// of an id owns it) sees them as one scan of each table, one table after
// the other, would give them.
//
// It reads them at once (SPEC §14, Latency). A span's first page is one
// query over the whole span: a span whose rows fit in it (a pass over a
// table where little changed, a small table) takes that one request.
// When more follows, the rest of the span is read in its key ranges,
// each from the first key after that page, and every range of every span
// reads at the same time: a scan that filters (Query.Since, which the
// service evaluates over every row of a range) takes about the time of
// its slowest range, not the sum of them. Memory stays bounded whatever
// the number of ranges: the range being delivered reads one page ahead of
// fn, and the ranges after it hold at most RowsAhead rows between them,
// granted to the earliest range first. A page that comes back empty holds
// nothing, so ranges that find nothing read on without waiting.
//
// Empty pages are not passed on, except the last page of a span. A
// page's Next says only whether more pages of its span follow (zero on
// the span's last page): it is not a position to resume from; a caller
// resumes after the last row it committed (Query.After). fn may end the
// scan with ErrStop; any other error of fn or of the service (named with
// the table, at the turn of the range that failed, after the pages before
// it) ends it and is returned. ScanSpans returns once its reading
// goroutines are done.
func ScanSpans(ctx context.Context, r PageReader, prefix string, spans []Span, fn func(span int, p Page) error) error {
	ctx, cancel := context.WithCancel(ctx)
	s := newSpanRead(spans)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i := range s.lanes {
		wg.Go(func() { s.read(ctx, r, prefix, i) })
	}
	if err := s.deliver(ctx, fn); !errors.Is(err, ErrStop) {
		return err
	}
	return nil
}

// spanRead is one ScanSpans: its lanes — for each span, its first page
// (the probe) and then its key ranges, in the order they are delivered —
// and the read-ahead budget. mu guards what follows it; changed is closed
// and replaced at every change, for those who wait on one.
type spanRead struct {
	spans []Span
	lanes []*lane

	mu      sync.Mutex
	changed chan struct{}
	head    int    // the lane being delivered
	free    int    // the rows of RowsAhead no page holds
	waiting []bool // the lanes that wait for rows of the budget
	probes  []probe
}

// lane is one range of a span (or the span's probe) and the pages read of
// it that deliver has not taken yet.
type lane struct {
	span  int
	q     Query
	probe bool // the span's first page, a query over all of it
	last  bool // the span's last range
	want  int  // the rows it asks for when it reads ahead
	pages []heldPage
	done  bool  // its reader ended: the range was read to its end, or err
	err   error // the read's error, passed on at the lane's turn
}

// heldPage is a page a lane read: held is the rows of the budget it
// holds (none when read as the head), final says it is the lane's last.
type heldPage struct {
	Page
	held  int
	final bool
}

// probe is what a span's first page said, once known: ended when it was
// the span's only page (or failed), after the key of its last row (nil
// without rows): the span's ranges read the rows after it.
type probe struct {
	known, ended bool
	after        *Key
}

func newSpanRead(spans []Span) *spanRead {
	s := &spanRead{spans: spans, changed: make(chan struct{}), free: RowsAhead, probes: make([]probe, len(spans))}
	ranges := make([][]Query, len(spans))
	n := 0
	for i, sp := range spans {
		ranges[i] = keyRanges(sp.Query, sp.Splits)
		n += len(ranges[i])
	}
	// Where little changed, every range keeps a request out at once:
	// a sparse page is at most the budget's share of each range.
	sparse := max(1, min(sparsePage, RowsAhead/max(n, 1)))
	for i, sp := range spans {
		full := pageSize(sp.Query)
		if sp.Large {
			s.probes[i] = probe{known: true}
		} else {
			s.lanes = append(s.lanes, &lane{span: i, q: sp.Query, probe: true, want: full})
		}
		want := full
		if !sp.Query.Since.IsZero() {
			want = min(sparse, full)
		}
		for j, rq := range ranges[i] {
			s.lanes = append(s.lanes, &lane{span: i, q: rq, last: j == len(ranges[i])-1, want: want})
		}
	}
	s.waiting = make([]bool, len(s.lanes))
	return s
}

// signal wakes those who wait for a change (the caller holds mu).
func (s *spanRead) signal() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// await waits until cond holds or ctx ends (whose error it returns). The
// caller holds mu, and holds it again when await returns.
func (s *spanRead) await(ctx context.Context, cond func() bool) error {
	for !cond() {
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
		}
		s.mu.Lock()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// read reads lane i to its end: the probe its one page; a range, once its
// span's probe says more follows, from the first key after the probe's
// page.
func (s *spanRead) read(ctx context.Context, r PageReader, prefix string, i int) {
	l := s.lanes[i]
	table := s.spans[l.span].Table
	q, ok, err := s.rangeQuery(ctx, l)
	if !ok {
		s.end(l, err, 0)
		return
	}
	var from Cursor
	for {
		top, held, err := s.take(ctx, i)
		if err != nil {
			s.end(l, err, 0)
			return
		}
		pq := q
		pq.Top = top
		p, err := r.ReadPage(ctx, prefix+table, pq, from)
		if err != nil {
			s.end(l, fmt.Errorf("read %s: %w", table, err), held)
			return
		}
		if !s.put(l, p, held) {
			return
		}
		from = p.Next
	}
}

// rangeQuery returns what lane l reads, and false when it reads nothing
// (with ctx's error when ctx ended first): a range waits for its span's
// probe, and reads nothing when the probe was the span's only page.
func (s *spanRead) rangeQuery(ctx context.Context, l *lane) (Query, bool, error) {
	if l.probe {
		return l.q, true, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pr := &s.probes[l.span]
	if err := s.await(ctx, func() bool { return pr.known }); err != nil {
		return Query{}, false, err
	}
	q := l.q
	if pr.after != nil && (q.After == nil || compareKeys(*pr.after, *q.After) > 0) {
		q.After = pr.after
	}
	return q, !pr.ended && !emptyRange(q), nil
}

// take waits until lane i may read a page and returns the page's size
// (its Top) and the rows of the budget it holds for it: the head reads
// full pages, each once deliver took the one it read before; any other
// lane waits until minAhead rows of the budget (or all it asks for) are
// free and no earlier lane waits for them, and reads a page of what it
// asks for, at most the rows free.
func (s *spanRead) take(ctx context.Context, i int) (size, held int, err error) {
	l := s.lanes[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting[i] = true
	err = s.await(ctx, func() bool {
		if i == s.head {
			return len(l.pages) == 0
		}
		return s.free >= min(minAhead, l.want) && !s.earlierWaits(i)
	})
	s.waiting[i] = false
	s.signal()
	switch {
	case err != nil:
		return 0, 0, err
	case i == s.head:
		return pageSize(l.q), 0, nil
	}
	held = min(l.want, s.free)
	s.free -= held
	return held, held, nil
}

// pageSize is the page size of q: its Top, PageSize when 0.
func pageSize(q Query) int {
	if q.Top <= 0 || q.Top > PageSize {
		return PageSize
	}
	return q.Top
}

// earlierWaits reports whether a lane between the head and lane i waits
// for rows of the budget (the caller holds mu).
func (s *spanRead) earlierWaits(i int) bool {
	for j := s.head + 1; j < i; j++ {
		if s.waiting[j] {
			return true
		}
	}
	return false
}

// put keeps page p of lane l, read with held rows of the budget (its
// size: none when read as the head), for deliver: a page with rows, and
// the lane's last page; it gives the rows it does not hold back to the
// budget, and doubles what the lane asks for when the page came back
// full. It returns whether the lane reads on.
func (s *spanRead) put(l *lane, p Page, held int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.signal()
	if held > 0 {
		if len(p.Rows) >= held {
			l.want = min(2*l.want, pageSize(l.q))
		}
		s.free += held - len(p.Rows)
		held = len(p.Rows)
	}
	final := l.probe || p.Next.IsZero()
	if l.probe {
		pr := &s.probes[l.span]
		pr.known, pr.ended = true, p.Next.IsZero()
		if n := len(p.Rows); n > 0 {
			pr.after = &Key{PartitionKey: p.Rows[n-1].PartitionKey, RowKey: p.Rows[n-1].RowKey}
		}
	}
	if len(p.Rows) > 0 || final {
		l.pages = append(l.pages, heldPage{Page: p, held: held, final: final})
	}
	l.done = final
	return !final
}

// end ends lane l's reading with err (nil: nothing to read), giving the
// held rows of the budget back. A probe that ends so ends its span: the
// ranges read nothing.
func (s *spanRead) end(l *lane, err error, held int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l.done, l.err = true, err
	s.free += held
	if l.probe && !s.probes[l.span].known {
		s.probes[l.span] = probe{known: true, ended: true}
	}
	s.signal()
}

// deliver passes the lanes' pages to fn in order (see ScanSpans), each
// lane once it is the head.
func (s *spanRead) deliver(ctx context.Context, fn func(span int, p Page) error) error {
	ended := false // the current span's last page was passed on
	for i, l := range s.lanes {
		s.setHead(i)
		if i == 0 || s.lanes[i-1].span != l.span {
			ended = false // the span's first lane: its probe, or its first range
		}
		for {
			hp, ok, err := s.next(ctx, l)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			last := hp.final && (l.last || l.probe && hp.Next.IsZero())
			if !last && hp.Next.IsZero() {
				// More follows, in the span's next range: a marker, not a position.
				hp.Next = Cursor{NextPartitionKey: "next range"}
			}
			if len(hp.Rows) == 0 && !last {
				continue
			}
			ended = ended || last
			if err := s.pass(l.span, hp.Page, fn); err != nil {
				return err
			}
		}
		if l.last && !ended {
			// The span ended in a range that read nothing.
			if err := s.pass(l.span, Page{}, fn); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}

// pass passes page p of span to fn, its rows' Table set.
func (s *spanRead) pass(span int, p Page, fn func(int, Page) error) error {
	for j := range p.Rows {
		p.Rows[j].Table = s.spans[span].Table
	}
	return fn(span, p)
}

// setHead makes lane i the one being delivered.
func (s *spanRead) setHead(i int) {
	s.mu.Lock()
	s.head = i
	s.signal()
	s.mu.Unlock()
}

// next waits for lane l's next page and takes it, giving the rows it held
// back to the budget; ok is false once the lane has no more (err: its
// read's error), or ctx ended (err: ctx's).
func (s *spanRead) next(ctx context.Context, l *lane) (hp heldPage, ok bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return heldPage{}, false, err
	}
	if err := s.await(ctx, func() bool { return len(l.pages) > 0 || l.done }); err != nil {
		return heldPage{}, false, err
	}
	if len(l.pages) == 0 {
		return heldPage{}, false, l.err
	}
	hp = l.pages[0]
	l.pages[0] = heldPage{}
	l.pages = l.pages[1:]
	s.free += hp.held
	s.signal()
	return hp, true, nil
}

// keyRanges splits q at splits into queries of consecutive key ranges,
// leaving out the ranges q.After or q.From start after and those q.To
// ends before.
func keyRanges(q Query, splits []Key) []Query {
	var out []Query
	lo := q.From
	for i := 0; i <= len(splits); i++ {
		var hi *Key
		if i < len(splits) {
			hi = &splits[i]
		}
		if q.To != nil && (hi == nil || compareKeys(*hi, *q.To) >= 0) {
			hi = q.To // the last range, or one that reaches past q.To
		}
		rq := q
		rq.From, rq.To = lo, hi
		if !emptyRange(rq) {
			out = append(out, rq)
		}
		if hi == nil || hi == q.To {
			break
		}
		if lo == nil || compareKeys(*hi, *lo) > 0 {
			lo = hi // the next range starts at the split, or at q.From if later
		}
	}
	if len(out) == 0 {
		out = append(out, q) // an empty query still reads one (empty) page
	}
	return out
}

// emptyRange reports whether no key can fall in rq's bounds.
func emptyRange(rq Query) bool {
	switch {
	case rq.From != nil && rq.To != nil && compareKeys(*rq.From, *rq.To) >= 0:
		return true
	case rq.After != nil && rq.To != nil && compareKeys(*rq.After, *rq.To) >= 0:
		return true
	}
	return false
}

func compareKeys(a, b Key) int {
	return transform.CompareKeys(a.PartitionKey, a.RowKey, b.PartitionKey, b.RowKey)
}
