package faultproxy_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
)

// upstream is a tiny service standing in for Cosmos DB: it announces its
// own address in GET / like cosmosdb-server does, and counts the doc
// writes it received per id.
type upstream struct {
	srv    *httptest.Server
	mu     sync.Mutex
	writes map[string]int
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{writes: make(map[string]int)}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/" {
			self := "https://" + r.Host + "/"
			fmt.Fprintf(w, `{"id":"acct","writableLocations":[{"name":"South Central US","databaseAccountEndpoint":%q}],"readableLocations":[{"name":"South Central US","databaseAccountEndpoint":%q}],"enableMultipleWriteLocations":false}`, self, self)
			return
		}
		if r.Method == http.MethodHead {
			w.Header().Set("Content-Length", "1234")
			return
		}
		body, _ := io.ReadAll(r.Body)
		key := faultproxy.CosmosDocKey(r, body)
		u.mu.Lock()
		u.writes[faultproxy.DocID(key)]++
		u.mu.Unlock()
		w.Header().Set("x-ms-request-charge", "1")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) writesFor(id string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.writes[id]
}

func start(t *testing.T, cfg faultproxy.Config) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// client does not reuse connections, so that a reset connection is never
// silently retried by net/http.
func client() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
}

func upsert(c *http.Client, base, id string) (*http.Response, error) {
	req, _ := http.NewRequest(http.MethodPost, base+"dbs/db1/colls/entities/docs", strings.NewReader(`{"id":"`+id+`","scope":"s"}`))
	req.Header.Set("Content-Type", "application/json")
	return c.Do(req)
}

