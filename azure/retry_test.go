package azure_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/store"
)

// tableThroughProxy returns a fresh table holding one row, and the account
// with its table endpoint pointing at a fault proxy that applies rules to
// every read of that table.
func tableThroughProxy(t *testing.T, rules ...faultproxy.Rule) (string, azure.StorageAccount, *faultproxy.Proxy) {
	t.Helper()
	name, _ := newTable(t, `{"PartitionKey":"p","RowKey":"r","N":1}`)
	acct := testenv.Storage(t)
	u, err := url.Parse(acct.TableEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.Start(faultproxy.Config{
		Target: u.Scheme + "://" + u.Host,
		Match: func(r *http.Request) bool {
			return r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/"+name)
		},
		DocKey: func(*http.Request, []byte) string { return "|" + name },
		Rules:  rules,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	acct.TableEndpoint = strings.TrimSuffix(p.URL(), "/") + u.Path
	return name, acct, p
}

// A 429 is back-pressure, never a failure by count: 40 in a row (more
// than any attempt limit) are waited out, and the read succeeds.
func TestTableReaderWaitsOutAnyNumberOf429s(t *testing.T) {
	name, acct, p := tableThroughProxy(t, faultproxy.Rule{Kind: faultproxy.Throttle, Share: 1, Count: 40, Run: 40, RetryAfter: time.Millisecond})
	var mu sync.Mutex
	var events []azure.RetryEvent
	r := azure.NewTableReader(acct, azure.Options{Retry: azure.RetryOptions{
		MaxAttempts: 3, // counts failures other than 429 only
		OnRetry: func(e azure.RetryEvent) {
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		},
	}})
	page, err := r.ReadPage(context.Background(), name, store.Query{}, store.Cursor{})
	if err != nil {
		t.Fatalf("ReadPage through 40 429s: %v", err)
	}
	if len(page.Rows) != 1 || p.Injected(faultproxy.Throttle) != 40 {
		t.Errorf("%d rows after %d 429s, want 1 after 40", len(page.Rows), p.Injected(faultproxy.Throttle))
	}
	if len(events) != 40 || events[0].Wait != time.Millisecond || !strings.Contains(events[0].Cause, "429") ||
		!strings.HasPrefix(events[0].Op, "Table Storage GET ") || strings.Contains(events[0].Op, "?") {
		t.Errorf("%d retry events, first %+v; want 40, each waiting the 1ms asked, naming the request without its query", len(events), events[0])
	}
}

// Transient failures other than 429 are retried until the timeout, then
// the error wraps ErrRetriesExhausted, names the table request and says
// what the last attempt got.
func TestTableReaderGivesUpAfterTheTimeout(t *testing.T) {
	name, acct, p := tableThroughProxy(t, faultproxy.Rule{Kind: faultproxy.Unavailable, Share: 1})
	r := azure.NewTableReader(acct, azure.Options{Retry: azure.RetryOptions{Timeout: 300 * time.Millisecond, BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond}})
	start := time.Now()
	_, err := r.ReadPage(context.Background(), name, store.Query{}, store.Cursor{})
	if !errors.Is(err, store.ErrRetriesExhausted) || !strings.Contains(err.Error(), "503 Service Unavailable") ||
		!strings.Contains(err.Error(), "--retry-timeout 300ms") {
		t.Fatalf("err = %v; want ErrRetriesExhausted naming the 503 and the timeout", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("gave up after %v", d)
	}
	if n := p.Injected(faultproxy.Unavailable); n < 3 {
		t.Errorf("%d attempts; want several before giving up", n)
	}
}

// SingleAttempt sends a request once, whatever it gets.
func TestSingleAttemptIsNotRetried(t *testing.T) {
	name, acct, p := tableThroughProxy(t, faultproxy.Rule{Kind: faultproxy.Unavailable, Share: 1})
	r := azure.NewTableReader(acct, azure.Options{})
	_, err := r.ReadPage(azure.SingleAttempt(context.Background()), name, store.Query{}, store.Cursor{})
	if err == nil || p.Injected(faultproxy.Unavailable) != 1 {
		t.Errorf("err %v after %d attempts; want the 503 after 1", err, p.Injected(faultproxy.Unavailable))
	}
}
