package fakes_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// What the fakes have beyond the services (seeding, snapshots, hooks),
// and what they do as the service does but the emulators do not, which
// the conformance suite therefore cannot check.

// BeforeWrite sees every write with its names and can fail it: nothing is
// written, and the write returns the hook's error.
func TestDocsBeforeWrite(t *testing.T) {
	d := fakes.NewDocs()
	boom := errors.New("boom")
	var ops []fakes.Op
	d.BeforeWrite = func(ctx context.Context, op fakes.Op) error {
		ops = append(ops, op)
		if op.Name == "replace" {
			return boom
		}
		return nil
	}
	if _, err := d.Create(bg, "c", "s", "a", testDoc("a", "s", 1)); err != nil {
		t.Fatal(err)
	}
	_, err := d.Replace(bg, "c", "s", "a", testDoc("a", "s", 2), "")
	if !errors.Is(err, boom) {
		t.Errorf("replace: %v, want the hook's error", err)
	}
	if doc, _ := d.Doc("c", "s", "a"); !strings.Contains(string(doc), `"n":1`) || d.Writes() != 1 {
		t.Errorf("after the failed replace: %s, %d writes; want n 1 and 1 write", doc, d.Writes())
	}
	want := []fakes.Op{{Name: "create", Container: "c", Partition: "s", ID: "a"}, {Name: "replace", Container: "c", Partition: "s", ID: "a"}}
	if !reflect.DeepEqual(ops, want) {
		t.Errorf("hook saw %v, want %v", ops, want)
	}
}

// Put seeds a doc as the application would (not a write of the tool's);
// Touch saves it again with a new etag; Snapshot has the docs as written,
// without system properties.
func TestDocsPutTouchSnapshot(t *testing.T) {
	d := fakes.NewDocs()
	e1 := d.Put("c", []byte(`{"id":"a","scope":"s","v":1,"_etag":"old"}`))
	if !d.Touch("c", "s", "a") || d.Touch("c", "s", "nope") {
		t.Fatal("Touch of an existing doc false, or of a missing one true")
	}
	_, e2, _, _, _ := d.Read(bg, "c", "s", "a")
	if e2 == e1 || d.Writes() != 0 {
		t.Errorf("etag %q after Touch (was %q), %d writes; want a new etag and none", e2, e1, d.Writes())
	}
	if got, want := d.Snapshot(), map[string][]byte{"c/s/a": []byte(`{"id":"a","scope":"s","v":1}`)}; !reflect.DeepEqual(got, want) {
		t.Errorf("snapshot %q, want %q", got, want)
	}
}

// The service refuses a doc whose id or scope is not the one it is
// written to (the stand-in does not).
func TestDocsRefuseAnotherPartition(t *testing.T) {
	d := fakes.NewDocs()
	for _, doc := range []string{`{"id":"a","scope":"other"}`, `{"id":"b","scope":"s"}`, `{"scope":"s"}`, `[1]`} {
		_, err := d.Upsert(bg, "c", "s", "a", []byte(doc))
		if pe := store.FaultOf(err); pe == nil || pe.Kind != store.Refused || pe.Status != 400 {
			t.Errorf("upsert of %s as s/a: %v, want a permanent 400", doc, err)
		}
	}
	if len(d.Snapshot()) != 0 {
		t.Errorf("refused docs were stored: %q", d.Snapshot())
	}
}

// The fake answers "SELECT * FROM c" and the count and the ids of a
// scope's docs, and refuses other queries rather than answer them wrong.
func TestDocsRefuseOtherQueries(t *testing.T) {
	err := fakes.NewDocs().Reader().QueryAll(bg, "c", "SELECT * FROM c WHERE c.scope = @s", []store.QueryParam{{Name: "@s", Value: "x"}}, 0,
		func([]byte) error { return nil })
	if err == nil || !strings.Contains(err.Error(), `only, not "SELECT * FROM c WHERE c.scope = @s"`) {
		t.Errorf("err %v", err)
	}
	err = fakes.NewDocs().Reader().QueryAll(bg, "c", "SELECT c.id FROM c WHERE c.scope = @scope", []store.QueryParam{{Name: "@s", Value: "x"}}, 0,
		func([]byte) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "only, not") {
		t.Errorf("the ids of a scope without @scope: err %v", err)
	}
}

// Feed rewrites what a pass of the change feed delivers.
func TestDocsFeedHook(t *testing.T) {
	d := fakes.NewDocs()
	d.Put("c", testDoc("a", "s", 1))
	d.Feed = func(container string, docs [][]byte) [][]byte { return append(docs, docs...) }
	n := 0
	if _, err := d.Reader().Changes(bg, "c", "", 0, func([]byte) error { n++; return nil }); err != nil || n != 2 {
		t.Errorf("%d docs delivered (%v), want the one doc twice", n, err)
	}
	if _, err := d.Reader().Changes(bg, "c", "bogus", 0, func([]byte) error { return nil }); !errors.Is(err, fakes.ErrBadChangePosition) {
		t.Errorf("bad position: %v", err)
	}
}

// Add seeds rows as they are (a given Timestamp kept, a missing one
// stamped), with the ETag of their Timestamp; PageSize bounds pages;
// BeforeWrite can refuse a row.
func TestTablesSeedPagesHook(t *testing.T) {
	f := fakes.NewTables()
	f.PageSize = 2
	ts := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	f.Add("T", transform.Row{PartitionKey: "p", RowKey: "b", Timestamp: ts}, transform.Row{PartitionKey: "p", RowKey: "a"},
		transform.Row{PartitionKey: "p", RowKey: "c"})
	rows := f.Rows("T")
	if len(rows) != 3 || rows[0].RowKey != "a" || !rows[1].Timestamp.Equal(ts) || rows[0].Timestamp.IsZero() || rows[1].ETag == "" {
		t.Fatalf("rows %+v", rows)
	}
	p, err := f.ReadPage(bg, "T", store.Query{}, store.Cursor{})
	if err != nil || len(p.Rows) != 2 || p.Next != (store.Cursor{NextPartitionKey: "p", NextRowKey: "c"}) {
		t.Errorf("first page %+v, %v; want a, b and a continuation at c", p, err)
	}
	refused := &store.Fault{Kind: store.Refused, Status: 400, Reason: "400 PropertyValueTooLarge"}
	f.BeforeWrite = func(ctx context.Context, op fakes.Op) error {
		if op.ID == "a" {
			return refused
		}
		return nil
	}
	if _, err := f.Replace(bg, "T", []byte(`{"PartitionKey":"p","RowKey":"a","X":1}`), "*"); err != refused {
		t.Errorf("refused replace: %v", err)
	}
	if row, _ := f.Row("T", "p", "a"); len(row.Props) != 0 || f.Writes() != 0 {
		t.Errorf("the refused replace wrote: %+v, %d writes", row, f.Writes())
	}
}
