// Package faultproxy is a fault-injecting HTTP reverse proxy for tests. It
// sits between bifrost-migrate and a service (normally the Cosmos DB
// stand-in), forwards every request, and answers a deterministic selection
// of write requests with a fault instead: 429 with x-ms-retry-after-ms, 503,
// 408, 449, or a dropped connection (before forwarding, or after the
// upstream did the write). It is a real component on a real socket, not a
// mock of an SDK.
//
// With Config.Budget it also models an account's throughput (SPEC §14): a
// token bucket of request units that every doc read, write and query
// draws from, answering 429 with the bucket's wait when a request would
// overdraw it and x-ms-request-charge with its cost otherwise; a simulated
// application (Proxy.StartApplication) can draw from the same bucket.
//
// With Config.ChangeFeed it answers partition-key-range and change-feed
// requests itself (see ChangeFeed), which the stand-in cannot, and splits
// partition key ranges on command as the service does when a container
// grows (Proxy.Split, Proxy.SplitAfter).
//
// Cosmos DB clients first read the account (GET /) and then send requests
// to the endpoints it announces; the stand-in announces its own address, so
// the proxy rewrites writableLocations and readableLocations in that answer
// to its own address to keep the client talking through it.
package faultproxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Kind is a kind of injected fault.
type Kind int

// The faults the proxy can inject.
const (
	// Throttle answers 429 Too Many Requests with x-ms-retry-after-ms set
	// to Rule.RetryAfter in milliseconds (no header when it is 0), and
	// x-ms-substatus 3200 as the service does. The request is not forwarded.
	Throttle Kind = iota
	// Unavailable answers 503 Service Unavailable without forwarding.
	Unavailable
	// Timeout answers 408 Request Timeout without forwarding.
	Timeout
	// RetryWith answers 449 Retry With without forwarding.
	RetryWith
	// DropBefore resets the client's connection (TCP RST) without
	// forwarding: the service never saw the request.
	DropBefore
	// DropAfter forwards the request, reads the whole upstream answer, and
	// then resets the client's connection without answering: the write
	// happened but the client cannot know it. Only idempotent operations
	// survive this unchanged.
	DropAfter
	// CloseBefore closes the client's connection normally (TCP FIN)
	// without forwarding or answering: the client reads EOF.
	CloseBefore
	numKinds
)

var kindNames = [...]string{"429", "503", "408", "449", "drop-before", "drop-after", "close-before"}

// String returns the status code, or "drop-before", "drop-after" or
// "close-before".
func (k Kind) String() string {
	if k < 0 || k >= numKinds {
		return "Kind(" + strconv.Itoa(int(k)) + ")"
	}
	return kindNames[k]
}

// Rule makes the proxy inject one kind of fault.
type Rule struct {
	// Kind is the fault to inject.
	Kind Kind
	// Share is the probability (0..1) that a matching request starts this
	// fault. The draw is a hash of Config.Seed, the rule's index, the doc
	// and how many requests for that doc came before, so it does not depend
	// on the order in which concurrent requests arrive: the same seed and
	// the same requests per doc give the same faults. 1 means every
	// matching request (until Count is reached).
	Share float64
	// Count caps how many faults this rule injects in total (0: no cap).
	// Which requests get them, once the cap binds, depends on arrival
	// order.
	Count int
	// Run is how many consecutive requests for the same doc get this fault
	// once it starts (default 1). Run 4 with Throttle gives four 429s in a
	// row for one doc, more than the SDK's own retry policy tolerates.
	Run int
	// RetryAfter is the delay a Throttle asks for (x-ms-retry-after-ms),
	// e.g. 2*time.Second.
	RetryAfter time.Duration
}

