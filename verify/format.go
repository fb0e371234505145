package verify

import (
	"io"
	"time"
)

// Format is one way of writing a Report: Text on stdout, and the formats
// of the --report file (Formats). Each is one file of this package:
// text.go, json.go, html.go.
type Format interface {
	// Name is the format's name, as --report-format takes it ("json").
	Name() string
	// Exts are the extensions of a file name that choose the format, in
	// lower case with their dot (".html", ".htm"); none when no name
	// chooses it.
	Exts() []string
	// Write writes r to w, with what meta says beyond the report; it
	// returns the first error, of the rendering or of w.
	Write(w io.Writer, r *Report, meta Meta) error
}

// Formats returns the formats of the --report file, in the order help
// and messages list them. The first is the one a name without an
// extension gets (/dev/stdout). Adding a format is a file that defines
// it and its line here.
func Formats() []Format {
	return []Format{JSON{}, HTML{}}
}

// Meta is what a report file shows beyond the Report: the tool's
// version, and the run's throughput samples for a format that charts
// them.
type Meta struct {
	ToolVersion string
	// Rates, when not nil, reads the run's throughput samples; a format
	// calls it only if it shows them (HTML), so that the others read no
	// samples file.
	Rates func() []RatePoint
	// RatesFrom names the samples file (shown when there are none).
	RatesFrom string
}

// rates are the samples m.Rates reads; none without it.
func (m Meta) rates() []RatePoint {
	if m.Rates == nil {
		return nil
	}
	return m.Rates()
}

// RatePoint is one sample of a run's throughput, for the HTML report's
// charts: the rates over the time before Time.
type RatePoint struct {
	Time                                      time.Time
	RowsPerSecond, DocsPerSecond, RUPerSecond float64
}
