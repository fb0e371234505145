package verify

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/words"
)

//go:embed report.html
var reportHTML string

var reportTemplate = template.Must(template.New("report").Parse(reportHTML))

// HTML is the report as one self-contained HTML page for a change
// ticket: the verdict in words, source rows → dispositions per table and
// kind (a bar chart and the table), the run's throughput and request
// units over time (Meta.Rates), the rows not migrated with their reasons
// (the first MaxDeadLetters, redacted), the differences, the
// access-pattern findings, and the settings, endpoints and versions. Its
// charts are inline SVG; it references nothing outside itself, and each
// section prints on its own A4 page.
type HTML struct{}

// Name is "html".
func (HTML) Name() string { return "html" }

// Exts are .html and .htm.
func (HTML) Exts() []string { return []string{".html", ".htm"} }

// Write writes r as the page, with the version and the throughput
// samples of meta; it returns the template's or w's error.
func (HTML) Write(w io.Writer, r *Report, meta Meta) error {
	return reportTemplate.Execute(w, newHTMLView(r, meta, meta.rates()))
}

// htmlView is what the template shows.
type htmlView struct {
	R           *Report
	ToolVersion string
	Verdict     verdict
	Facts       []fact
	Kinds       []kindRow
	Bars        barChart
	Legend      []legendItem
	Throughput  *lineChart
	Rows        *lineChart
	RU          *lineChart
	RatesFrom   string
	Problems    []string
	DeadRows    []deadRow
	Access      []accessGroup
	Settings    []fact
}

type fact struct{ Name, Value string }

// verdict is the report's conclusion in words; Class is its colour: ok
// (a full check in sync), warn (a partial check in sync, or rows not
// migrated and nothing else) or failed.
type verdict struct {
	Class, Head string
	Lines       []string
}

// The segments of a kind's bar: what became of its source rows.
var segments = []struct {
	name, colour string
	n            func(Counts) int
}{
	{"matched", "#2e7d32", func(c Counts) int { return c.Matched }},
	{"missing", "#c62828", func(c Counts) int { return c.Missing }},
	{"different", "#ef6c00", func(c Counts) int { return c.Different }},
	{"dead-letter", "#6a1b9a", func(c Counts) int { return c.DeadLetter }},
	{"expired", "#9e9d24", func(c Counts) int { return c.Expired }},
	{"dropped-index", "#90a4ae", func(c Counts) int { return c.DroppedIndex }},
	{"kept-in-tables", "#1565c0", func(c Counts) int { return c.KeptInTables }},
}

type legendItem struct{ Name, Colour string }

type kindRow struct {
	Table, Kind string
	Counts
	Total bool
}

// barChart is one 100 % stacked bar per table and kind.
type barChart struct {
	Width, Height int
	Rows          []barRow
}

type barRow struct {
	Y, TextY       int
	Label, Count   string
	Segments       []barSegment
	LabelX, CountX int
}

type barSegment struct {
	X, Width      string
	Y             int
	Colour, Title string
}

const (
	barLabelWidth = 230
	barWidth      = 520
	barHeight     = 14
	barGap        = 6
)

func newBars(kinds []KindCounts) barChart {
	c := barChart{Width: barLabelWidth + barWidth + 70, Height: len(kinds)*(barHeight+barGap) + barGap}
	for i, k := range kinds {
		y := barGap + i*(barHeight+barGap)
		row := barRow{Y: y, TextY: y + barHeight - 3, Label: k.Table + " · " + k.Kind, Count: strconv.Itoa(k.Rows),
			LabelX: barLabelWidth - 8, CountX: barLabelWidth + barWidth + 6}
		x := 0.0
		for _, s := range segments {
			n := s.n(k.Counts)
			if n == 0 || k.Rows == 0 {
				continue
			}
			w := float64(barWidth) * float64(n) / float64(k.Rows)
			row.Segments = append(row.Segments, barSegment{
				X: num(barLabelWidth + x), Width: num(w), Y: y, Colour: s.colour,
				Title: fmt.Sprintf("%s %s: %d %s of %d rows", k.Table, k.Kind, n, s.name, k.Rows),
			})
			x += w
		}
		c.Rows = append(c.Rows, row)
	}
	return c
}

