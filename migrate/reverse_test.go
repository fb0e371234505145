package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// Unit tests of reverse's engine with the shared in-memory services
// (internal/fakes), whose tables and docs keep ETags like the services,
// for the interleavings the emulators cannot produce on demand: a doc
// changed between reverse's row write and its sync, the change feed
// sending a doc twice (an older copy after a newer one), the feed's _lsn,
// a row the Table service refuses. The command runs against the emulators
// in cmd/reverse_test.go.

const (
	revAliceRow = `{"PartitionKey":"GLOBAL","RowKey":"user:alice@contoso.example","Email":"alice@contoso.example","DisplayName":"Alice","UserType":"PLATFORM","IsPlatformAdmin":true,"IsActive":true,"CreatedAt":"2024-01-15T09:00:00"}`
	revAliceID  = "user-alice@contoso.example"
	revAliceRK  = "user:alice@contoso.example"
)

// revSetup migrates alice's row as run does (the doc carries _migration
// with the row's Timestamp) and lets the application rename her in
// Cosmos DB. It returns the tables, the docs and the doc as the change
// feed sends it.
func revSetup(t *testing.T) (*fakes.Tables, *fakes.Docs, []byte) {
	t.Helper()
	rows := fakes.NewTables(fixtures.Tables()...)
	if _, err := rows.Insert(context.Background(), transform.TableEntities, []byte(revAliceRow)); err != nil {
		t.Fatal(err)
	}
	row, _ := rows.Row(transform.TableEntities, "GLOBAL", revAliceRK)
	o := transform.Transform(row, transform.BlobFacts{}, transform.Options{Now: time.Now()})
	if o.Disposition != transform.DispositionDoc {
		t.Fatalf("alice's row: %+v", o)
	}
	docs := fakes.NewDocs()
	docs.Put(transform.ContainerEntities, edit(t, o.DocJSON, func(m map[string]any) { m["displayName"] = "Alice Renamed" }))
	return rows, docs, aliceInFeed(t, docs)
}

// aliceInFeed returns alice's doc as the change feed sends it now, the
// only doc of container entities.
func aliceInFeed(t *testing.T, docs *fakes.Docs) []byte {
	t.Helper()
	var feed [][]byte
	if _, err := docs.Reader().Changes(context.Background(), transform.ContainerEntities, "", 0, func(doc []byte) error {
		feed = append(feed, doc)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(feed) != 1 || !strings.Contains(string(feed[0]), `"id":"`+revAliceID+`"`) {
		t.Fatalf("the change feed sends %q, want alice's doc", feed)
	}
	return feed[0]
}

// docField returns a top-level field of doc.
func docField(t *testing.T, doc []byte, name string) any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatalf("%v: %s", err, doc)
	}
	return m[name]
}

// aliceDoc returns alice's stored doc, as a read returns it.
func aliceDoc(t *testing.T, docs *fakes.Docs) []byte {
	t.Helper()
	doc, ok := docs.Doc(transform.ContainerEntities, "GLOBAL", revAliceID)
	if !ok {
		t.Fatal("alice's doc is gone")
	}
	return doc
}

// feedEntities makes the change feed of container entities send what
// send returns of what it would (other containers are left as they are).
func feedEntities(docs *fakes.Docs, send func(feed [][]byte) [][]byte) {
	docs.Feed = func(container string, feed [][]byte) [][]byte {
		if container != transform.ContainerEntities {
			return feed
		}
		return send(feed)
	}
}

