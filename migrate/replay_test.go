package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/transform"
)

// Unit tests of replay's decisions with the shared in-memory services,
// whose docs keep etags like the service (internal/fakes). The whole
// command runs against the emulators in cmd/replay_test.go.

// doc returns the doc entities/GLOBAL/id decoded.
func (f *replayFixture) doc(t *testing.T, id string) map[string]any {
	t.Helper()
	raw, _ := f.store.Doc(transform.ContainerEntities, "GLOBAL", id)
	m, err := transform.DecodeDoc(raw)
	if err != nil {
		t.Fatalf("doc %s: %v", id, err)
	}
	return m
}

var (
	migratedAt = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)  // the run
	changedAt  = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC) // on tables, after the rollback
)

func configRow(key, value string, ts time.Time) transform.Row {
	return transform.Row{Table: transform.TableConfig, PartitionKey: "GLOBAL", RowKey: "config:" + key, Timestamp: ts,
		Props: map[string]transform.Value{"Value": transform.String(value), "Type": transform.String("string"), "Description": transform.String("d")}}
}

// docOf is the doc run wrote for row.
func docOf(t *testing.T, row transform.Row) []byte {
	t.Helper()
	o := transform.Transform(row, transform.BlobFacts{}, transform.Options{Now: goldenNow})
	if o.Disposition != transform.DispositionDoc {
		t.Fatalf("%s: %s %s", row.RowKey, o.Disposition, o.DeadLetter)
	}
	return o.DocJSON
}