// lineChart is a chart of one or more series over time.
type lineChart struct {
	Title          string
	Width, Height  int
	Left, Top      int
	PlotW, PlotH   int
	Bottom, Right  int
	Grid           []gridLine
	Ticks          []timeTick
	Series         []series
	Unit           string
	FirstX, LastX  string
	AxisY, AxisEnd int
}

type gridLine struct {
	Y, Label string
	LabelY   string
}

type timeTick struct{ X, Label, Anchor string }

type series struct {
	Name, Colour, Points string
	LegendX, LegendY     int
}

// newLineChart charts the values of each named series over the
// samples' times; nil when there is nothing to chart.
func newLineChart(title, unit string, rates []RatePoint, names []string, colours []string, value []func(RatePoint) float64) *lineChart {
	if len(rates) == 0 {
		return nil
	}
	c := &lineChart{Title: title, Unit: unit, Width: 760, Height: 170, Left: 64, Top: 28, Right: 16, Bottom: 36}
	c.PlotW, c.PlotH = c.Width-c.Left-c.Right, c.Height-c.Top-c.Bottom
	c.AxisY, c.AxisEnd = c.Top+c.PlotH, c.Left+c.PlotW
	t0, t1 := rates[0].Time, rates[len(rates)-1].Time
	span := t1.Sub(t0).Seconds()
	peak := 0.0
	for _, r := range rates {
		for _, v := range value {
			peak = math.Max(peak, v(r))
		}
	}
	top := niceCeiling(peak)
	xOf := func(t time.Time) float64 {
		if span <= 0 {
			return float64(c.Left) + float64(c.PlotW)/2
		}
		return float64(c.Left) + float64(c.PlotW)*t.Sub(t0).Seconds()/span
	}
	yOf := func(v float64) float64 { return float64(c.Top) + float64(c.PlotH)*(1-v/top) }
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		c.Grid = append(c.Grid, gridLine{Y: num(yOf(v)), LabelY: num(yOf(v) + 4), Label: shortNumber(v)})
	}
	for i := 0; i <= 4; i++ {
		t := t0.Add(time.Duration(float64(i) / 4 * span * float64(time.Second)))
		anchor := "middle"
		switch {
		case span <= 0:
		case i == 0:
			anchor = "start"
		case i == 4:
			anchor = "end"
		}
		c.Ticks = append(c.Ticks, timeTick{X: num(xOf(t)), Label: t.UTC().Format("15:04:05"), Anchor: anchor})
		if span <= 0 {
			break
		}
	}
	for i, name := range names {
		var pts []string
		for _, r := range rates {
			pts = append(pts, num(xOf(r.Time))+","+num(yOf(value[i](r))))
		}
		if len(pts) == 1 {
			// One sample: a short flat line, so that it shows.
			y := num(yOf(value[i](rates[0])))
			pts = []string{num(float64(c.Left)) + "," + y, num(float64(c.AxisEnd)) + "," + y}
		}
		c.Series = append(c.Series, series{Name: name, Colour: colours[i], Points: strings.Join(pts, " "),
			LegendX: c.Left + 8 + i*170, LegendY: 16})
	}
	c.FirstX, c.LastX = t0.UTC().Format("2006-01-02 15:04:05"), t1.UTC().Format("2006-01-02 15:04:05")
	return c
}

