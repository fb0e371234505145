package ui

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bifrost/bifrost-migrate/migrate"
)

// The bar of a run at work, as a terminal shows it at 200, 80 and 40
// columns: everything; then without the writes in flight, the rows read
// and the RU/s; then the table, its percentage and the ETA.
func TestBarDropsFieldsToFit(t *testing.T) {
	v := barView{
		name: "Relationships", done: 12_000, total: 40_000, read: 15_000, things: "rows", rate: 1234,
		eta: 111 * time.Second, etaKnown: true,
		live: live{hasRU: true, hasFlow: true, ruPerSecond: 4210, flow: migrate.FlowStats{InFlight: 64}},
	}
	for _, c := range []struct {
		width int
		want  string
	}{
		{200, "Relationships  [=========>                    ]   30%  12,000/40,000 rows  15,000 read  1,234 rows/s  ETA 1m51s  4,210 RU/s  64 in flight"},
		{80, "Relationships  [===>      ]   30%  12,000/40,000 rows  1,234 rows/s  ETA 1m51s"},
		{40, "Relationships   30%  ETA 1m51s"},
	} {
		if got := renderBar(v, c.width); got != c.want {
			t.Errorf("at %d columns:\n got %q\nwant %q", c.width, got, c.want)
		}
	}
}

// At any width the bar is at most that wide (issue 40: 125 to 146
// columns, wrapping on an 80-column terminal), whatever its figures,
// through the package's API with a fake terminal width: the bar drawn
// while a table is at work and the line kept when it is done.
func TestBarFitsTheTerminal(t *testing.T) {
	for _, width := range []int{200, 120, 80, 60, 40, 30, 20, 10, 1} {
		p, _, errOut, clock := testProgress(t, false, true, width)
		p.Counting([]string{"Relationships", "Entities"})
		p.Total("Relationships", 9_876_543_210)
		p.Total("Entities", 5)
		p.Read("Relationships", 9_000_000_000)
		clock.add(time.Millisecond)
		p.Advance("Relationships", 1_234_567_890)
		clock.add(999 * time.Hour)
		p.drawBar()
		p.Advance("Entities", 5)
		p.TableDone("Entities")
		for _, bar := range strings.Split(strings.ReplaceAll(errOut.String(), "\n", eraseLine), eraseLine) {
			if n := utf8.RuneCountInString(bar); n > width || strings.ContainsAny(bar, "\r\n\t") {
				t.Errorf("at %d columns, a bar of %d: %q", width, n, bar)
			}
		}
		t.Logf("%3d: %q", width, errOut.String())
	}
	// Without a total: no gauge, no percentage.
	v := barView{name: "entities", done: 120, total: -1, things: "docs", rate: 3}
	if got, want := renderBar(v, 80), "entities       120 docs  3 docs/s"; got != want {
		t.Errorf("without a total: %q, want %q", got, want)
	}
}