// edit changes a doc as the application does (keeping _migration).
func edit(t *testing.T, doc []byte, fn func(map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	fn(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type replayFixture struct {
	src   *fakes.Tables
	store *fakes.Docs
	blobs *fakes.Blobs
	dir   string
}

func newReplayFixture(t *testing.T) *replayFixture {
	src := fakes.NewTables(fixtures.Tables()...)
	src.PageSize = 2
	return &replayFixture{src: src, store: fakes.NewDocs(), blobs: fakes.NewBlobs(), dir: filepath.Join(t.TempDir(), "state")}
}

func (f *replayFixture) replay(t *testing.T, opts ReplayOptions) ReplaySummary {
	t.Helper()
	opts.Since, opts.StateDir, opts.Concurrency = migratedAt, f.dir, 3
	s, err := Replay(context.Background(), opts, ReplayDeps{Source: f.src, Docs: f.store, Blobs: f.blobs, Env: Env{Now: func() time.Time { return goldenNow }}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestReplayDecisions covers every branch of the decision table on one
// replay, then checks that a second replay writes nothing.
func TestReplayDecisions(t *testing.T) {
	f := newReplayFixture(t)
	add := func(row transform.Row, doc []byte) {
		f.src.Add(row.Table, row)
		if doc != nil {
			f.store.Put(transform.ContainerEntities, doc)
		}
	}
	// new: no doc → created.
	add(configRow("new", "v", changedAt), nil)
	// same: the doc is what replay would write → unchanged.
	same := configRow("same", "v", changedAt)
	add(same, docOf(t, same))
	// older: untouched doc of an older row version → replaced.
	add(configRow("older", "v2", changedAt), docOf(t, configRow("older", "v1", migratedAt)))
	// reprov: the row was saved again without changes → the provenance
	// is refreshed (verify expects the row's Timestamp).
	add(configRow("reprov", "v", changedAt), docOf(t, configRow("reprov", "v", migratedAt)))
	// appchanged: the application changed the doc → conflict.
	add(configRow("appchanged", "tables", changedAt), edit(t, docOf(t, configRow("appchanged", "v1", migratedAt)), func(m map[string]any) {
		m["description"] = "app"
		m["value"] = "cosmos"
	}))
	// notolder: untouched, as new as its row, but different → left.
	add(configRow("notolder", "v2", changedAt), docOf(t, configRow("notolder", "v1", changedAt)))
	// collision: the doc there was migrated from an earlier row of the
	// same id (config keys a-b and a_b both give config-a-b), which owns
	// it.
	add(configRow("collision_x", "v", changedAt), docOf(t, configRow("collision-x", "v", migratedAt)))

	const appKey = "entities/GLOBAL/config-appchanged"
	appDoc := f.store.Snapshot()[appKey]
	s := f.replay(t, ReplayOptions{})
	want := ReplayCounts{Rows: 7, Created: 1, Replaced: 2, Unchanged: 2, Conflicts: 1, DeadLetters: 1}
	if s.Totals != want {
		t.Errorf("totals\n got %+v\nwant %+v", s.Totals, want)
	}
	if !bytes.Equal(f.store.Snapshot()[appKey], appDoc) {
		t.Errorf("the conflicting doc was changed")
	}
	if len(s.Conflicts) != 1 || fakes.JSON(s.Conflicts[0].Fields) != `[{"path":"description","tables":"d","cosmos":"app"},{"path":"value","tables":"***","cosmos":"***"}]` {
		t.Errorf("conflicts %s", fakes.JSON(s.Conflicts))
	}
	if s.Warnings[ReasonNotOlder] != 1 {
		t.Errorf("warnings %v", s.Warnings)
	}
	if got := f.doc(t, "config-older")["value"]; got != "v2" {
		t.Errorf("older: value %v, want v2", got)
	}
	mig := f.doc(t, "config-reprov")["_migration"].(map[string]any)
	if mig["timestamp"] != transform.FormatTimestamp(changedAt) {
		t.Errorf("reprov: provenance %v, want the row's Timestamp", mig)
	}
	dls := readDeadLetters(t, f.dir, ReplayDeadLetterFile)
	if len(dls) != 1 || dls[0].RowKey != "config:collision_x" ||
		!strings.Contains(dls[0].Reason, "the doc there was migrated from Config GLOBAL/config:collision-x") || strings.Contains(string(dls[0].Row), `"v"`) {
		t.Errorf("dead letters %s", fakes.JSON(dls))
	}

	// Again: nothing to write.
	writes := f.store.Writes()
	s = f.replay(t, ReplayOptions{})
	want = ReplayCounts{Rows: 7, Unchanged: 5, Conflicts: 1, DeadLetters: 1}
	if s.Totals != want || f.store.Writes() != writes {
		t.Errorf("second replay: %d writes, totals %+v, want none and %+v", f.store.Writes()-writes, s.Totals, want)
	}

	// --force overwrites the conflict only.
	s = f.replay(t, ReplayOptions{WindowOptions: WindowOptions{Force: true}})
	if s.Totals.Forced != 1 || s.Totals.Conflicts != 0 || s.Conflicts[0].Resolution != "overwritten (--force)" {
		t.Errorf("--force: totals %+v conflicts %s", s.Totals, fakes.JSON(s.Conflicts))
	}
	if got := f.doc(t, "config-appchanged")["value"]; got != "tables" {
		t.Errorf("--force: value %v", got)
	}
}

// TestReplayGivesUpOnADocThatKeepsChanging: a writer that changes the doc
// before every replace makes replay start over MaxAttempts times, then
// dead-letter the row rather than loop or fail.
func TestReplayGivesUpOnADocThatKeepsChanging(t *testing.T) {
	f := newReplayFixture(t)
	row := configRow("busy", "v2", changedAt)
	f.src.Add(row.Table, row)
	f.store.Put(transform.ContainerEntities, docOf(t, configRow("busy", "v1", migratedAt)))
	f.store.BeforeWrite = func(ctx context.Context, op fakes.Op) error {
		if op.Name == "replace" || op.Name == "delete" {
			f.store.Touch(op.Container, op.Partition, op.ID) // same content, new etag
		}
		return nil
	}
	s := f.replay(t, ReplayOptions{WindowOptions: WindowOptions{MaxAttempts: 3}})
	if want := (ReplayCounts{Rows: 1, PreconditionFailed: 3, DeadLetters: 1}); s.Totals != want {
		t.Errorf("totals\n got %+v\nwant %+v", s.Totals, want)
	}
	if dls := readDeadLetters(t, f.dir, ReplayDeadLetterFile); len(dls) != 1 || !strings.Contains(dls[0].Reason, "gave up after 3 attempts (3 × 412") {
		t.Errorf("dead letters %s", fakes.JSON(dls))
	}
	// One concurrent change only: the second attempt succeeds.
	n := 0
	f.store.BeforeWrite = func(ctx context.Context, op fakes.Op) error {
		if op.Name != "replace" && op.Name != "delete" {
			return nil
		}
		if n++; n == 1 {
			f.store.Touch(op.Container, op.Partition, op.ID)
		}
		return nil
	}
	s = f.replay(t, ReplayOptions{})
	if want := (ReplayCounts{Rows: 1, Replaced: 1, PreconditionFailed: 1}); s.Totals != want {
		t.Errorf("totals\n got %+v\nwant %+v", s.Totals, want)
	}
}

// TestReplayDryRunAndBlobs: a dry run writes nothing (docs, blobs, state
// directory); blobs are uploaded only for docs that are written, not for
// conflicts.
func TestReplayDryRunAndBlobs(t *testing.T) {
	f := newReplayFixture(t)
	big := strings.Repeat("x", transform.DefaultBlobThreshold+1)
	row := transform.Row{Table: transform.TableEntities, PartitionKey: "GLOBAL", RowKey: "execution:8204981199999_e1", Timestamp: changedAt,
		Props: map[string]transform.Value{"ExecutionId": transform.String("e1"), "Status": transform.String("Success"),
			"StartedAt": transform.String("2026-11-20T10:00:00"), "CompletedAt": transform.String("2026-11-20T10:00:01"), "Result": transform.String(big)}}
	f.src.Add(row.Table, row)
	old := row
	old.Timestamp = migratedAt
	old.Props = map[string]transform.Value{"ExecutionId": transform.String("e1"), "Status": transform.String("Running"), "StartedAt": transform.String("2026-11-20T10:00:00")}
	appDoc := edit(t, docOf(t, old), func(m map[string]any) { m["status"] = "Cancelled" })
	f.store.Put(transform.ContainerExecutions, appDoc)

	s := f.replay(t, ReplayOptions{Common: Common{DryRun: true}, WindowOptions: WindowOptions{Force: true}})
	if s.Totals.Forced != 1 || s.BlobsUploaded != 1 || f.store.Writes() != 0 || len(f.blobs.Snapshot()) != 0 {
		t.Errorf("dry run: totals %+v blobs %d; store writes %d, blobs %d: want 1 forced and 1 blob predicted, nothing written",
			s.Totals, s.BlobsUploaded, f.store.Writes(), len(f.blobs.Snapshot()))
	}
	if s.DeadLetterFile != "" {
		t.Errorf("dry run names a dead-letter file %q", s.DeadLetterFile)
	}
	if _, err := os.Stat(f.dir); !os.IsNotExist(err) {
		t.Errorf("dry run created the state directory (%v)", err)
	}

	s = f.replay(t, ReplayOptions{})
	if s.Totals.Conflicts != 1 || len(f.blobs.Snapshot()) != 0 {
		t.Errorf("conflict: totals %+v, %d blobs uploaded, want 1 conflict and none", s.Totals, len(f.blobs.Snapshot()))
	}
	s = f.replay(t, ReplayOptions{WindowOptions: WindowOptions{Force: true}})
	if s.Totals.Forced != 1 || s.BlobsUploaded != 1 || f.blobs.Snapshot()["e1/result.txt"] != big {
		t.Errorf("--force: totals %+v, blobs %v", s.Totals, f.blobs.Snapshot()["e1/result.txt"] == big)
	}
}

// TestReplaySharedExecutionIDFollowsRun: two rows of one organization
// carry the same execution id (SPEC §10: the first in key order owns it,
// later ones are dead-lettered). Both change during a rollback, or the
// first appears during it; replay then ends with the doc a fresh run of
// the same tables writes, and dead-letters the later row.
func TestReplaySharedExecutionIDFollowsRun(t *testing.T) {
	execRow := func(reverseTs, status string, ts time.Time) transform.Row {
		return transform.Row{Table: transform.TableEntities, PartitionKey: "org1", RowKey: "execution:" + reverseTs + "_e1", Timestamp: ts,
			Props: map[string]transform.Value{"ExecutionId": transform.String("e1"), "WorkflowName": transform.String("wf"),
				"Status": transform.String(status), "StartedAt": transform.String("2026-11-20T08:00:00"), "ExecutedBy": transform.String("u1")}}
	}
	const first, second = "8235000000000", "8235000000001" // in key order
	full := transform.Options{ExecutionTTL: transform.TTLFull}
	for _, tc := range []struct {
		name        string
		before      []transform.Row // the tables at the run
		after       []transform.Row // rows the rollback wrote
		replaced    int64
		deadLetters int64
	}{
		{"both rows change", []transform.Row{execRow(first, "Running", migratedAt), execRow(second, "Running", migratedAt)},
			[]transform.Row{execRow(first, "Success", changedAt), execRow(second, "Failed", changedAt)}, 1, 1},
		{"the first in key order appears during the rollback, the other changes", []transform.Row{execRow(second, "Running", migratedAt)},
			[]transform.Row{execRow(first, "Success", changedAt), execRow(second, "Failed", changedAt)}, 1, 1},
		{"the first in key order appears during the rollback", []transform.Row{execRow(second, "Running", migratedAt)},
			[]transform.Row{execRow(first, "Success", changedAt)}, 1, 1},
		{"only the later row changes", []transform.Row{execRow(first, "Running", migratedAt), execRow(second, "Running", migratedAt)},
			[]transform.Row{execRow(second, "Failed", changedAt)}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newReplayFixture(t)
			for _, row := range tc.before {
				f.src.Add(row.Table, row)
			}
			env := Env{Now: func() time.Time { return goldenNow }}
			runOpts := RunOptions{Common: Common{StateDir: filepath.Join(t.TempDir(), "run"), Concurrency: 2, Transform: full}}
			if _, err := Run(ctx, runOpts, Deps{Source: f.src, Docs: f.store, Blobs: f.blobs, Env: env}); err != nil {
				t.Fatal(err)
			}
			for _, row := range tc.after {
				f.src.Add(row.Table, row)
			}
			s := f.replay(t, ReplayOptions{Common: Common{Transform: full}})
			if s.Totals.Replaced != tc.replaced || s.Totals.DeadLetters != tc.deadLetters {
				t.Errorf("totals %+v, want %d replaced and %d dead letter(s)", s.Totals, tc.replaced, tc.deadLetters)
			}
			fresh := fakes.NewDocs()
			runOpts.StateDir = filepath.Join(t.TempDir(), "fresh")
			if _, err := Run(ctx, runOpts, Deps{Source: f.src, Docs: fresh, Blobs: f.blobs, Env: env}); err != nil {
				t.Fatal(err)
			}
			got, _ := f.store.Doc(transform.ContainerExecutions, "org-org1", "e1")
			want, _ := fresh.Doc(transform.ContainerExecutions, "org-org1", "e1")
			if g, w := withoutSystem(t, got), withoutSystem(t, want); g != w {
				t.Errorf("after replay\n%s\nafter a fresh run\n%s", g, w)
			}
		})
	}
}

// withoutSystem is a doc's JSON without Cosmos DB's system properties.
func withoutSystem(t *testing.T, doc []byte) string {
	t.Helper()
	m, err := transform.DecodeDoc(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"_rid", "_self", "_etag", "_ts", "_attachments"} {
		delete(m, k)
	}
	return fakes.JSON(m)
}
