package migrate

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/transform"
)

// stateOf is the docState of a doc as replay reads it.
func stateOf(t *testing.T, doc []byte) docState {
	t.Helper()
	s, err := readDocState(doc)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wantOf is what row gives, as decide needs it.
func wantOf(t *testing.T, row transform.Row) wantedDoc {
	t.Helper()
	o := transform.Transform(row, transform.BlobFacts{}, transform.Options{Now: goldenNow})
	w, err := wantedOf(row, o)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestDecide is the decision table of SPEC §13, one case per branch.
func TestDecide(t *testing.T) {
	row := configRow("k", "v2", changedAt)
	appChanged := func(m map[string]any) { m["description"] = "app" }
	// earlier and later are rows of the id of row (config-k) before and
	// after it in read order (in reality another key, such as k-x and
	// k_x, maps to one id; only the rule is tested here).
	earlier, later := configRow("k", "v2", migratedAt), configRow("k", "v2", migratedAt)
	earlier.PartitionKey, later.PartitionKey = "A", "Z"
	// appForm writes the doc as the application does (no null fields, a
	// timestamp in another form) and records it as reverse does (the hash
	// of what it holds).
	appForm := func(m map[string]any) {
		for k, v := range m {
			if v == nil {
				delete(m, k)
			}
		}
		mig := m["_migration"].(map[string]any)
		ts, _ := transform.ParseTimestamp(mig["timestamp"].(string))
		mig["timestamp"] = ts.Format(time.RFC3339Nano)
		h, err := transform.Hash(m)
		if err != nil {
			t.Fatal(err)
		}
		mig["hash"] = h
	}
	for _, c := range []struct {
		name  string
		found bool
		doc   []byte
		force bool
		want  verdict
	}{
		{"no doc", false, nil, false, verdictCreate},
		{"the row's doc, provenance and all", true, docOf(t, row), false, verdictUnchanged},
		{"the row's content, older provenance", true, docOf(t, configRow("k", "v2", migratedAt)), false, verdictRefresh},
		{"the row's content, no provenance", true, edit(t, docOf(t, row), func(m map[string]any) { delete(m, "_migration") }), false, verdictRefresh},
		{"the row's content in the application's forms, as reverse recorded it", true, edit(t, docOf(t, row), appForm), false, verdictUnchanged},
		{"the row's content in the application's forms, older provenance", true, edit(t, docOf(t, configRow("k", "v2", migratedAt)), appForm), false, verdictRefresh},
		{"untouched, older than the row", true, docOf(t, configRow("k", "v1", migratedAt)), false, verdictReplace},
		{"untouched, not older than the row", true, docOf(t, configRow("k", "v1", changedAt)), false, verdictNotOlder},
		{"migrated from an earlier row of the id, which owns it", true, docOf(t, earlier), false, verdictCollision},
		{"migrated from a later row of the id: the row takes it over", true, docOf(t, later), false, verdictReplace},
		{"migrated from a later row, then changed by the application", true, edit(t, docOf(t, later), appChanged), false, verdictConflict},
		{"migrated from a later row, changed by the application, --force", true, edit(t, docOf(t, later), appChanged), true, verdictForce},
		{"changed by the application", true, edit(t, docOf(t, configRow("k", "v1", migratedAt)), appChanged), false, verdictConflict},
		{"changed by the application, --force", true, edit(t, docOf(t, configRow("k", "v1", migratedAt)), appChanged), true, verdictForce},
		{"written by the application", true, edit(t, docOf(t, configRow("k", "v1", migratedAt)), func(m map[string]any) {
			delete(m, "_migration")
		}), false, verdictConflict},
		{"written by the application, --force", true, edit(t, docOf(t, configRow("k", "v1", migratedAt)), func(m map[string]any) {
			delete(m, "_migration")
		}), true, verdictForce},
	} {
		var s docState
		if c.found {
			s = stateOf(t, c.doc)
		}
		if got := decide(c.found, s, wantOf(t, row), c.force); got != c.want {
			t.Errorf("%s: verdict %d, want %d", c.name, got, c.want)
		}
	}
}

// The _migration.timestamp is outside the hash: an untouched doc whose
// timestamp cannot be read counts as older than its row.
func TestDecideUnreadableTimestampCountsAsOlder(t *testing.T) {
	row := configRow("k", "v2", changedAt)
	doc := edit(t, docOf(t, configRow("k", "v1", migratedAt)), func(m map[string]any) {
		m["_migration"].(map[string]any)["timestamp"] = "yesterday"
	})
	s := stateOf(t, doc)
	if !s.untouched {
		t.Fatal("the doc should count as untouched: _migration is not part of its hash")
	}
	if got := decide(true, s, wantOf(t, row), false); got != verdictReplace {
		t.Errorf("verdict %d, want replace", got)
	}
}

// TestDecidePrune is --prune's decision table.
func TestDecidePrune(t *testing.T) {
	row := configRow("gone", "v", migratedAt)
	src := source{row.Table, row.PartitionKey, row.RowKey}
	untouched := docOf(t, row)
	changed := edit(t, untouched, func(m map[string]any) { m["description"] = "app" })
	other := configRow("gone", "v", migratedAt)
	other.PartitionKey = "SYSTEM"
	for _, c := range []struct {
		name             string
		rowExists, found bool
		doc              []byte
		force            bool
		want             verdict
	}{
		{"the row is back", true, true, untouched, false, verdictNone},
		{"the doc is gone", false, false, nil, false, verdictNone},
		{"the doc has no _migration", false, true, edit(t, untouched, func(m map[string]any) { delete(m, "_migration") }), false, verdictNone},
		{"the doc is another row's now", false, true, docOf(t, other), true, verdictNone},
		{"untouched", false, true, untouched, false, verdictPrune},
		{"changed by the application", false, true, changed, false, verdictPruneConflict},
		{"changed by the application, --force", false, true, changed, true, verdictPruneForce},
	} {
		var s docState
		if c.found {
			s = stateOf(t, c.doc)
		}
		if got := decidePrune(c.rowExists, c.found, s, src, c.force); got != c.want {
			t.Errorf("%s: verdict %d, want %d", c.name, got, c.want)
		}
	}
}

func TestVerdictResolutions(t *testing.T) {
	for v, want := range map[verdict]Resolution{
		verdictConflict: NotWritten, verdictForce: Overwritten, verdictPruneConflict: NotDeleted, verdictPruneForce: Deleted,
		verdictReplace: "", verdictPrune: "", verdictNone: "",
	} {
		if got := v.resolution(); got != want {
			t.Errorf("verdict %d: resolution %q, want %q", v, got, want)
		}
	}
}

// More forced prunes than conflicts are listed: every one is counted (the
// count used to come from the at most 1,000 listed conflicts).
func TestReplayCountsEveryForcedPrune(t *testing.T) {
	f := newReplayFixture(t)
	const n = 1200
	for i := range n {
		row := configRow(fmt.Sprintf("gone%04d", i), "v", migratedAt)
		f.store.Put(transform.ContainerEntities, edit(t, docOf(t, row), func(m map[string]any) { m["description"] = "app" }))
	}
	opts := ReplayOptions{WindowOptions: WindowOptions{Prune: true, Force: true, Since: migratedAt}, Common: Common{StateDir: f.dir, Concurrency: 8}}
	s, err := Replay(context.Background(), opts, ReplayDeps{Source: f.src, Docs: f.store, Blobs: f.blobs, Query: f.store.Reader(), Env: Env{Now: func() time.Time { return goldenNow }}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Totals.Pruned != n || s.Totals.ForcedPrunes != n || s.Totals.Conflicts != 0 || len(s.Conflicts) != maxListed {
		t.Errorf("pruned %d, forced %d, conflicts %d, listed %d; want %d, %d, 0, %d",
			s.Totals.Pruned, s.Totals.ForcedPrunes, s.Totals.Conflicts, len(s.Conflicts), n, n, maxListed)
	}
	if n := len(f.store.Snapshot()); n != 0 {
		t.Errorf("%d docs left", n)
	}
}
