package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// memTable is one table, T, of the checked fake Table Storage
// (fakes.Tables, which the conformance suite runs against Azurite),
// holding rows, pageSize rows a page, seen through a decorator that counts
// the reads in flight at once and the pages read, and can fail or hold a
// read: the fake answers every read, the decorator only watches or stops
// it. newMemTable makes it.
type memTable struct {
	fake *fakes.Tables
	// rows are the rows as the fake holds them, in key order.
	rows []transform.Row
	fail *store.Key // a page starting at this key fails
	// hold, when not nil, holds the reads of the ranges after the first
	// until their context ends, saying so on hold.
	hold chan struct{}

	mu           sync.Mutex
	active, most int
	read         int // pages read
	rowsRead     int // rows in them
}

func newMemTable(rows []transform.Row, pageSize int) *memTable {
	f := fakes.NewTables()
	f.PageSize = pageSize
	f.Add("T", rows...)
	return &memTable{fake: f, rows: f.Rows("T")}
}

func (m *memTable) ReadPage(ctx context.Context, table string, q store.Query, from store.Cursor) (store.Page, error) {
	m.mu.Lock()
	m.active++
	m.most = max(m.most, m.active)
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.active--
		m.mu.Unlock()
	}()
	time.Sleep(time.Millisecond) // let the other ranges' reads overlap
	if m.hold != nil && q.From != nil {
		m.hold <- struct{}{}
		<-ctx.Done()
		return store.Page{}, ctx.Err()
	}
	if m.fail != nil && from == (store.Cursor{NextPartitionKey: m.fail.PartitionKey, NextRowKey: m.fail.RowKey}) {
		return store.Page{}, errors.New("boom")
	}
	p, err := m.fake.ReadPage(ctx, table, q, from)
	if err == nil {
		m.mu.Lock()
		m.read++
		m.rowsRead += len(p.Rows)
		m.mu.Unlock()
	}
	return p, err
}

func memRows(n int) []transform.Row {
	var rows []transform.Row
	pks := []string{"0a", "3f", "GLOBAL", "c1", "f9", "org-x", "SYSTEM"}
	for i := range n {
		rows = append(rows, transform.Row{PartitionKey: pks[i%len(pks)], RowKey: fmt.Sprintf("k:%05d", i)})
	}
	slices.SortFunc(rows, func(a, b transform.Row) int {
		return transform.CompareKeys(a.PartitionKey, a.RowKey, b.PartitionKey, b.RowKey)
	})
	return rows
}

func keysOf(rows []transform.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.PartitionKey + "|" + r.RowKey
	}
	return out
}

var testSplits = []store.Key{{PartitionKey: "1"}, {PartitionKey: "4"}, {PartitionKey: "G"}, {PartitionKey: "GLOBAL", RowKey: "k:00500"}, {PartitionKey: "S"}, {PartitionKey: "a"}, {PartitionKey: "d"}, {PartitionKey: "o"}}

// TestScanRangesInKeyOrder: every row once, in key order, whatever the
// splits, with ranges read at once; the last page alone has no Next;
// resuming after a row's keys reads exactly the rows after it.
func TestScanRangesInKeyOrder(t *testing.T) {
	m := newMemTable(memRows(2000), 37)
	for _, splits := range [][]store.Key{nil, testSplits, {{PartitionKey: "zzz"}}} {
		var got []transform.Row
		pages, ends := 0, 0
		err := store.ScanRanges(context.Background(), m, "", "T", store.Query{}, splits, func(p store.Page) error {
			got = append(got, p.Rows...)
			pages++
			if p.Next.IsZero() {
				ends++
			}
			return nil
		})
		if err != nil || !slices.Equal(keysOf(got), keysOf(m.rows)) || ends != 1 {
			t.Fatalf("splits %v: err %v; %d rows of %d, in order %v; %d pages without Next, want 1", splits, err, len(got), len(m.rows), slices.Equal(keysOf(got), keysOf(m.rows)), ends)
		}
	}
	if m.most < 2 || m.most > len(testSplits)+1 {
		t.Errorf("%d reads at once, want 2..%d (one per range)", m.most, len(testSplits)+1)
	}
	for _, cut := range []int{0, 1, 499, 500, 1000, 1998, 1999} {
		after := m.rows[cut]
		var got []transform.Row
		err := store.ScanRanges(context.Background(), m, "", "T", store.Query{After: &store.Key{after.PartitionKey, after.RowKey}}, testSplits, func(p store.Page) error {
			got = append(got, p.Rows...)
			return nil
		})
		if err != nil || !slices.Equal(keysOf(got), keysOf(m.rows[cut+1:])) {
			t.Errorf("after row %d: err %v; %d rows, want the %d after it", cut, err, len(got), len(m.rows)-cut-1)
		}
	}
}

// TestScanRangesBounded: a query bounded by From and To reads exactly the
// rows between, whatever the splits (the last range keeps To).
func TestScanRangesBounded(t *testing.T) {
	m := newMemTable(memRows(2000), 37)
	for _, splits := range [][]store.Key{nil, testSplits} {
		for _, b := range [][2]int{{0, 1999}, {3, 700}, {1200, 1201}, {1500, 1999}} {
			from, to := m.rows[b[0]], m.rows[b[1]]
			q := store.Query{From: &store.Key{PartitionKey: from.PartitionKey, RowKey: from.RowKey}, To: &store.Key{PartitionKey: to.PartitionKey, RowKey: to.RowKey}}
			var got []transform.Row
			err := store.ScanRanges(context.Background(), m, "", "T", q, splits, func(p store.Page) error {
				got = append(got, p.Rows...)
				return nil
			})
			if err != nil || !slices.Equal(keysOf(got), keysOf(m.rows[b[0]:b[1]])) {
				t.Errorf("splits %v, rows %d to %d: err %v; %d rows, want %d", splits, b[0], b[1], err, len(got), b[1]-b[0])
			}
		}
	}
}

