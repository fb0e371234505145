package migrate

import (
	"testing"
	"time"
)

// fixedBudget is a Budget of a fixed rate.
type fixedBudget struct {
	rate   float64
	capped bool
}

func (b fixedBudget) Rate() (float64, bool) { return b.rate, b.capped }

// fakeClock is a clock tests move by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock           { return &fakeClock{t: time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)} }
func itemsDone(f *Flow, n int, elapsed, waited time.Duration, ru float64) {
	for range n {
		f.start()
		f.done(elapsed, waited, ru)
	}
}

// TestFlowLittlesLaw: the window is the budget's rate over the charge per
// item, times the latency per item (the budget's waits left out), times
// the headroom; bounded by Max and by flowMin; re-estimated as the
// latency moves.
func TestFlowLittlesLaw(t *testing.T) {
	for _, tc := range []struct {
		name            string
		rate            float64
		max             int
		elapsed, waited time.Duration
		ru              float64
		want            int
	}{
		// 10,000 RU/s at 10 RU an item is 1,000 items/s; at 80 ms that is
		// 80 in flight, 1.5 times that with the headroom.
		{"80 ms", 10000, 1024, 80 * time.Millisecond, 0, 10, 120},
		{"150 ms", 10000, 1024, 150 * time.Millisecond, 0, 10, 225},
		{"waits for the budget are not latency", 10000, 1024, 230 * time.Millisecond, 150 * time.Millisecond, 10, 120},
		{"--concurrency bounds it", 10000, 100, 80 * time.Millisecond, 0, 10, 100},
		{"loopback: the floor", 10000, 1024, 100 * time.Microsecond, 0, 10, flowMin},
		{"loopback, --concurrency below the floor", 10000, 8, 100 * time.Microsecond, 0, 10, 8},
		{"items that sent nothing are not sampled: the start", 10000, 512, 80 * time.Millisecond, 0, 0, flowStart},
	} {
		clock := newFakeClock()
		f := NewFlow(fixedBudget{rate: tc.rate}, clock.now)
		f.bound(tc.max)
		if got := f.Limit(); got != min(flowStart, tc.max) {
			t.Errorf("%s: window before any item %d, want %d", tc.name, got, min(flowStart, tc.max))
		}
		itemsDone(f, flowSamples, tc.elapsed, tc.waited, tc.ru)
		if got := f.Limit(); got != tc.want {
			t.Errorf("%s: window %d, want %d", tc.name, got, tc.want)
		}
	}
	// The latency moves: the window follows once the samples have.
	clock := newFakeClock()
	f := NewFlow(fixedBudget{rate: 10000}, clock.now)
	f.bound(1024)
	itemsDone(f, flowSamples, 40*time.Millisecond, 0, 10)
	at40 := f.Limit()
	itemsDone(f, flowSamples+flowEvery, 150*time.Millisecond, 0, 10) // every sample, and one estimate after
	if at40 != 60 || f.Limit() != 225 {
		t.Errorf("window at 40 ms %d (want 60), then at 150 ms %d (want 225)", at40, f.Limit())
	}
	// Queueing at a saturated service lengthens most round trips; the
	// window stays sized by the round trip without it (the 10th
	// percentile), or it would grow with the queue it makes.
	f = NewFlow(fixedBudget{rate: 10000}, clock.now)
	f.bound(1024)
	itemsDone(f, flowSamples/5, 80*time.Millisecond, 0, 10)
	itemsDone(f, flowSamples-flowSamples/5, 800*time.Millisecond, 0, 10)
	if f.Limit() != 120 || f.Stats().LatencyP50 != 800*time.Millisecond {
		t.Errorf("queued: window %d (want 120), p50 %s (want 800ms)", f.Limit(), f.Stats().LatencyP50)
	}
	// Items that sent Cosmos DB nothing (docs found unchanged, as half of
	// reverse's feed is: its own sync records) do not shrink the window.
	f = NewFlow(fixedBudget{rate: 10000}, clock.now)
	f.bound(1024)
	for range flowSamples {
		itemsDone(f, 1, 80*time.Millisecond, 0, 10)
		itemsDone(f, 3, 100*time.Microsecond, 0, 0)
	}
	if f.Limit() != 120 || f.Stats().Items != 4*flowSamples {
		t.Errorf("with unchanged docs: window %d (want 120), %d items (want %d)", f.Limit(), f.Stats().Items, 4*flowSamples)
	}
	// No budget: the window is Max.
	f = NewFlow(nil, clock.now)
	f.bound(7)
	if f.Limit() != 7 {
		t.Errorf("no budget: window %d, want 7", f.Limit())
	}
}

