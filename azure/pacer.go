package azure

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/bifrost/bifrost-migrate/store"
)

// Pacer constants (SPEC §14). They were chosen with the simulation in
// pacer_test.go (a token bucket of B RU/s holding one second, as the fault
// proxy models an account) and the integration tests against the proxy.
const (
	// pacerBurst is how much unused budget the pacer lets accumulate, in
	// seconds of its rate: small, so that no 5-second window can exceed
	// the cap by more than a few percent.
	pacerBurst = 0.1
	// pacerStartRate is the adaptive pacer's rate before it knows the
	// account (RU/s); it doubles every pacerRampStep the demand uses it
	// fully (slow start) until the first 429, so that a command reaches
	// the account's rate in about a second: 500 RU/s becomes 64,000 in
	// 0.7 s.
	pacerStartRate = 500
	// pacerRampStep is how often the rate may double before the first
	// 429; after it, the rate grows at most once a second.
	pacerRampStep = 100 * time.Millisecond
	// pacerMinRate is the floor of the adaptive rate (RU/s).
	pacerMinRate = 10
	// pacerDecrease multiplies the rate on a 429 (at most once per
	// pacerDecreaseGap): multiplicative decrease.
	pacerDecrease = 0.8
	// pacerDecreaseGap keeps a burst of 429s, answered to requests that
	// were in flight together, from counting as many decreases.
	pacerDecreaseGap = 500 * time.Millisecond
	// pacerIncrease is the additive increase per second without a 429,
	// as a share of the rate reached before the last throttling episode.
	pacerIncrease = 0.04
	// pacerEpisodeShare is the share of what the account accepted that
	// the rate falls to when a throttling episode starts.
	pacerEpisodeShare = 0.95
	// pacerEpisode is how long after a 429 a further 429 belongs to the
	// same throttling episode (the account is still saturated).
	pacerEpisode = 5 * time.Second
	// pacerBusy is the share of its rate the demand must have used over
	// the last second for the rate to grow: a rate the command does not
	// use proves nothing about the account.
	pacerBusy = 0.8
	// statBucket and statBuckets make the sliding window of the RU/s
	// shown in progress.
	statBucket  = 100 * time.Millisecond
	statBuckets = 50
)

// Pacer shares a request-unit budget among every Cosmos DB request of one
// command (SPEC §14). Each request reserves what it is expected to cost
// before it is sent and settles what the service charged
// (x-ms-request-charge) after, so that the command's consumption follows
// a token bucket:
//
//   - with a cap (--max-ru N), at most N RU/s, with a burst of
//     pacerBurst seconds, so that no 5-second window exceeds 1.1 × N;
//   - without, at a rate it adapts to the account: it starts at
//     pacerStartRate and doubles every pacerRampStep while the command
//     uses it fully, and
//     from the first 429 on it decreases multiplicatively on 429 and
//     increases additively otherwise (AIMD), up to the cap if any.
//
// A 429 also holds every request back for the wait the service asked for.
// A Pacer counts the request units, requests and 429s per container. Its
// methods are safe for concurrent use; the zero value is not usable (see
// NewPacer).
type Pacer struct {
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error

	mu        sync.Mutex
	max       float64 // the cap; 0: none
	rate      float64 // RU/s allowed now
	threshold float64 // slow start ends here (the last episode's rate); 0: not yet throttled
	balance   float64 // RU available now; negative is debt
	refilled  time.Time
	holdUntil time.Time // after a 429, nobody sends before this
	decreased time.Time // last multiplicative decrease
	throttled time.Time // last 429
	grew      time.Time // last increase (once per second, or pacerRampStep before any 429)
	used      float64   // RU reserved since grew: was the rate used?
	estimates map[string]float64

	stats PacerStats
	start time.Time
	win   [statBuckets]statSlot
}

type statSlot struct {
	at       int64 // bucket number (time / statBucket)
	ru       float64
	requests int64
	throttle int64
}

