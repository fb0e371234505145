package cmd

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/migrate"
)

// doneNotWould finds what only a command that wrote may say: that rows,
// docs or blobs were written, or conflicts left or overwritten.
var doneNotWould = regexp.MustCompile(`(?m)^(rows|docs) written:|^blobs uploaded:|[0-9] left unresolved|[0-9] (written|overwritten or deleted) with --force`)

// TestDryRunsSayWouldWrite: the text summaries of the dry runs of run,
// replay and reverse say what would be written, never that it was (reverse
// --dry-run used to print "rows written: 6"); their JSON summaries carry
// "dryRun": true.
func TestDryRunsSayWouldWrite(t *testing.T) {
	window := migrate.WindowSummary{Since: "2026-11-20T00:00:00Z", DryRun: true, BlobsUploaded: 1, BlobBytes: 10}
	replay := migrate.ReplaySummary{WindowSummary: window, Tables: []migrate.ReplayTableSummary{{Table: "Entities"}},
		Totals: migrate.ReplayCounts{Rows: 4, Created: 1, Replaced: 1, Conflicts: 1, DeadLetters: 1}}
	replayDead := replay
	replayDead.Totals.Conflicts = 0
	reverse := migrate.ReverseSummary{WindowSummary: window, Containers: []migrate.ReverseContainerSummary{{Container: "entities"}},
		Totals: migrate.ReverseCounts{Docs: 3, Synced: 3, RowsWritten: 6, Conflicts: 1}}
	run := migrate.Summary{DryRun: true, Complete: true, Tables: []migrate.TableSummary{{Table: "Config", Done: true}}, BlobsUploaded: 2, BlobBytes: 20}

	for _, tc := range []struct {
		name  string
		write func(*bytes.Buffer) error
		want  []string
	}{
		{"replay", func(b *bytes.Buffer) error { return writeReplayText(b, replay, ui.RUReport{}, endedDone) }, []string{
			"DRY RUN: nothing was written; the counts say what replay would do.\n",
			"\nblobs that would be uploaded: 1 (10 bytes)\n",
			"\ndocs that would be written: 2 (created 1, replaced 1, forced 0, pruned 0) in 0.0s\n",
			"\nconflicts: 1 would be left unresolved, 0 would be overwritten or deleted with --force\n",
			"\nreplay: 1 conflict(s) would be left unresolved\n",
		}},
		{"replay, dead letters", func(b *bytes.Buffer) error { return writeReplayText(b, replayDead, ui.RUReport{}, endedDone) }, []string{
			"\nreplay: 1 row(s) would be dead-lettered\n",
		}},
		{"reverse", func(b *bytes.Buffer) error {
			return writeWindowText(b, reverseWords, reverseReport(reverse), ui.RUReport{}, endedDone)
		}, []string{
			"DRY RUN: nothing was written; the counts say what reverse would do.\n",
			"\nrows that would be written: 6 (6 rows, 0 index rows, 0 index rows deleted, 0 pruned) in 0.0s\n",
			"\nblobs that would be uploaded: 1 (10 bytes)\n",
			"\nconflicts: 1 would be left unresolved, 0 would be written with --force\n",
			"\nreverse: 1 conflict(s) would be left unresolved\n",
		}},
		{"run", func(b *bytes.Buffer) error { return writeRunText(b, run, nil, 0, endedDone) }, []string{
			"\nblobs that would be uploaded: 2 (20 bytes)\n",
		}},
	} {
		var b bytes.Buffer
		if err := tc.write(&b); err != nil {
			t.Fatal(err)
		}
		for _, want := range tc.want {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s: text lacks %q:\n%s", tc.name, want, b.String())
			}
		}
		if m := doneNotWould.FindString(b.String()); m != "" {
			t.Errorf("%s: a dry run says %q:\n%s", tc.name, m, b.String())
		}
	}

	for name, emit := range map[string]func(*ui.JSONLines) error{
		"replay":  func(l *ui.JSONLines) error { return writeReplayJSON(l, replay, ui.RUReport{}, endedDone) },
		"reverse": func(l *ui.JSONLines) error { return l.Emit(ui.LineSummary, windowLine{true, reverse, ui.RUReport{}}) },
		"run":     func(l *ui.JSONLines) error { return writeRunJSON(l, run, nil) },
	} {
		var b bytes.Buffer
		if err := emit(ui.NewJSONLines(&b)); err != nil || !strings.Contains(b.String(), `"dryRun":true`) {
			t.Errorf("%s: JSON summary %s (%v), want \"dryRun\":true", name, b.String(), err)
		}
	}
}
