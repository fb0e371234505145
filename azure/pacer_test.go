package azure

import (
	"container/heap"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// The simulation below is the account the fault proxy models (SPEC §14):
// a token bucket of budget RU/s holding one second of it, which answers a
// request that would overdraw it with 429 and the wait until it could
// pay. Workers write docs through a Pacer as CosmosDocs does: reserve,
// send, settle, and after a 429 wait what the account asked before trying
// the same doc again. Time is simulated, so the figures are exact and the
// test takes milliseconds.

type simAccount struct {
	budget  func(t float64) float64 // RU/s at t
	balance float64
	at      float64
	// app draws appCost RU every appEvery seconds from the same bucket
	// (a simulated application); appAttempts/appThrottled count its
	// attempts and 429s.
	appCost, appEvery         float64
	appNext                   float64
	appAttempts, appThrottled int
}

func (a *simAccount) advance(t float64) {
	for a.appCost > 0 && a.appNext <= t {
		a.refill(a.appNext)
		a.appAttempts++
		if a.balance >= a.appCost {
			a.balance -= a.appCost
			a.appNext += a.appEvery
		} else {
			a.appThrottled++
			a.appNext += 0.01 // the app's SDK retries after a short wait
		}
	}
	a.refill(t)
}

func (a *simAccount) refill(t float64) {
	if t > a.at {
		b := a.budget(a.at)
		a.balance = min(a.balance+b*(t-a.at), b)
		a.at = t
	}
}

// request is one attempt at t costing cost: accepted, or the wait a 429
// asks for.
func (a *simAccount) request(t, cost float64) (ok bool, retryAfter float64) {
	a.advance(t)
	if a.balance >= cost {
		a.balance -= cost
		return true, 0
	}
	b := a.budget(t)
	if b <= 0 {
		return false, 1
	}
	return false, (cost - a.balance) / b
}

type simEvent struct {
	t      float64
	worker int
	answer bool
	ok     bool
	wait   float64
	est    float64
}

type simQueue []simEvent

func (q simQueue) Len() int           { return len(q) }
func (q simQueue) Less(i, j int) bool { return q[i].t < q[j].t }
func (q simQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)        { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any          { old := *q; e := old[len(old)-1]; *q = old[:len(old)-1]; return e }
func simTime(base time.Time, t float64) time.Time {
	return base.Add(time.Duration(t * float64(time.Second)))
}

type simResult struct {
	accepted []float64 // per 100 ms bucket: RU accepted from the workers
	attempts,
	throttled int
	acct *simAccount
}

// simulate runs workers writing docs of cost RU through p against acct for
// seconds.
func simulate(p *Pacer, acct *simAccount, workers int, cost, latency, seconds float64) simResult {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	res := simResult{accepted: make([]float64, int(seconds*10)+1), acct: acct}
	q := &simQueue{}
	for w := range workers {
		heap.Push(q, simEvent{t: float64(w) * 0.0001, worker: w})
	}
	for q.Len() > 0 {
		e := heap.Pop(q).(simEvent)
		if e.t >= seconds {
			continue
		}
		now := simTime(base, e.t)
		if e.answer {
			charge := 0.0
			if e.ok {
				charge = cost
			}
			p.settle(now, e.est, charge, !e.ok, time.Duration(e.wait*float64(time.Second)), true, "c")
			next := e.t
			if !e.ok {
				next += e.wait
			}
			heap.Push(q, simEvent{t: next, worker: e.worker})
			continue
		}
		est := p.estimate("write", int64(cost/5*1024))
		if d := p.reserve(now, est); d > 0 {
			heap.Push(q, simEvent{t: e.t + d.Seconds(), worker: e.worker})
			continue
		}
		res.attempts++
		ok, wait := acct.request(e.t, cost)
		if ok {
			res.accepted[int(e.t*10)] += cost
		} else {
			res.throttled++
		}
		heap.Push(q, simEvent{t: e.t + latency, worker: e.worker, answer: true, ok: ok, wait: wait, est: est})
	}
	return res
}

func (r simResult) mean(from, to float64) float64 {
	var s float64
	for i := int(from * 10); i < int(to*10) && i < len(r.accepted); i++ {
		s += r.accepted[i]
	}
	return s / (to - from)
}

// maxWindow is the largest consumption over any window of w seconds.
func (r simResult) maxWindow(w float64) float64 {
	n := int(w * 10)
	var best, s float64
	for i, v := range r.accepted {
		s += v
		if i >= n {
			s -= r.accepted[i-n]
		}
		best = max(best, s)
	}
	return best
}

func constant(b float64) func(float64) float64 { return func(float64) float64 { return b } }

func simPacer(maxRU float64) *Pacer { return NewPacer(PacerOptions{MaxRU: maxRU}) }

// With a cap below what the account and the application leave free, the
// command stays under 1.1 × the cap in every 5-second window, uses at
// least 0.85 of it, and the application sees no 429.
func TestPacerKeepsTheCap(t *testing.T) {
	for _, cost := range []float64{5, 15, 40} {
		t.Run(fmt.Sprintf("%g RU per doc", cost), func(t *testing.T) {
			acct := &simAccount{budget: constant(2000), balance: 2000, appCost: 10, appEvery: 0.05}
			r := simulate(simPacer(1000), acct, 32, cost, 0.005, 60)
			if m := r.mean(0, 60); m < 850 || m > 1000*1.1 {
				t.Errorf("mean %.0f RU/s, want within [850, 1100]", m)
			}
			if w := r.maxWindow(5); w > 1.1*1000*5 {
				t.Errorf("a 5-second window holds %.0f RU, want ≤ %.0f", w, 1.1*1000*5)
			}
			if acct.appThrottled > acct.appAttempts/100 {
				t.Errorf("the application got %d 429s in %d attempts", acct.appThrottled, acct.appAttempts)
			}
			if r.throttled > 0 {
				t.Errorf("the command got %d 429s", r.throttled)
			}
		})
	}
}

// Without a cap the pacer finds the account's limit: at least 0.85 of it
// over the run, with at most 10 % of the attempts throttled.
func TestPacerAdaptsToTheAccount(t *testing.T) {
	for _, c := range []struct {
		budget, cost float64
		workers      int
		cap          float64
	}{
		{2000, 15, 32, 0}, {2000, 5, 32, 0}, {400, 10, 8, 0}, {10000, 15, 64, 0}, {2000, 60, 4, 0},
		{2000, 15, 32, 3000}, // a cap above what the account can take
	} {
		t.Run(fmt.Sprintf("%g RU/s, %g RU per doc, %d workers, cap %g", c.budget, c.cost, c.workers, c.cap), func(t *testing.T) {
			acct := &simAccount{budget: constant(c.budget), balance: c.budget}
			r := simulate(simPacer(c.cap), acct, c.workers, c.cost, 0.005, 60)
			m := r.mean(0, 60)
			share := float64(r.throttled) / float64(r.attempts)
			t.Logf("mean %.0f RU/s (%.2f of the budget), %d of %d attempts throttled (%.1f %%)", m, m/c.budget, r.throttled, r.attempts, 100*share)
			if m < 0.85*c.budget {
				t.Errorf("mean %.0f RU/s, want ≥ %.0f", m, 0.85*c.budget)
			}
			if share > 0.10 {
				t.Errorf("%.1f %% of the attempts throttled, want ≤ 10 %%", 100*share)
			}
		})
	}
}

// A command reaches the account's rate in about a second: before any
// 429 the rate doubles every pacerRampStep while it is used. From the
// second second on it uses at least 0.85 of the budget, and the ramp's
// overshoot costs few 429s.
func TestPacerRampsUpInASecond(t *testing.T) {
	for _, budget := range []float64{2000, 10000, 50000} {
		t.Run(fmt.Sprintf("%g RU/s", budget), func(t *testing.T) {
			acct := &simAccount{budget: constant(budget), balance: budget}
			r := simulate(simPacer(0), acct, 256, 15, 0.005, 10)
			share := float64(r.throttled) / float64(r.attempts)
			t.Logf("first second %.0f RU/s, then %.0f RU/s; %.1f %% throttled", r.mean(0, 1), r.mean(1, 10), 100*share)
			if m := r.mean(1, 10); m < 0.85*budget {
				t.Errorf("from the second second: %.0f RU/s, want ≥ %.0f", m, 0.85*budget)
			}
			if m := r.mean(1, 2); m < 0.85*budget {
				t.Errorf("in the second second: %.0f RU/s, want ≥ %.0f", m, 0.85*budget)
			}
			if share > 0.10 {
				t.Errorf("%.1f %% of the attempts throttled, want ≤ 10 %%", 100*share)
			}
		})
	}
}

// When the account's budget drops to zero for a minute the pacer waits it
// out and then finds the budget again.
func TestPacerRecoversAfterAnOutage(t *testing.T) {
	acct := &simAccount{budget: func(t float64) float64 {
		if t >= 20 && t < 80 {
			return 0
		}
		return 2000
	}, balance: 2000}
	r := simulate(simPacer(0), acct, 32, 15, 0.005, 120)
	if m := r.mean(20.5, 80); m > 0 {
		t.Errorf("%.0f RU/s accepted during the outage", m)
	}
	after := r.mean(90, 120)
	t.Logf("before %.0f RU/s, after %.0f RU/s; %d of %d attempts throttled", r.mean(0, 20), after, r.throttled, r.attempts)
	if after < 0.85*2000 {
		t.Errorf("after the outage: %.0f RU/s, want ≥ 1700", after)
	}
}

func TestRequestClassAndContainer(t *testing.T) {
	cases := []struct {
		method, path string
		query        bool
		class        string
		write        bool
		container    string
	}{
		{"POST", "/dbs/bifrost/colls/executions/docs", false, "write", true, "executions"},
		{"POST", "/dbs/bifrost/colls/executions/docs", true, "query", false, "executions"},
		{"PUT", "/dbs/bifrost/colls/entities/docs/user-a", false, "write", true, "entities"},
		{"DELETE", "/dbs/bifrost/colls/entities/docs/user-a", false, "write", true, "entities"},
		{"GET", "/dbs/bifrost/colls/entities/docs/user-a", false, "read", false, "entities"},
		{"GET", "/dbs/bifrost/colls/entities", false, "meta", false, "entities"},
		{"GET", "/", false, "meta", false, ""},
	}
	for _, c := range cases {
		r, _ := http.NewRequestWithContext(context.Background(), c.method, "http://h"+c.path, nil)
		if c.query {
			r.Header.Set("x-ms-documentdb-isquery", "True")
		}
		class, write := requestClass(r)
		if class != c.class || write != c.write || containerOf(r.URL.Path) != c.container {
			t.Errorf("%s %s: (%s, %v, %q), want (%s, %v, %q)", c.method, c.path, class, write, containerOf(r.URL.Path), c.class, c.write, c.container)
		}
	}
}
