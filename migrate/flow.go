package migrate

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Budget is what an engine asks of the request-unit pacer to size its
// requests in flight (SPEC §14, Latency). *azure.Pacer implements it; it
// is safe for concurrent use.
type Budget interface {
	// Rate returns the request units per second allowed now, and
	// whether --max-ru caps it.
	Rate() (ruPerSecond float64, capped bool)
}

// Constants of the flow (SPEC §14, Latency).
const (
	// flowHeadroom multiplies the items in flight Little's law asks for:
	// the budget, not the window, must be what holds the writes back, and
	// the adaptive pacer only raises its rate once it is used.
	flowHeadroom = 1.5
	// flowStart is the window before anything was measured.
	flowStart = 32
	// flowMin is the smallest window, the fixed pool of earlier versions:
	// near the account a window of a few items is at the mercy of the
	// slowest of them (one stalled request of four is a quarter of the
	// rate), and idle slots cost nothing (the budget still paces the
	// writes).
	flowMin = 32
	// flowSamples is how many recent items the estimates are made of;
	// flowEvery how often (items, or time) they are made again.
	flowSamples = 256
	flowEvery   = 32
	flowPeriod  = 200 * time.Millisecond
	// flowGrowth bounds the window by what it achieves: at most
	// flowGrowth times the items in flight that the rate the recent items
	// completed at needs at the shortest of their round trips (Little's
	// law again, at the round trip without any queue). A window the
	// service answers as fast as before keeps growing, by up to
	// flowGrowth each estimate, towards what the budget asks for; one
	// that only makes a queue (the round trips grow, not the rate) stops
	// growing. Without it, in front of a service that never throttles
	// (the adaptive budget far above the rate) the window grew to
	// hundreds of docs held in memory, for no more docs/s. The round
	// trips must stay within flowGrowth of their shortest, or the window
	// shrinks towards flowMin: a queue, or a latency that rose (until the
	// shortest of the recent items says so).
	flowGrowth = 2
)

// Bound is what bounded an engine's writes.
type Bound string

// The bounds a summary names.
const (
	// BoundNone: nothing was written.
	BoundNone Bound = ""
	// BoundBudget: the account's budget (the pacer adapted to it).
	BoundBudget Bound = "budget"
	// BoundMaxRU: --max-ru.
	BoundMaxRU Bound = "max-ru"
	// BoundSource: the source (reading and deciding) did not keep the
	// writes busy.
	BoundSource Bound = "source"
	// BoundConcurrency: the --concurrency bound was below what the budget
	// and the latency asked for.
	BoundConcurrency Bound = "concurrency"
)

// FlowStats are what a Flow measured.
type FlowStats struct {
	// InFlight is the number of items being written now; Limit the window
	// now; Max its bound (--concurrency).
	InFlight int `json:"inFlight"`
	Limit    int `json:"limit"`
	Max      int `json:"max"`
	// LatencyP50 is the median time an item took over the recent ones,
	// the waits for the budget and the retries' back-offs left out.
	LatencyP50 time.Duration `json:"-"`
	// RUPerItem is the mean request charge per item over the recent ones.
	RUPerItem float64 `json:"ruPerItem"`
	// Items counts the items written so far.
	Items int64 `json:"items"`
	// Bound is what held the writes back longest so far.
	Bound Bound `json:"bound"`
}

// Flow sizes the pool of an engine (SPEC §14, Latency): it keeps as many
// items in flight as the rate the budget allows, divided by the request
// units an item costs, times the time an item takes (Little's law), with
// flowHeadroom, bounded by Max (--concurrency) and re-estimated as they
// move. With no budget (nil) the window is Max. It also tells what
// bounded the writes. A Flow may serve several engines one after the
// other (the passes of --follow). Its methods are safe for concurrent use.
type Flow struct {
	budget Budget
	now    func() time.Time

	mu        sync.Mutex
	max       int
	limit     int
	active    int
	items     int64
	latencies [flowSamples]time.Duration
	charges   [flowSamples]float64
	ends      [flowSamples]time.Time // when each sampled item finished
	n         int                    // samples taken (the ring holds min(n, flowSamples))
	fresh     int                    // samples since the last estimate
	estimated time.Time
	p50       time.Duration
	// base is the 10th percentile of the latencies: the round trip
	// without queueing, which sizes the window. Sized by the median, a
	// window in front of a saturated service would grow with the queue it
	// makes itself.
	base      time.Duration
	ruPerItem float64
	// rate is the items per second the samples completed at, and least
	// the shortest of their round trips (both 0 until estimated).
	rate  float64
	least time.Duration
	// What held the writes back: time the pool was full, by cause, and
	// the time it was writing at all.
	full    map[Bound]time.Duration
	writing time.Duration
	since   time.Time // the start of the current writing stretch
}

