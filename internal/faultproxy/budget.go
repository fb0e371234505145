package faultproxy

import (
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Budget models the throughput of a Cosmos DB account (SPEC §14): a token
// bucket of RUPerSecond request units per second that holds one second of
// them (it starts full). Every doc write, point read and query draws from
// it; metadata requests (the account, databases, containers, partition key
// ranges) are free and never throttled.
//
//   - A write costs WriteRUPerKB per started KB of its body. It is
//     answered 429 when the bucket holds less than that, else charged.
//   - A read or query costs 1 RU per started KB of its answer. It is
//     answered 429 when the bucket is empty, else charged after the
//     answer (the bucket may go into debt).
//
// A 429 carries x-ms-retry-after-ms: the time until the bucket could pay
// (1 s while the budget is zero). A charged answer carries
// x-ms-request-charge with the cost, replacing the upstream's.
type Budget struct {
	// RUPerSecond is the account's throughput; Proxy.SetBudget changes
	// it while the proxy runs.
	RUPerSecond float64
	// WriteRUPerKB is the cost of a write per started KB (default 5).
	WriteRUPerKB float64
}

// Charge is one answer of the budget: who drew, when, how much, and
// whether it was throttled (then Cost is 0).
type Charge struct {
	At        time.Time
	Consumer  string // "client" (through the proxy) or "application"
	Write     bool
	Cost      float64
	Throttled bool
}

// bucket is the token bucket of a Budget. It is safe for concurrent use.
type bucket struct {
	now func() time.Time

	mu      sync.Mutex
	rate    float64
	perKB   float64
	balance float64
	at      time.Time
	ledger  []Charge
}

func newBucket(b Budget, now func() time.Time) *bucket {
	if b.WriteRUPerKB <= 0 {
		b.WriteRUPerKB = 5
	}
	return &bucket{now: now, rate: b.RUPerSecond, perKB: b.WriteRUPerKB, balance: b.RUPerSecond, at: now()}
}

// refill adds what the rate gives since the last refill, up to one second
// of it (the caller holds mu).
func (b *bucket) refill(now time.Time) {
	if dt := now.Sub(b.at).Seconds(); dt > 0 {
		b.balance = min(b.balance+b.rate*dt, b.rate)
	}
	b.at = now
}

// isDocOp reports whether r reads, writes or queries docs.
func isDocOp(r *http.Request) bool {
	return strings.HasSuffix(r.URL.Path, "/docs") || strings.Contains(r.URL.Path, "/docs/")
}

// admit decides on a request: its up-front cost (writes; 0 for reads and
// queries, charged after) and whether it is throttled. Requests that are
// not doc operations cost nothing and pass.
func (b *bucket) admit(r *http.Request, body []byte) (cost float64, at time.Time, throttled bool) {
	if !isDocOp(r) {
		return 0, time.Time{}, false
	}
	write := IsDocWrite(r)
	need := 1e-9 // a read or query needs a bucket that is not empty
	if write {
		cost = b.perKB * math.Max(1, math.Ceil(float64(len(body))/1024))
		need = cost
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.refill(now)
	if b.balance < need {
		b.ledger = append(b.ledger, Charge{At: now, Consumer: "client", Write: write, Throttled: true})
		return cost, now, true
	}
	if write {
		b.balance -= cost
	}
	return cost, now, false
}

// wait is how long until the bucket holds need RU at its current rate.
func (b *bucket) wait(need float64) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate <= 0 {
		return time.Second
	}
	need = math.Max(need, 1)
	return time.Duration(math.Max(0, need-b.balance) / b.rate * float64(time.Second))
}

// charge records an admitted request's answer and returns its cost: the
// up-front cost of a write, or 1 RU per started KB of the answer of a
// read or query (debited now). The ledger dates it at its admission, when
// the budget let it through: a request in flight when the budget changes
// counts in the window that admitted it.
func (b *bucket) charge(r *http.Request, cost float64, admitted time.Time, answerBytes int) float64 {
	write := IsDocWrite(r)
	b.mu.Lock()
	defer b.mu.Unlock()
	if !write {
		cost = math.Max(1, math.Ceil(float64(answerBytes)/1024))
		b.refill(b.now())
		b.balance -= cost
	}
	b.ledger = append(b.ledger, Charge{At: admitted, Consumer: "client", Write: write, Cost: cost})
	return cost
}

// draw is one request of the simulated application: it takes cost RU when
// the bucket holds them and reports whether it did.
func (b *bucket) draw(cost float64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.refill(now)
	ok := b.balance >= cost
	c := Charge{At: now, Consumer: "application", Write: true, Throttled: !ok}
	if ok {
		b.balance -= cost
		c.Cost = cost
	}
	b.ledger = append(b.ledger, c)
	return ok
}

// SetBudget changes the account's throughput to ruPerSecond from now on
// (0: everything is throttled). It does nothing without Config.Budget.
func (p *Proxy) SetBudget(ruPerSecond float64) {
	if p.bucket == nil {
		return
	}
	b := p.bucket
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(b.now())
	b.rate = ruPerSecond
	b.balance = min(b.balance, ruPerSecond)
}

// Ledger returns every answer of the budget so far, in time order (of
// admission: see charge).
func (p *Proxy) Ledger() []Charge {
	if p.bucket == nil {
		return nil
	}
	p.bucket.mu.Lock()
	l := append([]Charge(nil), p.bucket.ledger...)
	p.bucket.mu.Unlock()
	slices.SortStableFunc(l, func(a, b Charge) int { return a.At.Compare(b.At) })
	return l
}

// StartApplication starts a simulated application that draws ruPerSecond
// from the budget in requests of cost RU, evenly spaced; a throttled
// request is retried after 10 ms without delaying the next one's slot
// (the application keeps its own pace). stop ends it and waits. It does
// nothing without Config.Budget.
func (p *Proxy) StartApplication(ruPerSecond, cost float64) (stop func()) {
	if p.bucket == nil || ruPerSecond <= 0 || cost <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		every := time.Duration(cost / ruPerSecond * float64(time.Second))
		next := time.Now()
		for {
			for !p.bucket.draw(cost) {
				select {
				case <-done:
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
			next = next.Add(every)
			select {
			case <-done:
				return
			case <-time.After(time.Until(next)):
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// Window is what one consumer drew in a window of time.
type Window struct {
	Start time.Time
	RU    float64
}

// Totals sums a consumer's ledger entries: its request units, attempts,
// throttled attempts, and the time from its first charged answer to its
// last.
func Totals(ledger []Charge, consumer string, writesOnly bool) (ru float64, attempts, throttled int, first, last time.Time) {
	for _, c := range ledger {
		if c.Consumer != consumer || (writesOnly && !c.Write) {
			continue
		}
		attempts++
		if c.Throttled {
			throttled++
			continue
		}
		ru += c.Cost
		if first.IsZero() {
			first = c.At
		}
		last = c.At
	}
	return ru, attempts, throttled, first, last
}

// MaxWindow returns the window of length w (sliding in steps of w/50)
// where consumer drew the most request units.
func MaxWindow(ledger []Charge, consumer string, w time.Duration) Window {
	var charged []Charge
	for _, c := range ledger {
		if c.Consumer == consumer && !c.Throttled {
			charged = append(charged, c)
		}
	}
	var best Window
	if len(charged) == 0 {
		return best
	}
	step := w / 50
	j := 0
	var sum float64
	k := 0
	for start := charged[0].At.Add(-w + step); !start.After(charged[len(charged)-1].At); start = start.Add(step) {
		end := start.Add(w)
		for ; k < len(charged) && charged[k].At.Before(end); k++ {
			sum += charged[k].Cost
		}
		for ; j < k && charged[j].At.Before(start); j++ {
			sum -= charged[j].Cost
		}
		if sum > best.RU {
			best = Window{Start: start, RU: sum}
		}
	}
	return best
}
