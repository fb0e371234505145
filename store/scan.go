package store

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/bifrost/bifrost-migrate/transform"
)

// PageReader reads one page of a table: the one thing Scan and Lookup
// need of a row source.
type PageReader interface {
	ReadPage(ctx context.Context, table string, q Query, from Cursor) (Page, error)
}

// ErrStop, returned by a Scan callback, ends the scan early without error.
var ErrStop = errors.New("stop scanning")

// Scan reads table from `from` to its end, calling fn for each page in key
// order (empty pages that still carry a cursor included), with every row's
// Table set to table. The service is asked for prefix+table (tests and
// benchmarks load tables under a prefix). The next page is read while fn
// works on the current one, so reading and processing overlap. fn may end
// the scan with ErrStop; any other error of fn, or of the service (named
// with the table), ends it and is returned. Scan returns only once its
// reading goroutine is done.
func Scan(ctx context.Context, r PageReader, prefix, table string, q Query, from Cursor, fn func(Page) error) error {
	ctx, cancel := context.WithCancel(ctx)
	pages := make(chan scanned, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		readRange(ctx, r, prefix, table, q, from, alone(), 0, pages)
	}()
	defer func() {
		cancel()
		<-done
	}()
	for res := range pages {
		if res.err != nil {
			return res.err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		for i := range res.page.Rows {
			res.page.Rows[i].Table = table
		}
		if err := fn(res.page); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
	return ctx.Err()
}

// Lookup reads the one row of table (prefix+table at the service) with
// key; found is false when there is none. Only the selected properties
// are read (all when sel is empty). It follows a cursor the service may
// return with an empty page.
func Lookup(ctx context.Context, r PageReader, prefix, table string, key Key, sel ...string) (row transform.Row, found bool, err error) {
	err = Scan(ctx, r, prefix, table, Query{Key: &key, Select: sel}, Cursor{}, func(p Page) error {
		if len(p.Rows) == 0 {
			return nil
		}
		row, found = p.Rows[0], true
		return ErrStop
	})
	if err != nil {
		return transform.Row{}, false, fmt.Errorf("look up %s/%s: %w", key.PartitionKey, key.RowKey, err)
	}
	return row, found, nil
}

// Read-ahead of ScanRanges: how many ranges it reads at once, and how many
// pages, in all, the ranges after the one being delivered may hold (a
// page is megabytes; one was as fast as two at 150 ms: commit b730f09,
// docs/performance.md).
const (
	RangesAtOnce = 4
	PagesAhead   = 1
)

// ScanRanges is Scan of the rows of table that q selects, split at splits
// (keys in ascending order) into key ranges that are read at the same
// time — RangesAtOnce of them, the next ones starting as earlier ones are
// read — so that a source far away is read as fast as several requests in
// flight allow (SPEC §14, Latency). Memory stays bounded whatever the
// number of ranges: the range being delivered reads one page ahead of fn,
// and the ranges after it hold at most PagesAhead pages between them.
// fn still gets the pages one at a time, in key order, so a caller that
// checkpoints after each page stays exact. Empty pages are not passed on,
// except the last one. A page's Next says only whether more pages follow
// (zero on the last page): it is not a position to resume from; a caller
// resumes after the last row it committed (Query.After). fn may end the
// scan with ErrStop; any other error of fn or of the service ends it and
// is returned. ScanRanges returns once its reading goroutines are done.
func ScanRanges(ctx context.Context, r PageReader, prefix, table string, q Query, splits []Key, fn func(Page) error) error {
	ranges := keyRanges(q, splits)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a := &ahead{tokens: make(chan struct{}, PagesAhead), head: make([]chan struct{}, len(ranges))}
	reads := make([]chan scanned, len(ranges))
	for i := range reads {
		reads[i] = make(chan scanned)
		a.head[i] = make(chan struct{})
	}
	if len(ranges) > 0 {
		close(a.head[0])
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		slots := make(chan struct{}, RangesAtOnce)
		for i, rq := range ranges {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Go(func() {
				defer func() { <-slots }()
				readRange(ctx, r, prefix, table, rq, Cursor{}, a, i, reads[i])
			})
		}
	})
	return deliver(ctx, table, ranges, reads, a, fn)
}

// ahead is the read-ahead budget of a ScanRanges: a range takes a token
// for each page it reads before its turn, and deliver gives it back when
// it takes the page; head[i] is closed when range i's turn comes, from
// which it reads without tokens.
type ahead struct {
	tokens chan struct{}
	head   []chan struct{}
}

// take waits until range i may read a page: a token, or its turn. It
// returns whether it took a token, or ctx's error.
func (a *ahead) take(ctx context.Context, i int) (bool, error) {
	select {
	case <-a.head[i]:
		return false, nil
	default:
	}
	select {
	case <-a.head[i]:
		return false, nil
	case a.tokens <- struct{}{}:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// scanned is one page a range reader read, or its error; token says
// whether it holds a read-ahead token.
type scanned struct {
	page  Page
	err   error
	token bool
}

// alone is the read-ahead of a scan of one range: its turn from the
// start.
func alone() *ahead {
	a := &ahead{head: []chan struct{}{make(chan struct{})}}
	close(a.head[0])
	return a
}

// readRange reads the range rq (the i-th of a) from `from` to its end into
// out, then closes it.
func readRange(ctx context.Context, r PageReader, prefix, table string, rq Query, from Cursor, a *ahead, i int, out chan<- scanned) {
	defer close(out)
	for {
		token, err := a.take(ctx, i)
		if err != nil {
			return
		}
		p, err := r.ReadPage(ctx, prefix+table, rq, from)
		if err != nil {
			err = fmt.Errorf("read %s: %w", table, err)
		}
		select {
		case out <- scanned{p, err, token}:
		case <-ctx.Done():
			return
		}
		if err != nil || p.Next.IsZero() {
			return
		}
		from = p.Next
	}
}

// deliver passes the pages of the ranges to fn in order (see ScanRanges).
// It stops when ctx ends: a range whose reader never started (the scan
// was cancelled first) is never closed.
func deliver(ctx context.Context, table string, ranges []Query, reads []chan scanned, a *ahead, fn func(Page) error) error {
	for i := range ranges {
		if i > 0 {
			close(a.head[i])
		}
		for {
			var res scanned
			var more bool
			select {
			case res, more = <-reads[i]:
			case <-ctx.Done():
				return ctx.Err()
			}
			if !more {
				break
			}
			if res.token {
				<-a.tokens
			}
			if res.err != nil {
				return res.err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			p := res.page
			last := i == len(ranges)-1
			if p.Next.IsZero() && !last {
				// More follows, in the next range: a marker, not a position.
				p.Next = Cursor{NextPartitionKey: "next range"}
			}
			if len(p.Rows) == 0 && !(last && p.Next.IsZero()) {
				continue
			}
			for j := range p.Rows {
				p.Rows[j].Table = table
			}
			if err := fn(p); err != nil {
				if errors.Is(err, ErrStop) {
					return nil
				}
				return err
			}
		}
	}
	return ctx.Err()
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
