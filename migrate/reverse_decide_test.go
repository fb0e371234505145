package migrate

import (
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/transform"
)

// TestDecideReverse is reverse's decision table (SPEC §15): which changed
// docs write their rows, which are conflicts, and what --force changes. A
// doc with _migration is judged against its _migration.timestamp; one
// without (the application wrote its own model back) against the
// window's start.
func TestDecideReverse(t *testing.T) {
	migrated := time.Date(2026, 11, 20, 14, 0, 0, 0, time.UTC)
	since := migrated.Add(2 * time.Hour) // the window's start: the cutover
	mig := transform.Migration{Table: "Entities", PartitionKey: "GLOBAL", RowKey: "user:a@example.com", Timestamp: transform.FormatTimestamp(migrated), Hash: "h"}
	row := func(name string, at time.Time) *transform.Row {
		return &transform.Row{Table: "Entities", PartitionKey: "GLOBAL", RowKey: "user:a@example.com", Timestamp: at,
			Props: map[string]transform.Value{"DisplayName": transform.String(name)}}
	}
	want := *row("Cosmos", time.Time{})
	withMig := revDoc{mig: mig, hasMig: true, hash: "changed"}
	noMig := revDoc{hash: "x"}
	badTime := revDoc{mig: transform.Migration{Timestamp: "not a time"}, hasMig: true}
	later := migrated.Add(time.Minute)
	for _, tc := range []struct {
		name     string
		doc      revDoc
		existing *transform.Row
		ours     bool
		force    bool
		want     revVerdict
	}{
		{"no row: insert it", withMig, nil, false, false, revWrite},
		{"no row, app-created doc", noMig, nil, false, false, revWrite},
		{"row untouched since migration", withMig, row("Tables", migrated), false, false, revWrite},
		{"row older than migration", withMig, row("Tables", migrated.Add(-time.Hour)), false, false, revWrite},
		{"row changed since migration (before the window), different: conflict", withMig, row("Tables", later), false, false, revConflict},
		{"row changed since, different, --force", withMig, row("Tables", later), false, true, revForce},
		{"row changed since, already what the doc says", withMig, row("Cosmos", later), false, false, revWrite},
		{"row changed since, but this reverse wrote it", withMig, row("Tables", later), true, false, revWrite},
		{"unparseable _migration.timestamp counts as changed", badTime, row("Tables", migrated), false, false, revConflict},
		{"unparseable _migration.timestamp, --force", badTime, row("Tables", migrated), false, true, revForce},

		// No _migration: judged against the window's start.
		{"no _migration, row older than the window: write", noMig, row("Tables", since.Add(-time.Minute)), false, false, revWrite},
		{"no _migration, row stamped at the window's start: write", noMig, row("Tables", since), false, false, revWrite},
		{"no _migration, row newer than the window, different: conflict", noMig, row("Tables", since.Add(time.Millisecond)), false, false, revConflict},
		{"no _migration, row newer than the window, --force", noMig, row("Tables", since.Add(time.Minute)), false, true, revForce},
		{"no _migration, row newer than the window, already equal", noMig, row("Cosmos", since.Add(time.Minute)), false, false, revWrite},
		{"no _migration, row newer than the window, but reverse left it so", noMig, row("Tables", since.Add(time.Minute)), true, false, revWrite},
	} {
		if got := decideReverse(tc.doc, tc.existing, tc.ours, want, since, tc.force); got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestRevDocUnchanged: a doc is skipped only when it carries _migration
// whose hash is its content's, and no earlier attempt on it wrote rows.
func TestRevDocUnchanged(t *testing.T) {
	for _, tc := range []struct {
		name  string
		doc   revDoc
		wrote bool
		want  bool
	}{
		{"untouched since the tool wrote it", revDoc{mig: transform.Migration{Hash: "h"}, hasMig: true, hash: "h"}, false, true},
		{"changed by the application", revDoc{mig: transform.Migration{Hash: "h"}, hasMig: true, hash: "h2"}, false, false},
		{"written by the application (no _migration)", revDoc{hash: ""}, false, false},
		{"untouched, but an earlier copy of it wrote rows", revDoc{mig: transform.Migration{Hash: "h"}, hasMig: true, hash: "h"}, true, false},
	} {
		if got := tc.doc.unchanged(tc.wrote); got != tc.want {
			t.Errorf("%s: unchanged %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestReadRevDoc: a doc that does not decode, or whose _migration is
// malformed, is a dead letter with the reason; a good one is hashed as
// the transform hashes it.
func TestReadRevDoc(t *testing.T) {
	for _, tc := range []struct {
		name, raw, prefix string
	}{
		{"not JSON", `{"id": `, string(transform.ReverseBadDoc)},
		{"_migration not an object", `{"id":"x","type":"user","scope":"GLOBAL","_migration":"no"}`, string(transform.ReverseBadDoc)},
	} {
		_, reason := readRevDoc([]byte(tc.raw))
		if !strings.HasPrefix(reason, tc.prefix+": ") {
			t.Errorf("%s: reason %q, want it to start with %q", tc.name, reason, tc.prefix)
		}
	}
	d, reason := readRevDoc([]byte(`{"id":"user-a","type":"user","scope":"GLOBAL","displayName":"A","_etag":"e","_ts":1}`))
	if reason != "" {
		t.Fatalf("good doc: reason %q", reason)
	}
	want, err := transform.Hash(d.doc)
	if err != nil || d.hash != want || d.hasMig {
		t.Errorf("good doc: hash %q (want %q, %v), hasMig %v", d.hash, want, err, d.hasMig)
	}
}
