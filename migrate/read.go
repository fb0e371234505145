package migrate

import (
	"context"
	"time"

	"github.com/bifrost/bifrost-migrate/store"
)

// scan is one table read of a command: the table (its name without the
// prefix) and what is read of it.
type scan struct {
	table string
	q     store.Query
}

// tableRead is a scan started ahead: its pages wait in a buffer until
// they are asked for; err is its end (nil: read to the end).
type tableRead struct {
	scan
	pages chan store.Page
	done  chan struct{}
	err   error
}

// scanBuffer is the pages a started scan keeps ready beside what
// store.ScanSpans itself reads ahead: none, a page is handed over when
// the writes take it. ScanSpans's read-ahead keeps them fed, and a page
// held is megabytes: one here and two ahead in the scan, instead of none
// and one, were 10 MB of a run's peak RSS (75.9 against 65.6 MB).
const scanBuffer = 0

// startReads starts the scans of a command (SPEC §14, Latency): one
// store.ScanSpans of them all, each table split where ranges say
// (store.Ranges.Splits: Bifrost's splits and those learned), so that
// every key range of every table is read at once and a pass takes about
// the time of its slowest range; the pages reach each scan's reader in
// key order, one table after the other, so that rows are judged in run's
// read order (SPEC §10) and checkpoints stay exact. Memory stays bounded:
// each scan holds at most scanBuffer pages beyond what ScanSpans reads
// ahead. The reads end with ctx; wait waits for them to end.
func startReads(ctx context.Context, src store.PageReader, prefix string, ranges store.Ranges, scans []scan) (reads []*tableRead, wait func()) {
	reads = make([]*tableRead, len(scans))
	spans := make([]store.Span, len(scans))
	for i, s := range scans {
		reads[i] = &tableRead{scan: s, pages: make(chan store.Page, scanBuffer), done: make(chan struct{})}
		spans[i] = ranges.Span(s.table, s.q)
	}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		open := 0 // the first scan not ended
		err := store.ScanSpans(ctx, src, prefix, spans, func(i int, p store.Page) error {
			select {
			case reads[i].pages <- p:
			case <-ctx.Done():
				return ctx.Err()
			}
			if p.Next.IsZero() {
				reads[i].close(nil)
				open = i + 1
			}
			return nil
		})
		for _, rd := range reads[open:] {
			rd.close(err) // nil only when every scan passed its last page
		}
	}()
	return reads, func() { <-finished }
}

// close ends the read with err (nil: read to the end).
func (rd *tableRead) close(err error) {
	rd.err = err
	close(rd.pages)
	close(rd.done)
}

// end waits for the read to end and returns its error (nil: read to the
// end); the caller has taken its pages, or stopped the read.
func (rd *tableRead) end() error {
	<-rd.done
	return rd.err
}

// logPage logs a line for a page read.
func logPage(log func(string, ...any), table string, q store.Query, p store.Page) {
	if q.Since.IsZero() {
		log("page of %s read: %d rows, more to come: %v", table, len(p.Rows), !p.Next.IsZero())
	} else {
		log("page of %s read: %d rows changed since %s, more to come: %v", table, len(p.Rows), q.Since.Format(time.RFC3339), !p.Next.IsZero())
	}
}

// readTables starts reading the scans at once (startReads), each table's
// pages to be taken in turn; stop ends the reads and waits for them.
func readTables(ctx context.Context, src store.PageReader, prefix string, ranges store.Ranges, scans []scan) (reads []*tableRead, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	reads, wait := startReads(ctx, src, prefix, ranges, scans)
	return reads, func() {
		cancel()
		wait()
	}
}

// eachPage calls fn with each page rd reads, in order, until the read
// ends (its error: nil at the end), fn fails (its error), or pool stops
// first (a write failed, or ctx ended: the pool's context's error, which
// passEnd leaves for the pool's own).
func eachPage(pool *pool, rd *tableRead, fn func(store.Page) error) error {
	for {
		select {
		case p, ok := <-rd.pages:
			if !ok {
				return rd.end()
			}
			if err := fn(p); err != nil {
				return err
			}
		case <-pool.ctx.Done():
			return pool.ctx.Err()
		}
	}
}

// loadRanges reads the key ranges a full verify learned of the tables
// (store.RangesFile in the state directory), for a pass to split them
// there; a dry run, which does not read the state directory, has none.
func loadRanges(c Common) (store.Ranges, error) {
	if c.DryRun {
		return nil, nil
	}
	return store.LoadRanges(c.StateDir)
}