// PacerStats are what a Pacer counted. Request units are what the service
// reported on each answer (throttled and failed attempts included).
type PacerStats struct {
	// RequestUnits is the sum of the request charges of every attempt.
	RequestUnits float64 `json:"requestUnits"`
	// ByContainer splits RequestUnits by container ("" for requests on
	// no container: the account, databases).
	ByContainer map[string]float64 `json:"byContainer"`
	// Requests counts the attempts, Throttled those answered 429.
	Requests  int64 `json:"requests"`
	Throttled int64 `json:"throttled"`
	// Writes counts the attempts that write a doc, WritesThrottled those
	// answered 429.
	Writes          int64 `json:"writes"`
	WritesThrottled int64 `json:"writesThrottled"`
	// Seconds is the time from the first request to the last answer.
	Seconds float64 `json:"seconds"`
	// Cap is --max-ru (0: none); Rate is the rate the pacer allows at the
	// end (RU/s; 0 while it is not limiting).
	Cap  float64 `json:"cap"`
	Rate float64 `json:"rate"`
}

// MeanRUPerSecond is RequestUnits over Seconds (0 before any answer).
func (s PacerStats) MeanRUPerSecond() float64 {
	if s.Seconds <= 0 {
		return 0
	}
	return s.RequestUnits / s.Seconds
}

// ThrottledShare is the share of the attempts answered 429.
func (s PacerStats) ThrottledShare() float64 {
	if s.Requests == 0 {
		return 0
	}
	return float64(s.Throttled) / float64(s.Requests)
}

// PacerOptions configure a Pacer.
type PacerOptions struct {
	// MaxRU is the cap in RU/s (--max-ru); 0 means none: the pacer adapts
	// to the account.
	MaxRU float64
	// Now and Sleep are the clock (tests); nil uses the real ones.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// NewPacer returns a pacer with no request sent yet.
func NewPacer(o PacerOptions) *Pacer {
	p := &Pacer{now: o.Now, sleep: o.Sleep, max: o.MaxRU, estimates: map[string]float64{}}
	if p.now == nil {
		p.now = time.Now
	}
	if p.sleep == nil {
		p.sleep = store.Sleep
	}
	p.rate = pacerStartRate
	if p.max > 0 {
		p.rate = p.max
		p.threshold = p.max // no slow start: the operator gave the rate
	}
	p.stats.ByContainer = map[string]float64{}
	return p
}

// Wait blocks until a request expected to cost estimate RU may be sent,
// and reserves it; the caller must call Settle once the answer is in. It
// returns ctx's error when ctx ends first.
func (p *Pacer) Wait(ctx context.Context, estimate float64) error {
	for {
		d := p.reserve(p.now(), estimate)
		if d <= 0 {
			return nil
		}
		store.MeterOf(ctx).Wait(d) // waiting for the budget, not latency
		if err := p.sleep(ctx, d); err != nil {
			return err
		}
	}
}

// reserve reserves estimate RU at now and returns 0, or returns how long
// to wait before asking again.
func (p *Pacer) reserve(now time.Time, estimate float64) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.start.IsZero() {
		p.start, p.refilled, p.grew = now, now, now
	}
	if now.Before(p.holdUntil) {
		return p.holdUntil.Sub(now)
	}
	p.refill(now)
	if p.balance < 0 {
		return max(time.Millisecond, time.Duration(-p.balance/p.rate*float64(time.Second)))
	}
	p.balance -= estimate
	p.used += estimate
	return 0
}

// refill adds what the rate gives since the last refill, up to the burst,
// and grows the rate when the demand used it: every pacerRampStep before
// the first 429, then once a second (the caller holds mu).
func (p *Pacer) refill(now time.Time) {
	if dt := now.Sub(p.refilled).Seconds(); dt > 0 {
		p.balance = min(p.balance+p.rate*dt, p.rate*pacerBurst)
		p.refilled = now
	}
	step := time.Second
	if p.threshold == 0 && p.throttled.IsZero() {
		step = pacerRampStep // never throttled: ramp up fast
	}
	dt := now.Sub(p.grew).Seconds()
	if dt < step.Seconds() {
		return
	}
	busy := p.used >= pacerBusy*p.rate*dt
	p.grew, p.used = now, 0
	if !busy || now.Sub(p.throttled) < time.Second || (p.max > 0 && p.rate >= p.max) {
		return
	}
	switch {
	case p.threshold == 0 || p.rate < p.threshold:
		p.rate *= 2 // slow start: towards the last known good rate
		if p.threshold > 0 {
			p.rate = min(p.rate, p.threshold)
		}
	default:
		p.rate += pacerIncrease * p.threshold * dt
	}
	if p.max > 0 {
		p.rate = min(p.rate, p.max)
	}
}

