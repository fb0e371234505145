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
// store.ScanRanges itself reads ahead: none, a page is handed over when
// the writes take it. ScanRanges's read-ahead keeps them fed, and a page
// held is megabytes: one here and two ahead in ScanRanges, instead of
// none and one, were 10 MB of a run's peak RSS (75.9 against 65.6 MB).
const scanBuffer = 0

// startReads starts the scans of a command in order (SPEC §14, Latency):
// each one is read in key ranges at once (store.ScanRanges, split by
// store.Splits), and the next one starts as soon as the one before has
// read its last page, so that the next table is read while the current
// one is still being written. Memory stays bounded: each scan holds at
// most scanBuffer pages beyond what ScanRanges reads ahead. The reads end
// with ctx; wait waits for them to end.
func startReads(ctx context.Context, src store.PageReader, prefix string, scans []scan) (reads []*tableRead, wait func()) {
	reads = make([]*tableRead, len(scans))
	for i, s := range scans {
		reads[i] = &tableRead{scan: s, pages: make(chan store.Page, scanBuffer), done: make(chan struct{})}
	}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for _, rd := range reads {
			rd.err = store.ScanRanges(ctx, src, prefix, rd.table, rd.q, store.Splits(rd.table), func(p store.Page) error {
				select {
				case rd.pages <- p:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			close(rd.pages)
			close(rd.done)
			if rd.err != nil {
				failRest(reads, rd)
				return
			}
		}
	}()
	return reads, func() { <-finished }
}

// failRest ends the scans after failed (which failed, or was stopped) with
// ctx's error, so that nobody waits for them.
func failRest(reads []*tableRead, failed *tableRead) {
	after := false
	for _, rd := range reads {
		if after {
			rd.err = failed.err
			close(rd.pages)
			close(rd.done)
		}
		after = after || rd == failed
	}
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

// readTable starts reading the rows of table that q selects (startReads
// of that table alone), its pages in rd; stop ends the read and waits for
// it.
func readTable(ctx context.Context, src store.PageReader, prefix, table string, q store.Query) (rd *tableRead, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	reads, wait := startReads(ctx, src, prefix, []scan{{table, q}})
	return reads[0], func() {
		cancel()
		wait()
	}
}