// TestScanRangesStops: store.ErrStop ends the scan without error; a failed read
// ends it with that error, naming the table, after the pages before it.
func TestScanRangesStops(t *testing.T) {
	m := newMemTable(memRows(300), 10)
	n := 0
	err := store.ScanRanges(context.Background(), m, "", "T", store.Query{}, testSplits, func(p store.Page) error {
		n++
		if n == 3 {
			return store.ErrStop
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Errorf("store.ErrStop: err %v after %d pages, want nil after 3", err, n)
	}
	m.fail = &store.Key{m.rows[150].PartitionKey, m.rows[150].RowKey}
	var got []transform.Row
	err = store.ScanRanges(context.Background(), m, "", "T", store.Query{}, nil, func(p store.Page) error {
		got = append(got, p.Rows...)
		return nil
	})
	if err == nil || err.Error() != "read T: boom" || !slices.Equal(keysOf(got), keysOf(m.rows[:150])) {
		t.Errorf("failed read: err %v, %d rows before it, want read T: boom after 150", err, len(got))
	}
}

// TestScanRangesCancelled: a scan whose context ends while ranges are
// still to be started returns the context's error (it once waited for a
// range nobody would read).
func TestScanRangesCancelled(t *testing.T) {
	// Each try hangs the old way only when four readers in a row close
	// without passing their error on (1 in 16): 100 tries.
	for range 100 {
		m := newMemTable(memRows(700), 5)
		m.hold = make(chan struct{}, len(testSplits))
		ctx, cancel := context.WithCancel(context.Background())
		firstDone := make(chan struct{})
		go func() {
			// The caller stops once the first range is delivered and the
			// next one is being read.
			<-firstDone
			<-m.hold
			cancel()
		}()
		done := make(chan error, 1)
		go func() {
			done <- store.ScanRanges(ctx, m, "", "T", store.Query{}, testSplits, func(p store.Page) error {
				if p.Rows[len(p.Rows)-1].RowKey == "k:00693" { // the first range's last row
					close(firstDone)
				}
				return nil
			})
		}()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err %v, want context.Canceled", err)
			}
		case <-time.After(30 * time.Second): // a hang bound, not a timing
			t.Fatal("store.ScanRanges did not return after its context ended")
		}
	}
}

// TestQueryMatch is the service's filter in memory.
func TestQueryMatch(t *testing.T) {
	at := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	k := func(pk, rk string) *store.Key { return &store.Key{pk, rk} }
	for _, tc := range []struct {
		q      store.Query
		pk, rk string
		want   bool
	}{
		{store.Query{}, "a", "b", true},
		{store.Query{Since: at.Add(time.Second)}, "a", "b", false},
		{store.Query{Key: k("a", "b")}, "a", "b", true},
		{store.Query{Key: k("a", "b")}, "a", "c", false},
		{store.Query{From: k("a", "")}, "a", "", true},
		{store.Query{From: k("b", "")}, "a", "z", false},
		{store.Query{From: k("a", "m")}, "a", "l", false},
		{store.Query{To: k("b", "")}, "a", "z", true},
		{store.Query{To: k("b", "")}, "b", "", false},
		{store.Query{To: k("a", "m")}, "a", "m", false},
		{store.Query{After: k("a", "m")}, "a", "m", false},
		{store.Query{After: k("a", "m")}, "a", "n", true},
		{store.Query{After: k("a", "m")}, "b", "", true},
	} {
		if got := tc.q.Match(tc.pk, tc.rk, at); got != tc.want {
			t.Errorf("%+v on %s/%s: %v, want %v", tc.q, tc.pk, tc.rk, got, tc.want)
		}
	}
}

// TestScanRangesBoundsReadAhead: however many ranges and however slow the
// caller, the rows read and not yet passed on are at most those of the
// page the range being delivered read ahead and store.RowsAhead held by
// the ranges after it.
func TestScanRangesBoundsReadAhead(t *testing.T) {
	const pageSize = 37
	m := newMemTable(memRows(6000), pageSize)
	// Every range holds rows, so that no page read is empty (an empty page
	// holds nothing).
	splits := []store.Key{{PartitionKey: "1"}, {PartitionKey: "4"}, {PartitionKey: "S"}, {PartitionKey: "a"}, {PartitionKey: "d"}, {PartitionKey: "o"}}
	delivered, most := 0, 0
	err := store.ScanRanges(context.Background(), m, "", "T", store.Query{}, splits, func(p store.Page) error {
		delivered += len(p.Rows)
		time.Sleep(time.Millisecond) // a slow caller: the readers run ahead as far as they may
		m.mu.Lock()
		most = max(most, m.rowsRead-delivered)
		m.mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if most > store.RowsAhead+pageSize {
		t.Errorf("%d rows read ahead of the caller at most, want ≤ %d", most, store.RowsAhead+pageSize)
	}
	if most <= pageSize {
		t.Errorf("%d rows read ahead of the caller at most: the ranges after the first did not read ahead", most)
	}
}