// TestFlowGrowsWithTheRate: the window grows only while the items it
// completes grow with it (flowGrowth). In front of a service that never
// throttles, whose budget rises with use, and that answers a bigger
// window with a longer queue, not more items (the local stand-in), it
// stays at the floor instead of the budget's hundreds; far from an
// account it still reaches what the budget asks for, in a few estimates.
func TestFlowGrowsWithTheRate(t *testing.T) {
	// Items complete one after the other as a window of the flow's size
	// allows at latency lat, or at most perSecond a second.
	run := func(f *Flow, clock *fakeClock, n int, lat time.Duration, perSecond float64, ru float64) {
		for range n {
			gap := lat / time.Duration(f.Limit())
			if perSecond > 0 {
				gap = max(gap, time.Duration(float64(time.Second)/perSecond))
			}
			clock.add(gap)
			itemsDone(f, 1, lat, 0, ru)
		}
	}
	clock := newFakeClock()
	f := NewFlow(fixedBudget{rate: 1e6}, clock.now) // never throttled: the budget far above the rate
	f.bound(1024)
	run(f, clock, 4*flowSamples, 2*time.Millisecond, 500, 1)
	if got := f.Limit(); got != flowMin {
		t.Errorf("a saturated service at 500 items/s, 2 ms: window %d, want the floor %d (the budget alone asks for %d)", got, flowMin, 1024)
	}

	clock = newFakeClock()
	f = NewFlow(fixedBudget{rate: 10000}, clock.now)
	f.bound(1024)
	run(f, clock, 12*flowEvery, 80*time.Millisecond, 0, 10) // 12 estimates
	if got := f.Limit(); got != 120 {
		t.Errorf("80 ms, 10,000 RU/s, 10 RU an item: window %d after 12 estimates, want 120", got)
	}
}

// TestFlowBound: what held the writes back longest is named: the pool
// full under a window the budget sized (budget, or max-ru when capped),
// full at Max (concurrency), or not full (source).
func TestFlowBound(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget Budget
		max    int
		full   time.Duration // the pool full, of 10 s writing
		want   Bound
	}{
		{"the account", fixedBudget{rate: 10000}, 1024, 8 * time.Second, BoundBudget},
		{"--max-ru", fixedBudget{rate: 1000, capped: true}, 1024, 8 * time.Second, BoundMaxRU},
		{"--concurrency", fixedBudget{rate: 10000}, 8, 8 * time.Second, BoundConcurrency},
		{"the source", fixedBudget{rate: 10000}, 1024, 2 * time.Second, BoundSource},
	} {
		clock := newFakeClock()
		f := NewFlow(tc.budget, clock.now)
		f.bound(tc.max)
		itemsDone(f, flowSamples, 80*time.Millisecond, 0, 10)
		f.start()
		f.waited(tc.full)
		clock.add(10 * time.Second)
		f.done(80*time.Millisecond, 0, 10)
		if got := f.Stats().Bound; got != tc.want {
			t.Errorf("%s: bound %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := NewFlow(nil, nil).Stats().Bound; got != BoundNone {
		t.Errorf("nothing written: bound %q", got)
	}
}
