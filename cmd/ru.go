package cmd

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/words"
	"github.com/bifrost/bifrost-migrate/migrate"
)

// ruFlags is --max-ru, the request-unit budget of the commands that send
// Cosmos DB requests in volume (run, replay, verify; SPEC §14).
type ruFlags struct {
	// MaxRU is the cap in RU/s; 0 means none: the command adapts to what
	// the account allows.
	MaxRU float64
	fs    *pflag.FlagSet

	// p and f are the command's pacer and flow, made by pacer().
	p *azure.Pacer
	f *migrate.Flow
}

func (r *ruFlags) bind(fl *pflag.FlagSet) {
	r.fs = fl
	fl.Float64Var(&r.MaxRU, "max-ru", 0, "use at most `N` Cosmos DB request units per second (default: find out what the account allows and keep to it)")
}

// validate rejects a --max-ru that is given but not positive.
func (r *ruFlags) validate() error {
	if r.fs != nil && r.fs.Changed("max-ru") && !(r.MaxRU > 0 && !math.IsInf(r.MaxRU, 1)) {
		return badValue("--max-ru", r.MaxRU, "a positive number of request units per second")
	}
	return nil
}

// pacer returns the pacer every Cosmos DB request of the command goes
// through, and makes the flow that sizes the command's requests in flight
// from the rate it allows (flow).
func (r *ruFlags) pacer() *azure.Pacer {
	r.p = azure.NewPacer(azure.PacerOptions{MaxRU: r.MaxRU})
	r.f = migrate.NewFlow(r.p, nil)
	return r.p
}

// flow is the command's flow (SPEC §14, Latency): requests in flight by
// the pacer's rate × the latency it observes, bounded by --concurrency.
func (r *ruFlags) flow() *migrate.Flow { return r.f }

// recent is what the progress shows of the pacer and the flow: the last
// 5 seconds' RU/s and 429 share, the requests in flight and their median
// latency.
func (r *ruFlags) recent() ruRecent {
	return func() liveFigures {
		perSecond, share := r.p.Recent(5 * time.Second)
		fs := r.f.Stats()
		return liveFigures{ruPerSecond: perSecond, throttledShare: share, inFlight: fs.InFlight, latencyP50: fs.LatencyP50}
	}
}

// report is the request-unit part of the summary, docs the docs written
// (0: none counted), with what bounded the writes.
func (r *ruFlags) report(docs int64) ruReport {
	rep := newRUReport(r.p, docs)
	fs := r.f.Stats()
	rep.Bound, rep.MaxInFlight, rep.LatencyP50Ms = boundText(fs.Bound), fs.Max, float64(fs.LatencyP50.Microseconds())/1000
	return rep
}

// boundText is what a summary says bounded the writes.
func boundText(b migrate.Bound) string {
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

// ruReport is the request-unit part of a command's summary (SPEC §14): what
// this invocation consumed in Cosmos DB, as the service reported it.
type ruReport struct {
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

func newRUReport(p *azure.Pacer, docs int64) ruReport {
	s := p.Stats()
	r := ruReport{
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
	return r
}

// writeText prints the report as two lines.
func (r ruReport) writeText(w io.Writer) {
	var parts []string
	for _, c := range slices.Sorted(func(yield func(string) bool) {
		for c := range r.ByContainer {
			if !yield(c) {
				return
			}
		}
	}) {
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

// ruDuration says how long estimated RU take at maxRU RU/s ("≈ 12 min at
// 1,000 RU/s"), or how to find out when there is no cap.
func ruDuration(estimated int64, maxRU float64) string {
	if maxRU <= 0 {
		return "pass --max-ru N to see how long that takes at N RU/s"
	}
	d := time.Duration(float64(estimated) / maxRU * float64(time.Second))
	return fmt.Sprintf("≈ %s at %s RU/s", roughDuration(d), thousands(maxRU))
}

// roughDuration rounds d for people: seconds under 2 minutes, minutes
// under 2 hours, else hours and minutes.
func roughDuration(d time.Duration) string {
	switch {
	case d < 2*time.Minute:
		return fmt.Sprintf("%d s", int(math.Ceil(d.Seconds())))
	case d < 2*time.Hour:
		return fmt.Sprintf("%d min", int(math.Round(d.Minutes())))
	}
	h := int(d.Hours())
	return fmt.Sprintf("%d h %02d min", h, int(math.Round(d.Minutes()))-60*h)
}

// thousands prints a number with thousands separators and no decimals
// unless it has some.
func thousands(v float64) string {
	if v != math.Trunc(v) {
		return fmt.Sprintf("%g", v)
	}
	return words.Thousands(int64(v))
}

// prefixed writes each line with a prefix ("verify: "); lines must come
// whole, one per Write, as fmt.Fprintf sends them.
type prefixed struct {
	w      io.Writer
	prefix string
}

func (p prefixed) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix); err != nil {
		return 0, err
	}
	return p.w.Write(b)
}
