package faultproxy_test

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
)

func post(t *testing.T, url string, body []byte) *http.Response {
	t.Helper()
	resp, err := http.Post(url+"dbs/d/colls/c/docs", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// The budget charges a write 5 RU per started KB, throttles one that would
// overdraw the bucket with the bucket's wait, and throttles everything
// while the budget is zero.
func TestBudgetChargesAndThrottles(t *testing.T) {
	u := newUpstream(t)
	p := start(t, faultproxy.Config{Target: u.srv.URL, Budget: &faultproxy.Budget{RUPerSecond: 100}})
	doc := []byte(`{"id":"x","pad":"` + strings.Repeat("a", 2500) + `"}`) // 3 KB started: 15 RU
	for i := range 6 {
		resp := post(t, p.URL(), doc)
		if resp.StatusCode != http.StatusCreated || resp.Header.Get("x-ms-request-charge") != "15" {
			t.Fatalf("write %d: %d, charge %q; want 201 charged 15", i, resp.StatusCode, resp.Header.Get("x-ms-request-charge"))
		}
	}
	resp := post(t, p.URL(), doc) // 90 of 100 spent
	ms, _ := strconv.Atoi(resp.Header.Get("x-ms-retry-after-ms"))
	if resp.StatusCode != http.StatusTooManyRequests || ms < 1 || ms > 60 {
		t.Fatalf("seventh write: %d, retry after %d ms; want 429 asking for ≤ 50 ms", resp.StatusCode, ms)
	}
	time.Sleep(time.Duration(ms+5) * time.Millisecond)
	if resp := post(t, p.URL(), doc); resp.StatusCode != http.StatusCreated {
		t.Fatalf("after the wait: %d", resp.StatusCode)
	}
	p.SetBudget(0)
	resp = post(t, p.URL(), doc)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("x-ms-retry-after-ms") != "1000" {
		t.Fatalf("budget zero: %d, retry after %q; want 429, 1000", resp.StatusCode, resp.Header.Get("x-ms-retry-after-ms"))
	}
	// Metadata is free.
	r, err := http.Get(p.URL())
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Fatalf("GET / with budget zero: %d", r.StatusCode)
	}
	ru, attempts, throttled, _, _ := faultproxy.Totals(p.Ledger(), "client", true)
	if ru != 7*15 || attempts != 9 || throttled != 2 {
		t.Errorf("ledger: %v RU over %d attempts, %d throttled; want 105, 9, 2", ru, attempts, throttled)
	}
}

// The simulated application draws its rate from the same bucket: alone it
// is never throttled; with the budget spent by someone else it is.
func TestBudgetApplicationSharesTheBucket(t *testing.T) {
	u := newUpstream(t)
	p := start(t, faultproxy.Config{Target: u.srv.URL, Budget: &faultproxy.Budget{RUPerSecond: 1000}})
	stop := p.StartApplication(200, 10)
	time.Sleep(500 * time.Millisecond)
	p.SetBudget(0)
	time.Sleep(200 * time.Millisecond)
	stop()
	ledger := p.Ledger()
	ru, attempts, throttled, _, _ := faultproxy.Totals(ledger, "application", false)
	if ru < 60 || ru > 140 || throttled == 0 {
		t.Errorf("application: %v RU in %d attempts, %d throttled; want about 100 RU, then throttled", ru, attempts, throttled)
	}
	w := faultproxy.MaxWindow(ledger, "application", 100*time.Millisecond)
	if w.RU < 10 || w.RU > 40 {
		t.Errorf("busiest 100 ms window: %v RU, want about 20", w.RU)
	}
}
