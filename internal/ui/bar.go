package ui

import (
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bifrost/bifrost-migrate/internal/words"
)

// screen is stderr as the status lines and the bar share it: a line is
// printed above the bar, which is drawn again under it. It is safe for
// concurrent use.
type screen struct {
	w io.Writer

	mu  sync.Mutex
	bar string // the bar on the last line; "" for none
}

// eraseLine returns the cursor to the start of the line and erases it.
const eraseLine = "\r\x1b[K"

// println prints text as a line of its own, above the bar.
func (s *screen) println(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bar == "" {
		fmt.Fprintln(s.w, text)
		return
	}
	io.WriteString(s.w, eraseLine+text+"\n"+s.bar)
}

// draw shows bar on the last line, in place of the one there.
func (s *screen) draw(bar string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	io.WriteString(s.w, eraseLine+bar)
	s.bar = bar
}

// keep prints final in place of the bar, as a line that stays (a table
// finished, the command ended); the next bar starts below it. An empty
// final keeps the bar there is, if any.
func (s *screen) keep(final string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case final != "":
		io.WriteString(s.w, eraseLine+final+"\n")
	case s.bar != "":
		io.WriteString(s.w, "\n")
	}
	s.bar = ""
}

// barView is what the bar of one table shows.
type barView struct {
	name string
	// done of total (-1: unknown) things ("rows"), read of them read.
	done, total, read int64
	things            string
	// rate is the table's things per second this session.
	rate float64
	// eta is the time left over every table (etaKnown: there is one).
	eta      time.Duration
	etaKnown bool
	live     live
	// finished: the table is done, in took; earlier: by earlier
	// sessions of a resumed run.
	finished, earlier bool
	took              time.Duration
}

// barField is one field of the bar, and how soon it goes when the
// terminal is too narrow: the highest drop first; 0 never.
type barField struct {
	text string
	drop int
}

// How soon each field of the bar goes when the terminal is too narrow,
// the last first; the table's name and its percentage stay.
const (
	dropETA = iota + 1
	dropCount
	dropGauge
	dropRate
	dropRU
	dropRead
	dropInFlight
)

// gaugeWidth is the gauge's width between its brackets on a terminal of
// width columns: the same for every bar there, so that the bars kept as
// lines line up.
func gaugeWidth(width int) int {
	switch {
	case width >= 140:
		return 30
	case width >= 100:
		return 20
	}
	return 10
}

// renderBar renders v in at most width-1 columns (the last one is left
// free: writing it makes some terminals wrap): the table, a gauge and the
// percentage when the total is known, done of total, the rows read, the
// rate, the ETA (or the time a finished table took), the RU/s and the
// writes in flight. A narrow terminal drops the writes in flight first,
// then the rows read, the RU/s, the rate, the gauge, the count and the
// ETA; it never wraps.
func renderBar(v barView, width int) string {
	limit := max(width-1, 1)
	name := fmt.Sprintf("%-13s", v.name)
	var fields []barField
	count := words.Thousands(v.done) + " " + v.things
	if v.total >= 0 {
		fields = append(fields, barField{text: fmt.Sprintf("%4s", percent(v.done, v.total))})
		count = words.Thousands(v.done) + "/" + words.Thousands(v.total) + " " + v.things
	}
	fields = append(fields, barField{text: count, drop: dropCount})
	if !v.finished && v.read > v.done {
		fields = append(fields, barField{text: words.Thousands(v.read) + " read", drop: dropRead})
	}
	rate := barField{text: thousands(math.Round(v.rate)) + " " + v.things + "/s", drop: dropRate}
	switch {
	case v.earlier:
		fields = append(fields, barField{text: "done earlier", drop: dropETA})
	case v.finished:
		fields = append(fields, rate, barField{text: "in " + roughSeconds(v.took), drop: dropETA})
	case v.etaKnown:
		fields = append(fields, rate, barField{text: "ETA " + roughSeconds(v.eta), drop: dropETA})
	default:
		fields = append(fields, rate)
	}
	if v.live.hasRU && !v.finished {
		fields = append(fields, barField{text: thousands(math.Round(v.live.ruPerSecond)) + " RU/s", drop: dropRU})
	}
	if v.live.hasFlow && !v.finished {
		fields = append(fields, barField{text: fmt.Sprintf("%d in flight", v.live.flow.InFlight), drop: dropInFlight})
	}
	inner := 0
	if v.total >= 0 {
		inner = gaugeWidth(width)
	}
	fields, inner = fit(fields, limit-utf8.RuneCountInString(name), inner)
	parts := []string{name}
	if inner > 0 {
		parts = append(parts, gauge(v.done, v.total, inner))
	}
	for _, f := range fields {
		parts = append(parts, f.text)
	}
	line, _ := words.Cut(strings.Join(parts, "  "), limit)
	return line
}

// fit drops the fields that do not fit in room columns (each after two
// spaces), highest drop first, and the gauge of inner characters (0:
// none) at dropGauge; it returns the fields left and the gauge's width
// (0: dropped).
func fit(fields []barField, room, inner int) ([]barField, int) {
	used := func() int {
		n := 0
		for _, f := range fields {
			n += 2 + utf8.RuneCountInString(f.text)
		}
		if inner > 0 {
			n += 2 + inner + 2 // two spaces, the brackets
		}
		return n
	}
	for used() > room {
		worst, at := 0, -1
		for i, f := range fields {
			if f.drop > worst {
				worst, at = f.drop, i
			}
		}
		switch {
		case inner > 0 && dropGauge >= worst:
			inner = 0
		case at >= 0:
			fields = append(fields[:at:at], fields[at+1:]...)
		default:
			return fields, inner // the rest is cut to the width
		}
	}
	return fields, inner
}

// gauge draws done of total in inner characters between brackets:
// "[=====>    ]".
func gauge(done, total int64, inner int) string {
	filled := inner
	if total > 0 && done < total {
		filled = int(int64(inner) * done / total)
	}
	g := strings.Repeat("=", filled)
	if filled < inner {
		g += ">" + strings.Repeat(" ", inner-filled-1)
	}
	return "[" + g + "]"
}
