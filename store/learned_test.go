package store_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// TestKeySamplerSplitsEveryNRows: a table's rows passed in key order, in
// pages of any size, are split every n rows; a table of fewer rows is
// learned without splits.
func TestKeySamplerSplitsEveryNRows(t *testing.T) {
	rows := memRows(25)
	s := store.NewKeySampler(10)
	s.Add("T", rows[:3])
	s.Add("T", rows[3:17])
	s.Add("T", rows[17:])
	s.Add("U", rows[:9])
	key := func(r transform.Row) store.Key { return store.Key{PartitionKey: r.PartitionKey, RowKey: r.RowKey} }
	got := s.Ranges()
	if want := []store.Key{key(rows[10]), key(rows[20])}; !slices.Equal(got["T"], want) {
		t.Errorf("T split at %v, want %v", got["T"], want)
	}
	if u, ok := got["U"]; !ok || len(u) != 0 {
		t.Errorf("U: %v (learned %v), want no splits, learned", u, ok)
	}
}

// TestRangesSplits: a table splits at Bifrost's own keys and the learned
// ones, in key order, each once; a table nothing was learned of, at
// Bifrost's alone.
func TestRangesSplits(t *testing.T) {
	own := store.Splits(transform.TableEntities)
	learned := store.Ranges{transform.TableEntities: {{PartitionKey: "0a", RowKey: "x"}, own[2], {PartitionKey: "c1", RowKey: "y"}}}
	got := learned.Splits(transform.TableEntities)
	if len(got) != len(own)+2 || !slices.IsSortedFunc(got, func(a, b store.Key) int {
		return transform.CompareKeys(a.PartitionKey, a.RowKey, b.PartitionKey, b.RowKey)
	}) {
		t.Errorf("splits %v: want Bifrost's %d and the 2 new learned ones, in key order", got, len(own))
	}
	if got := learned.Splits(transform.TableConfig); len(got) != 0 {
		t.Errorf("Config splits at %v, want nowhere", got)
	}
	if sp := learned.Span(transform.TableEntities, store.Query{}); !sp.Large {
		t.Error("a table with learned splits is not Large")
	}
	if sp := learned.Span(transform.TableRelationships, store.Query{}); sp.Large || !slices.Equal(sp.Splits, store.Splits(transform.TableRelationships)) {
		t.Errorf("Relationships: %+v, want Bifrost's splits, not Large", sp)
	}
}

// TestRangesFile: what SaveRanges writes LoadRanges reads back, the
// tables it does not name kept as the file had them; no file is no
// ranges; a file that is not one this version writes is refused, naming
// it and what to do.
func TestRangesFile(t *testing.T) {
	dir := t.TempDir()
	if r, err := store.LoadRanges(dir); r != nil || err != nil {
		t.Fatalf("no file: %v, %v", r, err)
	}
	first := store.Ranges{"T": {{PartitionKey: "a", RowKey: "1"}, {PartitionKey: "b", RowKey: "\"/\\#?é"}}, "U": {{PartitionKey: "u"}}}
	if err := store.SaveRanges(dir, first); err != nil {
		t.Fatal(err)
	}
	if err := store.SaveRanges(dir, store.Ranges{"U": nil, "V": {{PartitionKey: "v"}}}); err != nil {
		t.Fatal(err)
	}
	got, err := store.LoadRanges(dir)
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := got["U"]; !slices.Equal(got["T"], first["T"]) || !ok || len(u) != 0 || !slices.Equal(got["V"], []store.Key{{PartitionKey: "v"}}) {
		t.Errorf("read back %v", got)
	}
	file := filepath.Join(dir, store.RangesFile)
	for _, bad := range []string{`{"version":1,"tables":{"T":[{"pk":"b"},{"pk":"a"}]}}`, `{"version":2,"tables":{}}`, `{"version":1,"tables":{},"x":1}`, "garbled"} {
		if err := os.WriteFile(file, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		want := file + " is not a file of key ranges this version writes: remove it (the passes then split each table as before, and the next full verify writes it again)"
		if _, err := store.LoadRanges(dir); err == nil || err.Error() != want {
			t.Errorf("%s: err %v, want %q", bad, err, want)
		}
		if err := store.SaveRanges(dir, first); err == nil {
			t.Errorf("%s: saved over it", bad)
		}
	}
}

// TestScanSpansLargeStartsEveryRange: a Large span's ranges all start at
// once, without a first page over the whole span (which, for a filter,
// has the service read a whole partition first); the rows passed on are
// still exactly one scan's, in order, span after span.
func TestScanSpansLargeStartsEveryRange(t *testing.T) {
	spans := slices.Clone(passSpans)
	for i := range spans {
		spans[i].Large = true
	}
	s := newFilterService(t, passTables(3000))
	b := &lockstep{inner: s, changed: make(chan struct{}), started: map[string]int{}, done: map[string]bool{}}
	for _, r := range rangesOf(spans) {
		b.started[r] = 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang bound, not a timing
	defer cancel()
	got, err := scanSpans(ctx, b, spans)
	if err != nil {
		t.Fatalf("the ranges were not read at once: %v (%s)", err, b.stuck())
	}
	want := s.want(t, spans)
	for i := range spans {
		if !slices.Equal(got.keys[i], want[i]) || got.ends[i] != 1 {
			t.Errorf("span %d: %d rows, %d last pages; want the %d one scan reads and 1 last page", i, len(got.keys[i]), got.ends[i], len(want[i]))
		}
		if n := s.reads[rangeOf(spans[i].Table, store.Query{})]; n != 0 {
			t.Errorf("span %d: %d reads over the whole span, want none", i, n)
		}
	}
	if !slices.IsSorted(got.order) {
		t.Errorf("pages passed on by span %v: not span after span", got.order)
	}
}
