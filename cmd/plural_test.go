package cmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/migrate"
)

// TestCountsAgreeInNumber: the counts of reverse's summary and of the
// request-unit report agree with their nouns: "1 row", "1 index row
// deleted", "1 request" (reverse once printed "rows written: 4 (1 rows,
// …)"); other counts keep the plural.
func TestCountsAgreeInNumber(t *testing.T) {
	window := migrate.WindowSummary{Since: "2026-11-20T00:00:00Z"}
	for _, tc := range []struct {
		counts migrate.ReverseCounts
		want   string
	}{
		{migrate.ReverseCounts{Docs: 2, Synced: 2, RowsWritten: 1, IndexWritten: 2, IndexDeleted: 1},
			"\nrows written: 4 (1 row, 2 index rows, 1 index row deleted, 0 pruned) in 0.0s\n"},
		{migrate.ReverseCounts{Docs: 3, Synced: 3, RowsWritten: 2, IndexWritten: 1, Pruned: 1},
			"\nrows written: 4 (2 rows, 1 index row, 0 index rows deleted, 1 pruned) in 0.0s\n"},
	} {
		s := migrate.ReverseSummary{WindowSummary: window, Containers: []migrate.ReverseContainerSummary{{Container: "entities"}}, Totals: tc.counts}
		var b bytes.Buffer
		if err := writeWindowText(&b, reverseWords, reverseReport(s), ui.RUReport{}, endedDone); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("reverse summary lacks %q:\n%s", tc.want, b.String())
		}
	}

	var b bytes.Buffer
	ui.RUReport{Requests: 1}.WriteText(&b)
	if want := "\nthrottled (429): 0 of 1 request (0.0 %)\n"; !strings.Contains(b.String(), want) {
		t.Errorf("RU report lacks %q:\n%s", want, b.String())
	}
}
