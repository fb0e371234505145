package ui

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/bifrost/bifrost-migrate/internal/words"
)

// RUReport is the request-unit part of a command's summary (SPEC §14): what
// this invocation consumed in Cosmos DB, as the service reported it.
type RUReport struct {
	RequestUnits    float64            `json:"requestUnits"`
	ByContainer     map[string]float64 `json:"byContainer"`
	Seconds         float64            `json:"seconds"`
	MeanRUPerSecond float64            `json:"meanRuPerSecond"`
	// RUPerDoc is RequestUnits over the docs written (0 when none).
	RUPerDoc       float64 `json:"ruPerDoc"`
	Requests       int64   `json:"requests"`
	Throttled      int64   `json:"throttled"`
	ThrottledShare float64 `json:"throttledShare"`
	// MaxRU is --max-ru (0: none).
	MaxRU float64 `json:"maxRu"`
	// Bound says what held the writes back longest: the account's
	// budget, --max-ru, the source reads or the --concurrency bound
	// (empty: nothing was written). MaxInFlight is the --concurrency
	// bound, LatencyP50Ms the median latency of the recent writes.
	Bound        string  `json:"bound,omitempty"`
	MaxInFlight  int     `json:"maxInFlight"`
	LatencyP50Ms float64 `json:"latencyP50Ms"`
}

// NewRUReport is the report of what m's pacer and flow measured, docs
// the docs written (0: none counted).
func NewRUReport(m Meters, docs int64) RUReport {
	s := m.Pacer.Stats()
	r := RUReport{
		RequestUnits: s.RequestUnits, ByContainer: map[string]float64{}, Seconds: s.Seconds,
		MeanRUPerSecond: s.MeanRUPerSecond(), Requests: s.Requests, Throttled: s.Throttled,
		ThrottledShare: s.ThrottledShare(), MaxRU: s.Cap,
	}
	for c, ru := range s.ByContainer {
		if c == "" {
			c = "(account)"
		}
		r.ByContainer[c] += ru
	}
	if docs > 0 {
		r.RUPerDoc = s.RequestUnits / float64(docs)
	}
	if m.Flow != nil {
		fs := m.Flow.Stats()
		r.Bound, r.MaxInFlight, r.LatencyP50Ms = BoundText(fs.Bound), fs.Max, float64(fs.LatencyP50.Microseconds())/1000
	}
	return r
}

// WriteText prints the report as two lines, and a third that says what
// bounded the writes when something was written.
func (r RUReport) WriteText(w io.Writer) {
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(r.ByContainer)) {
		parts = append(parts, fmt.Sprintf("%s %.2f", c, r.ByContainer[c]))
	}
	limit := "no --max-ru: paced to what the account allows"
	if r.MaxRU > 0 {
		limit = fmt.Sprintf("--max-ru %g", r.MaxRU)
	}
	fmt.Fprintf(w, "request units this session: %.2f (%s); mean %.0f RU/s over %.1fs (%s); %.2f RU per doc\n",
		r.RequestUnits, strings.Join(parts, ", "), r.MeanRUPerSecond, r.Seconds, limit, r.RUPerDoc)
	fmt.Fprintf(w, "throttled (429): %d of %s (%.1f %%)\n", r.Throttled, words.Count(r.Requests, "request", "requests"), 100*r.ThrottledShare)
	if r.Bound != "" {
		fmt.Fprintf(w, "bounded by %s (requests in flight up to %d; median latency %.0f ms)\n", r.Bound, r.MaxInFlight, r.LatencyP50Ms)
	}
}

// Thousands prints a number with thousands separators and no decimals
// unless it has some ("1,000", "2.5").
func Thousands(v float64) string { return thousands(v) }