// Config configures a Proxy.
type Config struct {
	// Target is the upstream base URL, e.g. http://127.0.0.1:8081/.
	Target string
	// Addr is the address to listen on, host:port; empty means
	// 127.0.0.1 on a free port.
	Addr string
	// Seed makes the Share draws deterministic.
	Seed uint64
	// Rules are tried in order for every matching request that is not
	// already in a run; the first that fires wins.
	Rules []Rule
	// First are the faults of the first len(First) requests the proxy
	// gets, of any kind and in the order they arrive, before Match and
	// Rules (a request Budget throttles is not among them): a command's
	// first contact with a busy account. An answer
	// the proxy makes up for one of them closes the connection, as a
	// front end shedding load does, so the next request comes on a new
	// one (on a connection it had used before, Go's transport would send
	// a request that met a closed connection again by itself, and a
	// CloseBefore would go unseen).
	First []Kind
	// MaxPerDoc caps the faults injected for any one doc (0: no cap), so a
	// client with a bounded retry budget always gets through.
	MaxPerDoc int
	// FaultCharge, when > 0, is sent as x-ms-request-charge on the 429,
	// 503, 408 and 449 answers the proxy makes up, so tests can check that
	// a client adds up the charges of failed attempts too.
	FaultCharge float64
	// Match selects the requests faults may be injected into; nil means
	// IsDocWrite. Other requests are only forwarded.
	Match func(*http.Request) bool
	// DocKey names the doc a matching request is about; nil means
	// CosmosDocKey. Runs, MaxPerDoc and the per-doc statistics use it.
	DocKey func(r *http.Request, body []byte) string
	// Budget, when not nil, makes the proxy an RU-limited account.
	Budget *Budget
	// ChangeFeed, when not nil, makes the proxy simulate partition key
	// ranges and the change feed (see ChangeFeed).
	ChangeFeed *ChangeFeed
	// Latency is added to every request, answered or injected: the
	// round trip of a client far from the account (a laptop, another
	// region). Jitter, when > 0, adds a uniform draw in [0, Jitter) on
	// top. SetLatency changes both while the proxy runs.
	Latency, Jitter time.Duration
}

// IsDocWrite reports whether r writes a Cosmos DB doc: POST, PUT or DELETE
// on a path containing /docs, excluding queries (POST with
// x-ms-documentdb-isquery).
func IsDocWrite(r *http.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodDelete:
	default:
		return false
	}
	if !strings.HasSuffix(r.URL.Path, "/docs") && !strings.Contains(r.URL.Path, "/docs/") {
		return false
	}
	return !strings.EqualFold(r.Header.Get("x-ms-documentdb-isquery"), "true") &&
		!strings.HasPrefix(r.Header.Get("Content-Type"), "application/query+json")
}

// CosmosDocKey is the default Config.DocKey: "collection|id", with the
// collection's name (not its database's, so that tests using fresh
// database names get the same draws) and the doc id from the path (PUT,
// DELETE) or from the JSON body's "id" (POST).
func CosmosDocKey(r *http.Request, body []byte) string {
	p := r.URL.Path
	var coll, id string
	if i := strings.LastIndex(p, "/docs/"); i >= 0 {
		coll, id = p[:i], p[i+len("/docs/"):]
		if u, err := url.PathUnescape(id); err == nil {
			id = u
		}
	} else {
		// An unreadable body is keyed by its collection alone.
		coll, id = strings.TrimSuffix(p, "/docs"), docID(body)
	}
	return coll[strings.LastIndex(coll, "/")+1:] + "|" + id
}

// DocID returns the doc id part of a CosmosDocKey key.
func DocID(key string) string {
	_, id, _ := strings.Cut(key, "|")
	return id
}

type docState struct {
	requests int  // matching requests seen
	faults   int  // faults injected
	runRule  int  // rule of the current run, or -1
	runLeft  int  // further requests the current run covers
	lastKind Kind // kind of the previous request's fault, or -1
	streak   int  // consecutive faults of lastKind
}

// Proxy is a running fault-injecting reverse proxy. Its methods are safe
// for concurrent use.
type Proxy struct {
	cfg    Config
	target *url.URL
	ln     net.Listener
	srv    *http.Server
	client *http.Transport
	url    string
	done   chan struct{}

	bucket *bucket // nil without Config.Budget

	latency, jitter atomic.Int64 // nanoseconds; Config.Latency and Jitter
	waiting         atomic.Int64 // requests sleeping their latency now
	gone            atomic.Int64 // change-feed reads answered 410: a split range

	mu        sync.Mutex
	requests  int // every request received, for Config.First
	docs      map[string]*docState
	fired     []int // per rule
	injected  [numKinds]int
	maxStreak [numKinds]int
	forwarded int
	feeds     map[string]*feedLog // by the path of a container's docs; with Config.ChangeFeed
}

