package faultproxy_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
)

// TestLatencyDelaysEveryRequest: every request, answered or injected,
// reaches its answer no sooner than the added latency; the upstream gets
// each write once.
func TestLatencyDelaysEveryRequest(t *testing.T) {
	u := newUpstream(t)
	const latency = 150 * time.Millisecond
	p := start(t, faultproxy.Config{Target: u.srv.URL, Latency: latency, Jitter: 20 * time.Millisecond,
		Rules: []faultproxy.Rule{{Kind: faultproxy.Unavailable, Share: 1, Count: 1}}})
	c := client()
	for i, want := range []string{"503", "201"} {
		begin := time.Now()
		if got := outcome(c, p.URL(), "a"); got != want {
			t.Fatalf("request %d: %s, want %s", i, got, want)
		}
		if d := time.Since(begin); d < latency {
			t.Errorf("request %d answered after %s, before the added %s", i, d, latency)
		}
	}
	if n := u.writesFor("a"); n != 1 {
		t.Errorf("upstream got %d writes of a, want 1", n)
	}
}

// TestLatencyWaitingCountsRequestsInFlight: Waiting counts the requests
// on their way; a client that gives up frees its slot, and SetLatency(0)
// lets the next ones straight through.
func TestLatencyWaitingCountsRequestsInFlight(t *testing.T) {
	u := newUpstream(t)
	p := start(t, faultproxy.Config{Target: u.srv.URL, Latency: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	c := &http.Client{Transport: &http.Transport{}}
	const n = 8
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.URL()+"dbs/db1/colls/entities/docs", strings.NewReader(`{"id":"w","scope":"s"}`))
			if resp, err := c.Do(req); err == nil {
				resp.Body.Close()
				t.Error("a request came back before its hour of latency")
			}
		})
	}
	deadline := time.Now().Add(30 * time.Second) // a hang bound, not a timing
	for p.Waiting() != n {
		if time.Now().After(deadline) {
			t.Fatalf("waiting %d, want %d", p.Waiting(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	for p.Waiting() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("waiting %d after the clients gave up, want 0", p.Waiting())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := u.writesFor("w"); n != 0 {
		t.Errorf("upstream got %d writes a cancelled client never finished sending", n)
	}
	p.SetLatency(0, 0)
	if got := outcome(client(), p.URL(), "x"); got != "201" {
		t.Errorf("after SetLatency(0): %s", got)
	}
}