// outcome sends one upsert and names what the client saw.
func outcome(c *http.Client, base, id string) string {
	resp, err := upsert(c, base, id)
	if err != nil {
		return "error"
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if ra := resp.Header.Get("x-ms-retry-after-ms"); ra != "" {
		return fmt.Sprintf("%d/%s", resp.StatusCode, ra)
	}
	return fmt.Sprint(resp.StatusCode)
}

func TestRewritesAccountLocationsToItself(t *testing.T) {
	u := newUpstream(t)
	p := start(t, faultproxy.Config{Target: u.srv.URL})
	resp, err := client().Get(p.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var acct struct {
		ID                string
		WritableLocations []struct{ Name, DatabaseAccountEndpoint string }
		ReadableLocations []struct{ Name, DatabaseAccountEndpoint string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&acct); err != nil {
		t.Fatal(err)
	}
	if acct.ID != "acct" || len(acct.WritableLocations) != 1 || len(acct.ReadableLocations) != 1 {
		t.Fatalf("account answer not kept: %+v", acct)
	}
	for _, l := range append(acct.WritableLocations, acct.ReadableLocations...) {
		if l.DatabaseAccountEndpoint != p.URL() || l.Name != "South Central US" {
			t.Errorf("location %+v, want endpoint %s", l, p.URL())
		}
	}
}

func TestHeadKeepsContentLength(t *testing.T) {
	u := newUpstream(t)
	p := start(t, faultproxy.Config{Target: u.srv.URL})
	resp, err := client().Head(p.URL() + "container/blob")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ContentLength != 1234 {
		t.Errorf("HEAD Content-Length %d, want the upstream's 1234", resp.ContentLength)
	}
}

func TestFaultsFollowRulesAndRuns(t *testing.T) {
	u := newUpstream(t)
	p := start(t, faultproxy.Config{
		Target: u.srv.URL,
		Rules: []faultproxy.Rule{
			{Kind: faultproxy.Throttle, Share: 1, Count: 1, RetryAfter: 2 * time.Second},
			{Kind: faultproxy.Throttle, Share: 1, Count: 4, Run: 4, RetryAfter: 5 * time.Millisecond},
			{Kind: faultproxy.Unavailable, Share: 1, Count: 1},
			{Kind: faultproxy.Timeout, Share: 1, Count: 1},
			{Kind: faultproxy.RetryWith, Share: 1, Count: 1},
			{Kind: faultproxy.DropBefore, Share: 1, Count: 1},
			{Kind: faultproxy.DropAfter, Share: 1, Count: 1},
			{Kind: faultproxy.CloseBefore, Share: 1, Count: 1},
		},
	})
	c := client()
	var got []string
	for range 12 {
		got = append(got, outcome(c, p.URL(), "d1"))
	}
	want := []string{"429/2000", "429/5", "429/5", "429/5", "429/5", "503", "408", "449", "error", "error", "error", "201"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("outcomes\n got %v\nwant %v", got, want)
	}
	// Only drop-after and the final request reached the upstream.
	if n := u.writesFor("d1"); n != 2 {
		t.Errorf("upstream saw %d writes, want 2 (drop-after and the last)", n)
	}
	if n := p.Requests("d1"); n != 12 {
		t.Errorf("Requests = %d, want 12", n)
	}
	wantCounts := map[faultproxy.Kind]int{faultproxy.Throttle: 5, faultproxy.Unavailable: 1, faultproxy.Timeout: 1,
		faultproxy.RetryWith: 1, faultproxy.DropBefore: 1, faultproxy.DropAfter: 1, faultproxy.CloseBefore: 1}
	if fmt.Sprint(p.Counts()) != fmt.Sprint(wantCounts) {
		t.Errorf("Counts = %v, want %v", p.Counts(), wantCounts)
	}
	if n := p.MaxStreak(faultproxy.Throttle); n != 5 {
		t.Errorf("MaxStreak(429) = %d, want 5", n)
	}
}

func TestMaxPerDoc(t *testing.T) {
	u := newUpstream(t)
	p := start(t, faultproxy.Config{Target: u.srv.URL, MaxPerDoc: 2,
		Rules: []faultproxy.Rule{{Kind: faultproxy.Unavailable, Share: 1}}})
	c := client()
	var got []string
	for _, id := range []string{"a", "a", "a", "b", "a", "b", "b"} {
		got = append(got, id+":"+outcome(c, p.URL(), id))
	}
	want := "[a:503 a:503 a:201 b:503 a:201 b:503 b:201]"
	if fmt.Sprint(got) != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}

func TestNonWritesAreOnlyForwarded(t *testing.T) {
	u := newUpstream(t)
	p := start(t, faultproxy.Config{Target: u.srv.URL, Rules: []faultproxy.Rule{{Kind: faultproxy.Unavailable, Share: 1}}})
	c := client()
	get := func(path string, hdr map[string]string, method string) int {
		req, _ := http.NewRequest(method, p.URL()+path, strings.NewReader(`{"query":"SELECT * FROM c"}`))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := get("dbs/db1/colls/entities/docs/x", nil, http.MethodGet); s != http.StatusCreated {
		t.Errorf("point read: %d, want forwarded", s)
	}
	if s := get("dbs/db1/colls/entities/docs", map[string]string{"x-ms-documentdb-isquery": "true"}, http.MethodPost); s != http.StatusCreated {
		t.Errorf("query: %d, want forwarded", s)
	}
	if s := get("dbs/db1/colls", nil, http.MethodPost); s != http.StatusCreated {
		t.Errorf("create container: %d, want forwarded", s)
	}
	if s := get("dbs/db1/colls/entities/docs/x", nil, http.MethodDelete); s != http.StatusServiceUnavailable {
		t.Errorf("delete: %d, want the injected 503", s)
	}
}

// The same seed gives every doc the same faults whatever the order and
// concurrency of the requests; MaxPerDoc lets every doc through in the end.
func TestDeterministicPerDocWhateverTheOrder(t *testing.T) {
	rules := []faultproxy.Rule{
		{Kind: faultproxy.Throttle, Share: 0.2, Run: 3, RetryAfter: time.Millisecond},
		{Kind: faultproxy.Unavailable, Share: 0.2},
		{Kind: faultproxy.Timeout, Share: 0.1},
	}
	const docs, tries = 40, 6
	run := func(concurrent bool, seed uint64) map[string][]string {
		u := newUpstream(t)
		p := start(t, faultproxy.Config{Target: u.srv.URL, Seed: seed, Rules: rules, MaxPerDoc: 4})
		out := make(map[string][]string)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range docs {
			id := fmt.Sprintf("doc-%02d", i)
			if !concurrent {
				id = fmt.Sprintf("doc-%02d", docs-1-i) // reverse order
			}
			f := func() {
				c := client()
				var seq []string
				for range tries {
					seq = append(seq, outcome(c, p.URL(), id))
				}
				mu.Lock()
				out[id] = seq
				mu.Unlock()
			}
			if concurrent {
				wg.Go(f)
			} else {
				f()
			}
		}
		wg.Wait()
		return out
	}
	a, b := run(false, 7), run(true, 7)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("same seed, different faults:\n%v\n%v", a, b)
	}
	faulted := 0
	for id, seq := range a {
		if n := len(seq) - strings.Count(strings.Join(seq, " "), "201"); n > 4 {
			t.Errorf("%s: %v: %d faults, MaxPerDoc is 4", id, seq, n)
		}
		if seq[0] != "201" {
			faulted++
		}
	}
	if faulted == 0 || faulted == docs {
		t.Errorf("%d of %d docs faulted on their first request; shares of 0.5 should fault some, not all", faulted, docs)
	}
	if c := run(false, 8); fmt.Sprint(a) == fmt.Sprint(c) {
		t.Errorf("seeds 7 and 8 gave the same faults")
	}
}

func TestConcurrentUseAndClose(t *testing.T) {
	u := newUpstream(t)
	p, err := faultproxy.Start(faultproxy.Config{Target: u.srv.URL, Rules: []faultproxy.Rule{
		{Kind: faultproxy.Throttle, Share: 0.3, RetryAfter: time.Millisecond},
		{Kind: faultproxy.DropAfter, Share: 0.2},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var seen atomic.Int64
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			c := &http.Client{} // keep-alive on: connections are reused and reset
			for j := range 20 {
				if resp, err := upsert(c, p.URL(), fmt.Sprintf("d%d-%d", i, j)); err == nil {
					resp.Body.Close()
				}
				seen.Add(1)
			}
		})
	}
	wg.Wait()
	total := 0
	for _, n := range p.Counts() {
		total += n
	}
	if total == 0 || total > int(seen.Load()) {
		t.Errorf("injected %d faults over %d requests", total, seen.Load())
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := client().Get(p.URL()); err == nil {
		t.Errorf("proxy still answers after Close")
	}
}

// With Config.Addr the proxy listens where it is told, announces that
// address, and a second proxy on the same address is refused.
func TestListensOnTheGivenAddress(t *testing.T) {
	u := newUpstream(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := start(t, faultproxy.Config{Target: u.srv.URL, Addr: addr})
	if p.URL() != "http://"+addr+"/" {
		t.Errorf("URL %q, want http://%s/", p.URL(), addr)
	}
	if got := outcome(client(), "http://"+addr+"/", "on-addr"); got != "201" || u.writesFor("on-addr") != 1 {
		t.Errorf("write through %s: %s, %d upstream writes; want 201, 1", addr, got, u.writesFor("on-addr"))
	}
	second, err := faultproxy.Start(faultproxy.Config{Target: u.srv.URL, Addr: addr})
	if err == nil {
		second.Close()
		t.Fatalf("a second proxy on %s started", addr)
	}
	if !strings.Contains(err.Error(), "faultproxy: listen: ") || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("second proxy on %s: %v, want faultproxy: listen: … address already in use", addr, err)
	}
}

// Config.First faults the first requests of any kind, in the order they
// come (Match and Rules aside), and closes the connection after an
// answer it makes up: a client that keeps its connections sees the 503,
// then the closed connection on a new one (Go's transport does not send
// that request again by itself), then the upstream's answer.
func TestFirstRequestsGetTheirFaultsInOrder(t *testing.T) {
	u := newUpstream(t)
	p := start(t, faultproxy.Config{
		Target: u.srv.URL,
		First:  []faultproxy.Kind{faultproxy.Unavailable, faultproxy.CloseBefore},
		Match:  func(*http.Request) bool { return false }, // no rule applies to any request
		Rules:  []faultproxy.Rule{{Kind: faultproxy.Throttle, Share: 1}},
	})
	c := &http.Client{Transport: &http.Transport{}} // keeps its connections, as the tool's does
	var got []string
	for range 4 {
		resp, err := c.Get(p.URL() + "dbs/db1")
		if err != nil {
			got = append(got, "error")
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got = append(got, fmt.Sprint(resp.StatusCode))
	}
	if want := []string{"503", "error", "201", "201"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("answers %v, want %v", got, want)
	}
	if p.Injected(faultproxy.Unavailable) != 1 || p.Injected(faultproxy.CloseBefore) != 1 || p.Forwarded() != 2 {
		t.Errorf("injected %v, forwarded %d; want one 503, one close and 2 forwarded", p.Counts(), p.Forwarded())
	}
}
