package store_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

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
