package ui

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/words"
	"github.com/bifrost/bifrost-migrate/migrate"
)

// lineView is what one progress line says (docs/observability.md,
// "Progress lines"): for an engine at work, the current table, every
// table, the outcomes, the rate since the line before, Cosmos DB's
// figures and the ETA; before any table (verify, or an engine starting),
// the phase and how long it has lasted.
type lineView struct {
	words Words
	// phase is verify's phase ("" before any: "starting"), lasting for
	// phaseFor; shown while there is no table.
	phase    string
	phaseFor time.Duration
	// current is the table at work; tables counts those heard of.
	current tableTally
	name    string
	tables  int
	// allDone and allTotal are over every table (allTotal -1: unknown).
	allDone, allTotal        int64
	written, dead, conflicts int64
	// rate is the rows finished per second since the line before.
	rate float64
	// eta is the time left; etaKnown says whether there is one;
	// counting whether the tables' totals are being counted.
	eta                time.Duration
	etaKnown, counting bool
	live               live
}

// lineText is the progress line's message (after "STAMP command: ").
func lineText(v lineView) string {
	var parts []string
	if v.name == "" {
		phase := v.phase
		if phase == "" {
			phase = "starting"
		}
		parts = append(parts, fmt.Sprintf("%s (for %s)", phase, roughSeconds(v.phaseFor)))
	} else {
		cur := v.name + " " + ofTotal(v.current.done, v.current.size(), v.words.Read)
		if v.current.read > 0 {
			cur += ", " + words.Thousands(v.current.read) + " read"
		}
		parts = append(parts, cur)
		if v.tables > 1 {
			parts = append(parts, ofTotal(v.allDone, v.allTotal, "")+" in all")
		}
		w := words.Thousands(v.written) + " " + v.words.Written
		if v.dead > 0 {
			w += ", " + words.Count(v.dead, "dead letter", "dead letters")
		}
		if v.conflicts > 0 {
			w += ", " + words.Count(v.conflicts, "conflict", "conflicts")
		}
		parts = append(parts, w, fmt.Sprintf("%s %s/s", thousands(math.Round(v.rate)), v.words.Read))
	}
	if v.live.hasRU {
		parts = append(parts, fmt.Sprintf("%s RU/s, %.1f%% throttled", thousands(math.Round(v.live.ruPerSecond)), 100*v.live.throttledShare))
	}
	if v.name != "" {
		parts = append(parts, "ETA "+etaText(v.eta, v.etaKnown, v.counting && v.allTotal < 0))
	}
	if v.live.hasFlow && v.name != "" {
		fs := v.live.flow
		flight := fmt.Sprintf("%d in flight (window %d of %d", fs.InFlight, fs.Limit, fs.Max)
		if bound := BoundText(fs.Bound); bound != "" {
			flight += ", bounded by " + bound
		}
		parts = append(parts, flight+")")
	}
	return strings.Join(parts, "; ")
}

// etaText says the time left d (known), or why there is none yet: the
// tables are still being counted, or nothing is done, or nothing says
// how much there is.
func etaText(d time.Duration, known, counting bool) string {
	switch {
	case known:
		return roughSeconds(d)
	case counting:
		return "unknown until every table is counted"
	}
	return "unknown"
}

// ofTotal says n of total things ("12,345/40,000 rows (31%)"), or n
// things when the total is unknown (-1).
func ofTotal(n, total int64, things string) string {
	if things != "" {
		things = " " + things
	}
	if total < 0 {
		return words.Thousands(n) + things
	}
	return fmt.Sprintf("%s/%s%s (%s)", words.Thousands(n), words.Thousands(total), things, percent(n, total))
}

// percent is n of total, rounded down ("31%"): 100% only when all is
// done.
func percent(n, total int64) string {
	pct := 100.0
	if total > 0 {
		pct = math.Floor(100 * float64(n) / float64(total))
	}
	return fmt.Sprintf("%.0f%%", pct)
}

// roughSeconds says d for a progress line: "45s", "12m30s", "3h05m".
func roughSeconds(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// thousands prints a number with thousands separators and no decimals
// unless it has some.
func thousands(v float64) string {
	if v != math.Trunc(v) {
		return fmt.Sprintf("%g", v)
	}
	return words.Thousands(int64(v))
}

// BoundText is what a summary or a progress line says bounded the
// writes ("" for none).
func BoundText(b migrate.Bound) string {
	switch b {
	case migrate.BoundBudget:
		return "the account's budget"
	case migrate.BoundMaxRU:
		return "--max-ru"
	case migrate.BoundSource:
		return "the source reads"
	case migrate.BoundConcurrency:
		return "the --concurrency bound"
	}
	return ""
}