// Start listens on Config.Addr (default: 127.0.0.1 on a free port) and
// serves until Close. It returns an error when Target is not an absolute
// URL, ChangeFeed.Ranges is out of range, or the listener cannot be opened
// (the address is in use).
func Start(cfg Config) (*Proxy, error) {
	t, err := url.Parse(cfg.Target)
	if err != nil || t.Scheme == "" || t.Host == "" {
		return nil, fmt.Errorf("faultproxy: target %q is not an absolute URL", cfg.Target)
	}
	if cf := cfg.ChangeFeed; cf != nil && (cf.Ranges < 0 || cf.Ranges > maxFeedRanges) {
		return nil, fmt.Errorf("faultproxy: ChangeFeed.Ranges %d is not in 0..%d", cf.Ranges, maxFeedRanges)
	}
	if cfg.Match == nil {
		cfg.Match = IsDocWrite
	}
	if cfg.DocKey == nil {
		cfg.DocKey = CosmosDocKey
	}
	addr := cfg.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p := &Proxy{
		cfg:    cfg,
		target: t,
		ln:     ln,
		client: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1024, IdleConnTimeout: 30 * time.Second},
		url:    "http://" + ln.Addr().String() + "/",
		done:   make(chan struct{}),
		docs:   make(map[string]*docState),
		fired:  make([]int, len(cfg.Rules)),
		feeds:  make(map[string]*feedLog),
	}
	if cfg.Budget != nil {
		p.bucket = newBucket(*cfg.Budget, time.Now)
	}
	p.SetLatency(cfg.Latency, cfg.Jitter)
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(p.done)
		_ = p.srv.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	return p, nil
}

// URL is the proxy's base URL, http://HOST:PORT/ (HOST as it listens,
// e.g. 127.0.0.1).
func (p *Proxy) URL() string { return p.url }

// Close stops accepting, closes every connection, waits for the server
// loop to end and returns nil; calling it again is harmless.
func (p *Proxy) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil {
		_ = p.srv.Close()
	}
	<-p.done
	p.client.CloseIdleConnections()
	return nil
}

// Injected returns how many faults of kind the proxy injected.
func (p *Proxy) Injected(kind Kind) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if kind < 0 || kind >= numKinds {
		return 0
	}
	return p.injected[kind]
}

// Counts returns the number of injected faults per kind (kinds with none
// are absent).
func (p *Proxy) Counts() map[Kind]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := make(map[Kind]int)
	for k, n := range p.injected {
		if n > 0 {
			m[Kind(k)] = n
		}
	}
	return m
}

// MaxStreak returns the longest run of consecutive faults of kind that one
// doc received.
func (p *Proxy) MaxStreak(kind Kind) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if kind < 0 || kind >= numKinds {
		return 0
	}
	return p.maxStreak[kind]
}

// Requests returns how many matching requests the proxy received for the
// doc with this id (in any collection), faulted or not.
func (p *Proxy) Requests(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for k, s := range p.docs {
		if DocID(k) == id {
			n += s.requests
		}
	}
	return n
}

// Forwarded returns how many requests of any kind reached the upstream.
func (p *Proxy) Forwarded() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.forwarded
}

// draw is a uniform number in [0, 1) from the seed, rule, doc and request
// number: deterministic whatever the arrival order.
func (p *Proxy) draw(rule int, key string, n int) float64 {
	h := fnv.New64a()
	var b [24]byte
	binary.LittleEndian.PutUint64(b[0:], p.cfg.Seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(rule))
	binary.LittleEndian.PutUint64(b[16:], uint64(n))
	h.Write(b[:])
	h.Write([]byte(key))
	return float64(mix(h.Sum64())>>11) / (1 << 53)
}

// mix is splitmix64's finaliser: the proxy's hashes are FNV, which alone
// mixes the last bytes of its input poorly (ids that differ at their end
// would draw alike, and fall into the same feed range).
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// decide returns the rule to apply to this request, or -1.
func (p *Proxy) decide(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.docs[key]
	if s == nil {
		s = &docState{runRule: -1, lastKind: -1}
		p.docs[key] = s
	}
	n := s.requests
	s.requests++
	rule := -1
	if p.cfg.MaxPerDoc == 0 || s.faults < p.cfg.MaxPerDoc {
		if s.runLeft > 0 && p.underCount(s.runRule) {
			rule = s.runRule
			s.runLeft--
		} else {
			s.runLeft = 0
			for i, r := range p.cfg.Rules {
				if p.underCount(i) && p.draw(i, key, n) < r.Share {
					rule = i
					s.runLeft = max(r.Run, 1) - 1
					s.runRule = i
					break
				}
			}
		}
	}
	if rule < 0 {
		s.lastKind, s.streak = -1, 0
		return -1
	}
	k := p.cfg.Rules[rule].Kind
	p.fired[rule]++
	s.faults++
	if k >= 0 && k < numKinds {
		p.injected[k]++
		if s.lastKind == k {
			s.streak++
		} else {
			s.lastKind, s.streak = k, 1
		}
		p.maxStreak[k] = max(p.maxStreak[k], s.streak)
	}
	return rule
}

