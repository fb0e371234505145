package cmd

import (
	"bytes"
	"testing"

	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/migrate"
)

// TestCountColumnsNameEveryCount: each summary table has a name for every
// count it prints, in the same order.
func TestCountColumnsNameEveryCount(t *testing.T) {
	if n, c := len(replayColumns), len(replayCounts(migrate.ReplayCounts{})); n != c {
		t.Errorf("replay: %d column names for %d counts", n, c)
	}
	if n, c := len(reverseColumns), len(reverseCounts(migrate.ReverseCounts{})); n != c {
		t.Errorf("reverse: %d column names for %d counts", n, c)
	}
	var b bytes.Buffer
	if err := writeCountTable(&b, countTable{head: "TABLE", names: replayColumns, total: replayCounts(migrate.ReplayCounts{Rows: 7, DeadLetters: 2})}); err != nil {
		t.Fatal(err)
	}
	want := "TABLE  KIND  ROWS  CREATED  REPLACED  UNCHANGED  CONFLICTS  FORCED  PRUNED  RETRIED-412  RETRIED-409  DROPPED-INDEX  KEPT-IN-TABLES  EXPIRED  DEAD-LETTER  \n" +
		"TOTAL        7     0        0         0          0          0       0       0            0            0              0               0        2            \n"
	if b.String() != want {
		t.Errorf("table:\n%q\nwant\n%q", b.String(), want)
	}
}

// TestWindowLineIsOneFlatObject: a replay's or reverse's summary line has
// "complete" first, the summary's own fields, then "ru", with HTML
// characters as they are.
func TestWindowLineIsOneFlatObject(t *testing.T) {
	var b bytes.Buffer
	s := migrate.ReplaySummary{WindowSummary: migrate.WindowSummary{Since: "2026-11-20T00:00:00Z", Warnings: map[string]int64{"a<b&c": 1}}}
	if err := ui.NewJSONLines(&b).Emit(ui.LineSummary, windowLine{true, s, ui.RUReport{MaxRU: 5}}); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{summaryHead() + `"complete":true,"since":"2026-11-20T00:00:00Z",`, `"warnings":{"a<b&c":1}`, `,"ru":{"requestUnits":0,`, `"maxRu":5,"maxInFlight":0,"latencyP50Ms":0}}` + "\n"} {
		if !bytes.Contains([]byte(got), []byte(want)) {
			t.Errorf("line %s lacks %s", got, want)
		}
	}
	if err := ui.NewJSONLines(&b).Emit(ui.LineSummary, windowLine{summary: []int{1}}); err == nil {
		t.Error("a summary that is not an object was written")
	}
}
