package store

import (
	"context"
	"errors"
	"fmt"

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
		defer close(pages)
		for {
			p, err := r.ReadPage(ctx, prefix+table, q, from)
			if err != nil {
				err = fmt.Errorf("read %s: %w", table, err)
			}
			select {
			case pages <- scanned{p, err}:
			case <-ctx.Done():
				return
			}
			if err != nil || p.Next.IsZero() {
				return
			}
			from = p.Next
		}
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

// scanned is one page Scan's reader read, or its error.
type scanned struct {
	page Page
	err  error
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