// Settle records the answer to a request that reserved estimate RU: the
// charge the service reported, and whether it was a 429 with the wait it
// asked for. write says whether the request wrote a doc; container is the
// container it was about ("" for none).
func (p *Pacer) Settle(estimate, charge float64, throttled bool, retryAfter time.Duration, write bool, container string) {
	p.settle(p.now(), estimate, charge, throttled, retryAfter, write, container)
}

func (p *Pacer) settle(now time.Time, estimate, charge float64, throttled bool, retryAfter time.Duration, write bool, container string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !throttled {
		// A throttled attempt keeps its reservation: it took its turn, and
		// giving it back would let the retries hammer a saturated account.
		p.balance -= charge - estimate
		p.used += charge - estimate
	}
	p.stats.RequestUnits += charge
	p.stats.ByContainer[container] += charge
	p.stats.Requests++
	if write {
		p.stats.Writes++
	}
	slot := p.slot(now)
	slot.ru += charge
	slot.requests++
	if !p.start.IsZero() {
		p.stats.Seconds = now.Sub(p.start).Seconds()
	}
	if !throttled {
		return
	}
	p.stats.Throttled++
	slot.throttle++
	if write {
		p.stats.WritesThrottled++
	}
	if retryAfter <= 0 {
		retryAfter = 10 * time.Millisecond
	}
	if until := now.Add(retryAfter); until.After(p.holdUntil) {
		p.holdUntil = until
	}
	if now.Sub(p.decreased) >= pacerDecreaseGap {
		if now.Sub(p.throttled) > pacerEpisode || p.threshold == 0 {
			// A new episode: the account is saturated, so what it
			// accepted lately is what it can take; aim just below.
			if got := p.accepted(now); got > 0 && got < p.rate {
				p.rate = got
			}
			p.rate = max(pacerMinRate, p.rate*pacerEpisodeShare)
			p.threshold = p.rate
		} else {
			// Still saturated: recover no further than this rate, unless
			// the account hardly accepts anything (an outage, or another
			// client taking it all), which says nothing of its size.
			if p.accepted(now) >= 0.5*p.rate {
				p.threshold = min(p.threshold, p.rate)
			}
			p.rate = max(pacerMinRate, p.rate*pacerDecrease)
		}
		p.balance = min(p.balance, 0)
		p.decreased = now
	}
	p.throttled = now
	p.grew, p.used = now, 0
}

// accepted is the RU/s the account charged over the last two seconds (or
// since the first request, if sooner, but at least one second); the
// caller holds mu.
func (p *Pacer) accepted(now time.Time) float64 {
	span := min(2*time.Second, max(time.Second, now.Sub(p.start)))
	n := now.UnixNano() / int64(statBucket)
	var ru float64
	for i := range int64(span / statBucket) {
		if s := p.win[(n-i)%statBuckets]; s.at == n-i {
			ru += s.ru
		}
	}
	return ru / span.Seconds()
}

// slot returns the statistics slot of now (the caller holds mu).
func (p *Pacer) slot(now time.Time) *statSlot {
	n := now.UnixNano() / int64(statBucket)
	s := &p.win[n%statBuckets]
	if s.at != n {
		*s = statSlot{at: n}
	}
	return s
}

// Rate returns the request units per second the pacer allows now (its
// cap under --max-ru, else the rate it adapted to the account), and
// whether a cap sets it: what an engine sizes its requests in flight
// with (migrate.Budget).
func (p *Pacer) Rate() (ruPerSecond float64, capped bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rate, p.max > 0 && p.rate >= p.max
}