// reverseOnce runs Reverse over the change feed of docs.
func reverseOnce(t *testing.T, rows *fakes.Tables, docs *fakes.Docs, opts ReverseOptions) ReverseSummary {
	t.Helper()
	opts.Since = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if opts.StateDir == "" {
		opts.StateDir = t.TempDir()
	}
	feed := docs.Reader()
	s, err := Reverse(context.Background(), opts, ReverseDeps{Changes: feed, Position: feed.Since,
		Rows: rows, Docs: docs, Blobs: fakes.NewBlobs(), Env: Env{Now: func() time.Time { return time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC) }}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wantSynced checks that alice's row says name and that her doc records
// the sync: its hash matches its content (what verify and replay check).
func wantSynced(t *testing.T, rows *fakes.Tables, docs *fakes.Docs, name string) {
	t.Helper()
	row, _ := rows.Row(transform.TableEntities, "GLOBAL", revAliceRK)
	if got := row.Props["DisplayName"].Str; got != name {
		t.Errorf("the row's DisplayName is %q, want %q", got, name)
	}
	d, err := transform.DecodeDocOrdered(aliceDoc(t, docs))
	if err != nil {
		t.Fatal(err)
	}
	m, ok, err := transform.DocMigration(d)
	h, _ := transform.Hash(d)
	if err != nil || !ok || h != m.Hash {
		t.Errorf("the doc does not record the sync: _migration %+v (%v), hash of the doc %s", m, err, h)
	}
	if m.Timestamp != transform.FormatTimestamp(row.Timestamp) {
		t.Errorf("_migration.timestamp %s is not the row's Timestamp", m.Timestamp)
	}
}

// TestReverseOwnWriteIsNoConflict: the application changes the doc again
// between reverse's row write and its sync (412): reverse reads it again,
// and the row it just wrote is no change in the tables: no conflict, the
// row holds the newest version.
func TestReverseOwnWriteIsNoConflict(t *testing.T) {
	rows, docs, _ := revSetup(t)
	again := edit(t, aliceDoc(t, docs), func(m map[string]any) { m["displayName"] = "Alice Renamed Again" })
	var once sync.Once
	docs.BeforeWrite = func(ctx context.Context, op fakes.Op) error {
		if op.Name == "replace" {
			once.Do(func() { docs.Put(transform.ContainerEntities, again) }) // before the first sync is judged
		}
		return nil
	}
	s := reverseOnce(t, rows, docs, ReverseOptions{})
	if s.Totals.Conflicts != 0 || s.Totals.Synced != 1 || s.Totals.StartOvers != 1 {
		t.Errorf("totals %+v, want 1 synced after 1 start-over, no conflict", s.Totals)
	}
	wantSynced(t, rows, docs, "Alice Renamed Again")
}

// TestReverseFeedLSN: the change feed adds _lsn to each doc; it is no
// change of the application's, so the hash recorded on the doc matches the
// stored doc, and the tool's own sync record, back in the feed with a new
// _lsn, writes nothing.
func TestReverseFeedLSN(t *testing.T) {
	rows, docs, doc := revSetup(t)
	lsn := docField(t, doc, "_lsn")
	if _, ok := lsn.(float64); !ok {
		t.Fatalf("the change feed sends no _lsn: %s", doc)
	}
	s := reverseOnce(t, rows, docs, ReverseOptions{})
	if s.Totals.Synced != 1 {
		t.Fatalf("totals %+v, want 1 synced", s.Totals)
	}
	wantSynced(t, rows, docs, "Alice Renamed")
	if back := aliceInFeed(t, docs); docField(t, back, "_lsn") == lsn {
		t.Fatalf("the sync record comes back in the feed with the _lsn of before: %s", back)
	}
	var attempts atomic.Int64 // writes tried, refused or not
	docs.BeforeWrite = func(context.Context, fakes.Op) error {
		attempts.Add(1)
		return nil
	}
	s = reverseOnce(t, rows, docs, ReverseOptions{})
	if s.Totals.Unchanged != 1 || s.Totals.Writes() != 0 || attempts.Load() != 0 {
		t.Errorf("the tool's own sync record came back: totals %+v, %d doc writes; want unchanged and nothing written", s.Totals, attempts.Load())
	}
}

// TestReverseOlderCopyAfterNewer: the change feed sends a doc's newer
// version, then an older one (it changed while the pass ran). The older
// copy must neither be a conflict nor, with --force, leave its content in
// the row while the doc says it is in sync.
func TestReverseOlderCopyAfterNewer(t *testing.T) {
	for _, force := range []bool{false, true} {
		t.Run(fmt.Sprintf("force=%v", force), func(t *testing.T) {
			rows, docs, v1 := revSetup(t)
			docs.Put(transform.ContainerEntities, edit(t, aliceDoc(t, docs), func(m map[string]any) { m["displayName"] = "Alice v2" }))
			v2 := aliceInFeed(t, docs)
			feedEntities(docs, func(feed [][]byte) [][]byte { return append(feed, v1) })
			s := reverseOnce(t, rows, docs, ReverseOptions{Common: Common{Concurrency: 1}, WindowOptions: WindowOptions{Force: force}})
			if s.Totals.Docs != 2 || s.Totals.Conflicts != 0 || s.Totals.Forced != 0 {
				t.Errorf("totals %+v, want v2 then v1 read and no conflict", s.Totals)
			}
			if docField(t, v2, "displayName") != "Alice v2" {
				t.Errorf("the feed sent %s first, want v2", v2)
			}
			wantSynced(t, rows, docs, "Alice v2")
		})
	}
}

// TestReverseSameDocConcurrently: 20 copies of one doc at concurrency 8
// (run with -race): one sync, no conflict, no error.
func TestReverseSameDocConcurrently(t *testing.T) {
	rows, docs, _ := revSetup(t)
	feedEntities(docs, func(feed [][]byte) [][]byte { return slices.Repeat(feed, 20) })
	s := reverseOnce(t, rows, docs, ReverseOptions{Common: Common{Concurrency: 8}})
	if s.Totals.Conflicts != 0 || s.Totals.Synced != 1 || s.Totals.Unchanged != 19 || s.Totals.RowsWritten != 1 {
		t.Errorf("totals %+v, want 1 synced (1 row written) and 19 unchanged", s.Totals)
	}
	wantSynced(t, rows, docs, "Alice Renamed")
}

// TestReverseRefusedRowIsADeadLetter: a row the Table service refuses for
// good (400) makes its doc a dead letter, named in the file with the doc;
// the reverse goes on and the doc records no sync.
func TestReverseRefusedRowIsADeadLetter(t *testing.T) {
	rows, docs, doc := revSetup(t)
	rows.BeforeWrite = func(ctx context.Context, op fakes.Op) error {
		if op.ID == revAliceRK {
			return &store.Fault{Kind: store.Refused, Status: 400, Reason: "400 PropertyValueTooLarge"}
		}
		return nil
	}
	dir := t.TempDir()
	s := reverseOnce(t, rows, docs, ReverseOptions{Common: Common{StateDir: dir}})
	if s.Totals.DeadLetters != 1 || s.Totals.Synced != 0 {
		t.Fatalf("totals %+v, want 1 dead letter", s.Totals)
	}
	dls := readDeadLetters(t, dir, ReverseDeadLetterFile)
	if len(dls) != 1 {
		t.Fatalf("dead letters %s, want 1", fakes.JSON(dls))
	}
	dl := dls[0]
	want := "replace Entities GLOBAL/user:alice@contoso.example: Table Storage refused the row (400): 400 PropertyValueTooLarge"
	if dl.Reason != want || dl.Table != "Entities" || dl.RowKey != revAliceRK ||
		dl.Doc == nil || *dl.Doc != (DeadLetterDoc{Container: "entities", Scope: "GLOBAL", ID: revAliceID}) {
		t.Errorf("dead letter %s, want reason %q and the doc named", fakes.JSON(dl), want)
	}
	b, err := os.ReadFile(filepath.Join(dir, ReverseDeadLetterFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "Alice Renamed") {
		t.Errorf("the dead letter carries property values: %s", b)
	}
	if got := docField(t, aliceDoc(t, docs), "_etag"); got != docField(t, doc, "_etag") {
		t.Error("the doc was written although its row was refused")
	}
}

// TestReversePassesJudgeAgainstSince: the passes of one --follow (each
// with its own Since, all with Start = --since and one RowsInStep, as the
// command runs them) judge the docs the application wrote without
// _migration (its own model, written back) against --since. A doc the
// application rewrites after a pass wrote it back is written again (the
// row that pass wrote is the tool's own, not a change in the tables);
// a row another writer changed in the tables after --since stays a
// conflict, even in a pass whose watermark is already past that change.
func TestReversePassesJudgeAgainstSince(t *testing.T) {
	const carolRK, carolID = "user:carol@contoso.example", "user-carol@contoso.example"
	clock := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock } // moved only between passes
	rows := fakes.NewTables(fixtures.Tables()...)
	docs := fakes.NewDocs()
	rows.Now, docs.Now = now, now
	ctx := context.Background()
	carolRow := strings.NewReplacer(revAliceRK, carolRK, "alice@", "carol@", `"Alice"`, `"Carol"`).Replace(revAliceRow)
	for _, r := range []string{revAliceRow, carolRow} {
		if _, err := rows.Insert(ctx, transform.TableEntities, []byte(r)); err != nil {
			t.Fatal(err)
		}
	}
	// appWrites is the application writing its model of the user whose
	// row has key rk: the migrated doc's fields, no _migration.
	appWrites := func(rk, name string) {
		row, _ := rows.Row(transform.TableEntities, "GLOBAL", rk)
		o := transform.Transform(row, transform.BlobFacts{}, transform.Options{Now: clock})
		docs.Put(transform.ContainerEntities, edit(t, o.DocJSON, func(m map[string]any) {
			delete(m, "_migration")
			m["displayName"] = name
		}))
	}
	since := clock.Add(time.Hour) // the cutover: --since
	inStep := &RowsInStep{}
	pass := func(passSince time.Time) ReverseSummary {
		t.Helper()
		feed := docs.Reader()
		s, err := Reverse(ctx, ReverseOptions{Common: Common{StateDir: t.TempDir()}, WindowOptions: WindowOptions{Since: passSince}, Start: since},
			ReverseDeps{Changes: feed, Position: feed.Since, Rows: rows, Docs: docs, Blobs: fakes.NewBlobs(), InStep: inStep, Env: Env{Now: now}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	clock = since.Add(10 * time.Minute)
	appWrites(revAliceRK, "Alice Renamed")
	clock = clock.Add(time.Minute)
	if s := pass(since); s.Totals.Synced != 1 || s.Totals.Conflicts != 0 {
		t.Fatalf("pass 1: totals %+v, want alice synced", s.Totals)
	}
	wantSynced(t, rows, docs, "Alice Renamed")

	// Another writer changes carol's row in the tables; then the
	// application renames alice again and renames carol.
	clock = clock.Add(9 * time.Minute)
	if _, err := rows.Replace(ctx, transform.TableEntities, []byte(strings.Replace(carolRow, `"Carol"`, `"Carol (tables)"`, 1)), "*"); err != nil {
		t.Fatal(err)
	}
	carolBefore, _ := rows.Row(transform.TableEntities, "GLOBAL", carolRK)
	watermark := clock.Add(time.Minute) // past the change of carol's row
	clock = clock.Add(2 * time.Minute)
	appWrites(revAliceRK, "Alice Renamed Again")
	appWrites(carolRK, "Carol Renamed")
	clock = clock.Add(time.Minute)
	// The same pass twice: alice is written once, carol's conflict stays.
	for i, written := range []int64{1, 0} {
		n := i + 2
		s := pass(watermark)
		if s.Totals.Conflicts != 1 || len(s.Conflicts) != 1 || s.Conflicts[0].ID != carolID || s.Totals.RowsWritten != written {
			t.Fatalf("pass %d: totals %+v, conflicts %s; want carol a conflict and alice written back", n, s.Totals, fakes.JSON(s.Conflicts))
		}
		if c := s.Conflicts[0]; c.Reason != "the application wrote the doc without _migration, and the row changed in the tables after --since" || c.Resolution != NotWritten {
			t.Errorf("pass %d: conflict %s", n, fakes.JSON(c))
		}
	}
	wantSynced(t, rows, docs, "Alice Renamed Again")
	if carol, _ := rows.Row(transform.TableEntities, "GLOBAL", carolRK); carol.ETag != carolBefore.ETag || carol.Props["DisplayName"].Str != "Carol (tables)" {
		t.Errorf("carol's row was written: %s", transform.EncodeEntity(carol))
	}
}