func (p *Proxy) underCount(rule int) bool {
	c := p.cfg.Rules[rule].Count
	return c == 0 || p.fired[rule] < c
}

// SetLatency sets the latency added to every request from now on (see
// Config.Latency); negative values count as 0.
func (p *Proxy) SetLatency(latency, jitter time.Duration) {
	p.latency.Store(int64(max(latency, 0)))
	p.jitter.Store(int64(max(jitter, 0)))
}

// Waiting is the number of requests sleeping their added latency now: the
// requests a client has in flight, seen from the network.
func (p *Proxy) Waiting() int { return int(p.waiting.Load()) }

// delay sleeps the added latency, or until r is cancelled (false).
func (p *Proxy) delay(r *http.Request) bool {
	d := time.Duration(p.latency.Load())
	if j := p.jitter.Load(); j > 0 {
		d += time.Duration(rand.Int64N(j))
	}
	if d <= 0 {
		return true
	}
	p.waiting.Add(1)
	defer p.waiting.Add(-1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// ServeHTTP forwards r, or injects the fault the rules choose for it,
// after the added latency.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "faultproxy: reading request body: "+err.Error(), http.StatusBadGateway)
		return
	}
	if !p.delay(r) {
		return // the client gave up while the request was on its way
	}
	var cost float64       // RU this request costs in the budget (0: not charged)
	var admitted time.Time // when the budget let it through
	if p.bucket != nil {
		var throttled bool
		if cost, admitted, throttled = p.bucket.admit(r, body); throttled {
			wait := p.bucket.wait(cost)
			w.Header().Set("x-ms-retry-after-ms", strconv.FormatInt(max(1, wait.Milliseconds()), 10))
			w.Header().Set("x-ms-substatus", "3200")
			w.Header().Set("x-ms-request-charge", "0")
			p.fault(w, http.StatusTooManyRequests, "TooManyRequests", "Request rate is large (the simulated account's budget is spent)")
			return
		}
	}
	var fault *Rule // the fault to inject, if any
	if k, ok := p.first(); ok {
		fault = &Rule{Kind: k}
		w.Header().Set("Connection", "close")
	} else if p.cfg.Match(r) {
		if rule := p.decide(p.cfg.DocKey(r, body)); rule >= 0 {
			fault = &p.cfg.Rules[rule]
		}
	}
	if fault != nil && p.inject(w, *fault) {
		return
	}
	resp, err := p.respond(r, body)
	if err != nil {
		http.Error(w, "faultproxy: upstream: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, "faultproxy: reading upstream answer: "+err.Error(), http.StatusBadGateway)
		return
	}
	if fault != nil && fault.Kind == DropAfter {
		reset(w, true)
		return
	}
	if r.Method == http.MethodGet && r.URL.Path == "/" {
		respBody = p.rewriteAccount(respBody)
	}
	if p.bucket != nil && isDocOp(r) {
		charge := p.bucket.charge(r, cost, admitted, len(respBody))
		resp.Header.Set("x-ms-request-charge", strconv.FormatFloat(charge, 'f', -1, 64))
	}
	// A HEAD answer's Content-Length is the entity's, not the (empty)
	// body's: keep the upstream's.
	head := r.Method == http.MethodHead
	for k, vs := range resp.Header {
		if hopHeader(k) || (!head && strings.EqualFold(k, "Content-Length")) {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if !head {
		w.Header().Set("Content-Length", strconv.Itoa(len(respBody)))
	}
	w.WriteHeader(resp.StatusCode)
	if !head {
		_, _ = w.Write(respBody)
	}
}

// first returns the fault of this request when it is among the first
// len(Config.First) the proxy gets, and counts it.
func (p *Proxy) first() (Kind, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.requests
	p.requests++
	if n >= len(p.cfg.First) {
		return 0, false
	}
	k := p.cfg.First[n]
	if k >= 0 && k < numKinds {
		p.injected[k]++
	}
	return k, true
}

// inject answers with the fault ru names, or closes the connection, and
// reports whether it did: false for DropAfter, whose request is
// forwarded first.
func (p *Proxy) inject(w http.ResponseWriter, ru Rule) bool {
	switch ru.Kind {
	case Throttle:
		if ru.RetryAfter > 0 {
			w.Header().Set("x-ms-retry-after-ms", strconv.FormatInt(ru.RetryAfter.Milliseconds(), 10))
		}
		w.Header().Set("x-ms-substatus", "3200")
		p.fault(w, http.StatusTooManyRequests, "TooManyRequests", "Request rate is large (injected by faultproxy)")
	case Unavailable:
		p.fault(w, http.StatusServiceUnavailable, "ServiceUnavailable", "Service is unavailable (injected by faultproxy)")
	case Timeout:
		p.fault(w, http.StatusRequestTimeout, "RequestTimeout", "Request timed out (injected by faultproxy)")
	case RetryWith:
		p.fault(w, 449, "RetryWith", "Retry the request (injected by faultproxy)")
	case DropBefore:
		reset(w, true)
	case CloseBefore:
		reset(w, false)
	default:
		return false
	}
	return true
}

// respond is the answer to r when no fault replaces it: the upstream's,
// or with Config.ChangeFeed one the proxy makes for partition key ranges
// and change feeds.
func (p *Proxy) respond(r *http.Request, body []byte) (*http.Response, error) {
	if p.cfg.ChangeFeed != nil {
		switch {
		case IsChangeFeedRead(r):
			return p.changeFeed(r)
		case isPKRangesRead(r):
			return p.partitionKeyRanges(r)
		}
	}
	return p.forward(r, body)
}

func (p *Proxy) forward(r *http.Request, body []byte) (*http.Response, error) {
	u := *p.target
	u.Path = strings.TrimSuffix(p.target.Path, "/") + r.URL.Path
	u.RawPath = ""
	if r.URL.RawPath != "" {
		u.RawPath = strings.TrimSuffix(p.target.EscapedPath(), "/") + r.URL.RawPath
	}
	u.RawQuery = r.URL.RawQuery
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range r.Header {
		if hopHeader(k) {
			continue
		}
		out.Header[k] = append([]string(nil), vs...)
	}
	out.ContentLength = int64(len(body))
	if len(body) == 0 && r.ContentLength <= 0 {
		out.Body = http.NoBody
	}
	resp, err := p.client.RoundTrip(out)
	if err == nil {
		p.mu.Lock()
		p.forwarded++
		p.mu.Unlock()
	}
	return resp, err
}

// rewriteAccount points the account's announced locations at the proxy.
// A body that is not an account answer is returned unchanged.
func (p *Proxy) rewriteAccount(body []byte) []byte {
	var acct map[string]json.RawMessage
	if json.Unmarshal(body, &acct) != nil {
		return body
	}
	changed := false
	for _, field := range []string{"writableLocations", "readableLocations"} {
		raw, ok := acct[field]
		if !ok {
			continue
		}
		var locs []map[string]any
		if json.Unmarshal(raw, &locs) != nil {
			continue
		}
		for _, l := range locs {
			l["databaseAccountEndpoint"] = p.url
		}
		b, err := json.Marshal(locs)
		if err != nil {
			continue
		}
		acct[field] = b
		changed = true
	}
	if !changed {
		return body
	}
	b, err := json.Marshal(acct)
	if err != nil {
		return body
	}
	return b
}

func (p *Proxy) fault(w http.ResponseWriter, status int, code, msg string) {
	if p.cfg.FaultCharge > 0 {
		w.Header().Set("x-ms-request-charge", strconv.FormatFloat(p.cfg.FaultCharge, 'f', -1, 64))
	}
	b, _ := json.Marshal(map[string]string{"code": code, "message": msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// reset closes the client's connection without an answer, with a TCP RST
// when rst is true and a FIN otherwise.
func reset(w http.ResponseWriter, rst bool) {
	hj, ok := w.(http.Hijacker)
	if !ok { // HTTP/2: abort the stream instead
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok && rst {
		_ = tc.SetLinger(0) // RST instead of FIN
	}
	_ = conn.Close()
}

var hopHeaders = map[string]bool{
	"Connection": true, "Proxy-Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
}

func hopHeader(k string) bool { return hopHeaders[http.CanonicalHeaderKey(k)] }