// Stats returns what the pacer counted so far.
func (p *Pacer) Stats() PacerStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.ByContainer = make(map[string]float64, len(p.stats.ByContainer))
	for k, v := range p.stats.ByContainer {
		s.ByContainer[k] = v
	}
	s.Cap = p.max
	if p.threshold > 0 || p.max > 0 {
		s.Rate = p.rate
	}
	return s
}

// Recent returns the RU/s and the share of attempts answered 429 over the
// last window seconds (at most 5), for progress lines.
func (p *Pacer) Recent(window time.Duration) (ruPerSecond, throttledShare float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	window = min(max(window, statBucket), statBucket*statBuckets)
	now := p.now()
	n := now.UnixNano() / int64(statBucket)
	k := int64(window / statBucket)
	var ru float64
	var req, thr int64
	for i := range k {
		s := p.win[(n-i)%statBuckets]
		if s.at == n-i {
			ru += s.ru
			req += s.requests
			thr += s.throttle
		}
	}
	if req > 0 {
		throttledShare = float64(thr) / float64(req)
	}
	return ru / window.Seconds(), throttledShare
}

// estimate is what a request is expected to cost, from what requests of
// its class cost before: per started KB of body for writes, per request
// otherwise.
func (p *Pacer) estimate(class string, bodyBytes int64) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.estimates[class]
	if !ok {
		e = 1
		if bodyBytes > 0 && class == "write" {
			e = 5 // per KB: what a write of an indexed doc costs
		}
	}
	if class == "write" {
		return e * float64(max(1, (bodyBytes+1023)/1024))
	}
	return e
}

// learn folds a charge into the estimate of its class.
func (p *Pacer) learn(class string, bodyBytes int64, charge float64) {
	if charge <= 0 {
		return
	}
	if class == "write" {
		charge /= float64(max(1, (bodyBytes+1023)/1024))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.estimates[class]; ok {
		p.estimates[class] = 0.8*e + 0.2*charge
	} else {
		p.estimates[class] = charge
	}
}

// pacerPolicy paces every attempt of a Cosmos DB client's requests (it
// sits among the per-retry policies, so retries are paced too).
type pacerPolicy struct{ p *Pacer }

func (pp pacerPolicy) Do(req *policy.Request) (*http.Response, error) {
	r := req.Raw()
	class, write := requestClass(r)
	container := containerOf(r.URL.Path)
	est := pp.p.estimate(class, r.ContentLength)
	if err := pp.p.Wait(r.Context(), est); err != nil {
		return nil, err
	}
	resp, err := req.Next()
	if err != nil {
		pp.p.Settle(est, 0, false, 0, write, container)
		return nil, err
	}
	charge, _ := strconv.ParseFloat(resp.Header.Get("x-ms-request-charge"), 64)
	store.MeterOf(r.Context()).Charge(charge)
	throttled := AnswerKind(resp) == store.Throttled
	pp.p.Settle(est, charge, throttled, retryAfter(resp), write, container)
	if !throttled {
		pp.p.learn(class, r.ContentLength, charge)
	}
	return resp, nil
}

// requestClass sorts a Cosmos DB request for the estimates: "write" (a
// doc created, replaced, upserted or deleted), "query", "read" (a doc) or
// "meta" (everything else), and says whether it writes a doc.
func requestClass(r *http.Request) (class string, write bool) {
	onDocs := strings.HasSuffix(r.URL.Path, "/docs") || strings.Contains(r.URL.Path, "/docs/")
	switch {
	case !onDocs:
		return "meta", false
	case r.Method == http.MethodPost && (strings.EqualFold(r.Header.Get("x-ms-documentdb-isquery"), "true") ||
		strings.HasPrefix(r.Header.Get("Content-Type"), "application/query+json")):
		return "query", false
	case r.Method == http.MethodGet:
		return "read", false
	}
	return "write", true
}

// containerOf returns the container of a Cosmos DB resource path
// (/dbs/{db}/colls/{coll}/…), or "".
func containerOf(path string) string {
	_, rest, ok := strings.Cut(path, "/colls/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}