// niceCeiling is the smallest of 1, 2, 2.5 or 5 × 10^k at or above v (1
// for v ≤ 0).
func niceCeiling(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// shortNumber writes v for an axis: 1.5k, 20k, 3M.
func shortNumber(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// num writes a coordinate.
func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// deadRow is a row not migrated as the report lists it.
type deadRow struct {
	DeadLetterRow
	RowText string
}

// accessGroup is one kind of access-pattern finding with its first
// rows.
type accessGroup struct {
	Title string
	Count int
	Lines []string
}

func newHTMLView(r *Report, f Meta, rates []RatePoint) htmlView {
	v := htmlView{R: r, ToolVersion: f.ToolVersion, Verdict: reportVerdict(r), RatesFrom: f.RatesFrom}
	if r.Migration != nil {
		m := r.Migration
		state := "not complete"
		if m.Done {
			state = "complete"
		}
		v.Facts = append(v.Facts, fact{"Migration run", fmt.Sprintf("%s (%s), started %s, last checkpoint %s", m.RunID, state, m.Started, m.Updated)})
	} else {
		v.Facts = append(v.Facts, fact{"Migration run", "no run's state in --state-dir"})
	}
	v.Facts = append(v.Facts, fact{"Verified", fmt.Sprintf("%s → %s (%.1f s)", r.Started, r.Ended, r.ElapsedSeconds)})
	if e := r.Endpoints; e != nil {
		v.Facts = append(v.Facts,
			fact{"Source tables", fmt.Sprintf("%s (account %s, %s)", e.Tables.Endpoint, e.Tables.Account, e.Tables.Auth)},
			fact{"Cosmos DB", fmt.Sprintf("%s database %s (%s)", e.Cosmos.Endpoint, e.Cosmos.Database, e.Cosmos.Auth)},
			fact{"Blobs", fmt.Sprintf("%s container %s (account %s, %s)", e.Blobs.Endpoint, e.Blobs.Container, e.Blobs.Account, e.Blobs.Auth)})
	}
	v.Facts = append(v.Facts, fact{"Tool version", f.ToolVersion})

	for _, k := range r.Tables {
		v.Kinds = append(v.Kinds, kindRow{Table: k.Table, Kind: k.Kind, Counts: k.Counts})
	}
	v.Kinds = append(v.Kinds, kindRow{Table: "total", Counts: r.Totals, Total: true})
	v.Bars = newBars(r.Tables)
	for _, s := range segments {
		v.Legend = append(v.Legend, legendItem{s.name, s.colour})
	}
	// Three charts, not one: the rows of a table that is only read (the
	// dropped indexes) go many times faster than the docs written, and
	// would flatten them.
	v.Throughput = newLineChart("Docs written", "per second", rates, []string{"docs written/s"}, []string{"#2e7d32"},
		[]func(RatePoint) float64{func(p RatePoint) float64 { return p.DocsPerSecond }})
	v.Rows = newLineChart("Source rows given their outcome", "per second", rates, []string{"rows/s"}, []string{"#1565c0"},
		[]func(RatePoint) float64{func(p RatePoint) float64 { return p.RowsPerSecond }})
	v.RU = newLineChart("Request units", "RU/s", rates, []string{"RU/s"}, []string{"#6a1b9a"},
		[]func(RatePoint) float64{func(p RatePoint) float64 { return p.RUPerSecond }})

	for _, m := range first(r.Missing, ShownDifferences) {
		v.Problems = append(v.Problems, "missing: "+m.String())
	}
	for _, o := range first(r.Orphans, ShownDifferences) {
		v.Problems = append(v.Problems, "orphan: "+o.DocRef.String()+": "+o.Reason)
	}
	for _, d := range first(r.Differences, ShownDifferences) {
		v.Problems = append(v.Problems, "different: "+d.text())
	}
	for _, d := range r.DeadLetters {
		text := string(d.Row)
		if len(text) > 300 {
			text = text[:300] + "…"
		}
		v.DeadRows = append(v.DeadRows, deadRow{DeadLetterRow: d, RowText: text})
	}
	groups := accessRows(r.AccessPatterns.Findings)
	for _, k := range []struct {
		kind  FindingKind
		title string
		n     int
	}{
		{FindingDangling, "Dangling index rows: listed before cutover, gone after (no such execution)", r.AccessPatterns.Dangling},
		{FindingStale, "Stale index rows: listed under the index's value before cutover, under the execution's after", r.AccessPatterns.Stale},
		{FindingUnindexed, "Unindexed executions: missing from that user's or workflow's list before cutover, in it after", r.AccessPatterns.Unindexed},
	} {
		g := accessGroup{Title: k.title, Count: k.n}
		for _, rows := range groups {
			if rows[0].Kind == k.kind && len(g.Lines) < ShownDifferences {
				g.Lines = append(g.Lines, findingText(rows))
			}
		}
		v.Access = append(v.Access, g)
	}
	s := r.Settings
	sample := "every row"
	if s.Sample > 0 && s.Sample < 1 {
		sample = words.Percent(s.Sample) + " of the rows (by a hash of their keys)"
	}
	v.Settings = []fact{
		{"Database", s.Database},
		{"Tables", strings.Join(s.Tables, ", ")},
		{"Checked", sample},
		{"--execution-ttl", s.ExecutionTTL},
		{"--blob-threshold", strconv.Itoa(s.BlobThreshold) + " bytes"},
		{"--relationships", s.Relationships},
		{"--strict", strconv.FormatBool(s.Strict)},
		{"Now (expiry judged at)", s.Now},
		{"Command line", r.CommandLine},
		{"Dead-letter file", r.DeadLetterFile},
		{"Tool version", f.ToolVersion},
	}
	if r.Migration != nil && r.Migration.ToolVersion != "" {
		v.Settings = append(v.Settings, fact{"Migration's tool version", r.Migration.ToolVersion})
	}
	return v
}

// reportVerdict says in words whether the migration can be signed off.
// A partial check says so first, names what it judged and that it is not
// the sign-off.
func reportVerdict(r *Report) verdict {
	t := r.Totals
	var v verdict
	switch {
	case r.OK && !r.Partial && !r.Scope.Base.IsZero():
		v = verdict{Class: "ok", Head: "In sync: " + r.Scope.String() + "; every source row is where its disposition says."}
	case r.OK && !r.Partial:
		v = verdict{Class: "ok", Head: "In sync: every source row is where its disposition says."}
	case r.OK && r.Scope.RowsJudged == 0 && r.Scope.DocsJudged == 0:
		v = verdict{Class: "warn", Head: "Nothing judged: no row, and no doc in Cosmos DB from a row of the selection."}
	case r.OK:
		v = verdict{Class: "warn", Head: "In sync: every row judged is where its disposition says."}
	case t.Missing+t.Different+t.Orphans == 0:
		v = verdict{Class: "warn", Head: fmt.Sprintf("Not in sync: %d row(s) are not migrated (dead letters); every other row matches its doc.", r.NotMigrated)}
	default:
		v = verdict{Class: "failed", Head: fmt.Sprintf("Not in sync: %d missing, %d different and %d orphan doc(s); %d row(s) not migrated.",
			t.Missing, t.Different, t.Orphans, r.NotMigrated)}
	}
	switch {
	case r.Partial:
		v.Head = "Partial check of " + r.Scope.String() + ". " + v.Head
		v.Lines = append(v.Lines, "Only a full check, of every row of every table, is the signal to cut over.")
	case !r.OK && !r.Scope.Base.IsZero():
		v.Head += " Judged: " + r.Scope.String() + "."
	}
	v.Lines = append(v.Lines, fmt.Sprintf("%d source rows checked: %d docs expected, %d matched; %d dropped indexes, %d kept in tables, %d expired, %d dead letters.",
		t.Rows, t.ExpectedDocs, t.Matched, t.DroppedIndex, t.KeptInTables, t.Expired, t.DeadLetter))
	if a := r.AccessPatterns; a.Checked {
		v.Lines = append(v.Lines, fmt.Sprintf("Where users will see a difference after cutover (data quality, not failures): %d dangling and %d stale index rows, %d unindexed executions.",
			a.Dangling, a.Stale, a.Unindexed))
	}
	if n := total(r.AppWritten); n > 0 {
		v.Lines = append(v.Lines, fmt.Sprintf("%d doc(s) written by the application (no _migration) were counted, not judged.", n))
	}
	if t.ChangedWhileRunning > 0 {
		v.Lines = append(v.Lines, fmt.Sprintf("%d doc(s) changed while verify ran (written after it started, read again and still in flight), not differences: %s judges them.",
			t.ChangedWhileRunning, "`bifrost-migrate verify --since "+r.startedAt.UTC().Truncate(time.Second).Format(time.RFC3339)+"`"))
	}
	return v
}
