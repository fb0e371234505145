package ui

import (
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/migrate"
)

// lineText says each part of a progress line as docs/observability.md
// shows it.
func TestLineText(t *testing.T) {
	flow := live{hasRU: true, hasFlow: true, ruPerSecond: 4210, throttledShare: 0.002,
		flow: migrate.FlowStats{InFlight: 64, Limit: 96, Max: 1024, Bound: migrate.BoundBudget}}
	for _, c := range []struct {
		name string
		v    lineView
		want string
	}{
		{"the example of the docs", lineView{
			words: RowsToDocs, name: "Entities", current: tableTally{done: 12_000, total: 40_000}, tables: 3,
			allDone: 15_120, allTotal: 52_140, written: 11_800, rate: 1234, eta: 29 * time.Second, etaKnown: true, live: flow,
		}, "Entities 12,000/40,000 rows (30%); 15,120/52,140 (28%) in all; 11,800 docs written; 1,234 rows/s; 4,210 RU/s, 0.2% throttled; ETA 29s; 64 in flight (window 96 of 1024, bounded by the account's budget)"},
		{"before a checkpoint, the count on its way", lineView{
			words: RowsToDocs, name: "Config", current: tableTally{total: -1, read: 1000}, tables: 3, allTotal: -1,
			written: 96, counting: true, live: flow,
		}, "Config 0 rows, 1,000 read; 0 in all; 96 docs written; 0 rows/s; 4,210 RU/s, 0.2% throttled; ETA unknown until every table is counted; 64 in flight (window 96 of 1024, bounded by the account's budget)"},
		{"reverse: docs, one container, outcomes", lineView{
			words: DocsToRows, name: "entities", current: tableTally{done: 7, total: -1}, tables: 1, allTotal: -1,
			written: 5, dead: 1, conflicts: 2, rate: 0.4,
		}, "entities 7 docs; 5 rows written, 1 dead letter, 2 conflicts; 0 docs/s; ETA unknown"},
		{"verify's phase", lineView{phase: "comparing", phaseFor: 72 * time.Second, live: live{hasRU: true, ruPerSecond: 3400}},
			"comparing (for 1m12s); 3,400 RU/s, 0.0% throttled"},
	} {
		if got := lineText(c.v); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// verify's phases: a status line, or with --output json a progress line
// with the step; the progress lines say the phase.
func TestStep(t *testing.T) {
	p, out, errOut, clock := testProgress(t, false, false, 0)
	p.Step("comparing")
	clock.add(3 * time.Second)
	p.printLine()
	if want := "run: comparing\n2026-11-21T12:00:03Z run: comparing (for 3s)\n"; errOut.String() != want || out.String() != "" {
		t.Errorf("text: stderr %q, stdout %q; want stderr %q", errOut.String(), out.String(), want)
	}
	p, out, errOut, _ = testProgress(t, true, false, 0)
	p.Step("comparing")
	if want := `{"type":"progress","step":"comparing"}` + "\n"; out.String() != want || errOut.String() != "" {
		t.Errorf("json: stdout %q, stderr %q; want stdout %q", out.String(), errOut.String(), want)
	}
}