// NewFlow returns a flow sized by budget (nil: by Max alone); now is the
// clock (nil: time.Now).
func NewFlow(budget Budget, now func() time.Time) *Flow {
	if now == nil {
		now = time.Now
	}
	return &Flow{budget: budget, now: now, max: DefaultConcurrency, limit: min(flowStart, DefaultConcurrency), full: map[Bound]time.Duration{}}
}

// bound sets Max, the most items in flight (the engine's Concurrency).
func (f *Flow) bound(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.max = max(1, n)
	f.limit = f.target()
}

// Limit returns the window now.
func (f *Flow) Limit() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.limit
}

// start records an item entering the pool.
func (f *Flow) start() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active == 0 {
		f.since = f.now()
	}
	f.active++
}

// done records an item leaving the pool: how long it took (elapsed),
// how much of it was spent waiting for the budget or backing off
// (waited), and its request units.
func (f *Flow) done(elapsed, waited time.Duration, ru float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active--
	if f.active == 0 {
		f.writing += f.now().Sub(f.since)
	}
	f.items++
	if ru <= 0 {
		// An item that sent Cosmos DB nothing (a doc found unchanged, as
		// reverse finds the tool's own sync records coming back in the
		// change feed) took no round trip: sampled, it would shrink the
		// latency, and the window, to nothing.
		return
	}
	i, now := f.n%flowSamples, f.now()
	f.latencies[i], f.charges[i], f.ends[i] = max(0, elapsed-waited), ru, now
	f.n++
	f.fresh++
	if f.fresh >= flowEvery || now.Sub(f.estimated) >= flowPeriod {
		f.estimate(now)
	}
}

// waited records that the pool was full for d: the window held the
// writes back, because of what the window was sized by.
func (f *Flow) waited(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.full[f.cause()] += d
}

// cause is what sizes the window now (the caller holds mu).
func (f *Flow) cause() Bound {
	if f.budget == nil || f.limit >= f.max {
		return BoundConcurrency
	}
	if _, capped := f.budget.Rate(); capped {
		return BoundMaxRU
	}
	return BoundBudget
}

// estimate makes the estimates again from the samples (the caller holds
// mu).
func (f *Flow) estimate(now time.Time) {
	k := min(f.n, flowSamples)
	lat := slices.Clone(f.latencies[:k])
	slices.Sort(lat)
	f.p50, f.base = lat[k/2], lat[k/10]
	var ru float64
	for _, c := range f.charges[:k] {
		ru += c
	}
	f.ruPerItem = ru / float64(k)
	f.least, f.rate = lat[0], 0
	if k > 1 {
		newest, oldest := f.ends[(f.n-1)%flowSamples], f.ends[(f.n-k)%flowSamples]
		if d := newest.Sub(oldest).Seconds(); d > 0 {
			f.rate = float64(k-1) / d
		}
	}
	f.fresh, f.estimated = 0, now
	f.limit = f.target()
}

// target is the window Little's law asks for (the caller holds mu).
func (f *Flow) target() int {
	if f.budget == nil {
		return f.max
	}
	rate, _ := f.budget.Rate()
	if f.n == 0 || rate <= 0 {
		return min(flowStart, f.max)
	}
	if f.ruPerItem <= 0 {
		return f.max // items that cost nothing: only the latency bounds them
	}
	want := flowHeadroom * rate / f.ruPerItem * f.base.Seconds()
	if f.rate > 0 {
		want = min(want, flowGrowth*f.rate*f.least.Seconds())
	}
	if want >= float64(f.max) || math.IsNaN(want) {
		return f.max
	}
	return min(f.max, max(flowMin, int(math.Ceil(want))))
}

// Stats returns what the flow measured so far.
func (f *Flow) Stats() FlowStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := FlowStats{InFlight: f.active, Limit: f.limit, Max: f.max, LatencyP50: f.p50, RUPerItem: f.ruPerItem, Items: f.items}
	writing := f.writing
	if f.active > 0 {
		writing += f.now().Sub(f.since)
	}
	if f.items == 0 {
		return s
	}
	held := map[Bound]time.Duration{}
	var full time.Duration
	for b, d := range f.full {
		held[b] = d
		full += d
	}
	// The pool was not full for the rest of the writing time: the source
	// did not keep it busy.
	held[BoundSource] = max(0, writing-full)
	best := BoundNone
	for _, b := range []Bound{BoundBudget, BoundMaxRU, BoundConcurrency, BoundSource} {
		if held[b] > held[best] {
			best = b
		}
	}
	s.Bound = best
	return s
}
