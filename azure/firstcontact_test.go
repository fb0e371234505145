package azure_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/store"
)

// The first-contact rule (azure.AtFirstContact) of a command's start-up
// checks: a busy endpoint is tried again until the check's deadline; one
// that cannot be reached, refuses the credentials or fails the TLS
// handshake is not.

// retries collects the retry events of a FirstContact.
type retries struct {
	mu     sync.Mutex
	events []azure.RetryEvent
}

func (r *retries) add(e azure.RetryEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *retries) kinds() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s []string
	for _, e := range r.events {
		s = append(s, fmt.Sprintf("%s/%d", e.Fault.Kind, e.Fault.Status))
	}
	return strings.Join(s, " ")
}

// firstContact returns ctx at first contact with a deadline d from now,
// its retries heard by r.
func firstContact(d time.Duration, r *retries) context.Context {
	return azure.AtFirstContact(context.Background(), azure.FirstContact{Deadline: time.Now().Add(d), OnRetry: r.add})
}

// emptyTables answers every request as Table Storage answers a query of
// an empty table, and counts the requests.
func emptyTables(t *testing.T, status int) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, `{"value":[]}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// A 503, then a connection closed without an answer: both are tried
// again, each heard by OnRetry, and the read succeeds.
func TestFirstContactWaitsForABusyEndpoint(t *testing.T) {
	up, _ := emptyTables(t, http.StatusOK)
	p, err := faultproxy.Start(faultproxy.Config{Target: up.URL, First: []faultproxy.Kind{faultproxy.Unavailable, faultproxy.CloseBefore}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	r := azure.NewTableReader(azure.StorageAccount{Name: "acct", Key: "a2V5", TableEndpoint: p.URL() + "acct"}, azure.Options{})
	var heard retries
	if _, err := r.ReadPage(firstContact(20*time.Second, &heard), "T", store.Query{}, store.Cursor{}); err != nil {
		t.Fatalf("ReadPage after a 503 and a closed connection: %v", err)
	}
	if got, want := heard.kinds(), "transient/503 transient/0"; got != want {
		t.Errorf("retries %q, want %q", got, want)
	}
	if p.Forwarded() != 1 {
		t.Errorf("%d requests reached the service, want 1", p.Forwarded())
	}
}

// A refused connection, refused credentials and a certificate that does
// not verify (a self-signed one, on a host name that is not an
// emulator's) end the check at its first attempt; at work, the same
// refused connection is tried again.
func TestFirstContactFailsAtOnceWhenUnreachableOrRefused(t *testing.T) {
	closed := testenv.ClosedPort(t)
	unauthorized, requests := emptyTables(t, http.StatusUnauthorized)
	var conns atomic.Int32
	selfSigned := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	selfSigned.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	selfSigned.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is the point
	selfSigned.StartTLS()
	t.Cleanup(selfSigned.Close)
	// The verifying transport of every endpoint but an emulator's on
	// loopback, with tables.bifrost.test reached at the test's server.
	verifying := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, selfSigned.Listener.Addr().String())
	}}
	for _, c := range []struct {
		name, endpoint string
		transport      http.RoundTripper
		kind           store.FaultKind
		tls            store.TLSFailure
		attempts       *atomic.Int32
	}{
		{"closed port", "http://" + closed + "/acct", nil, store.Unreachable, store.NoTLSFailure, nil},
		{"401", unauthorized.URL + "/acct", nil, store.Auth, store.NoTLSFailure, requests},
		{"self-signed certificate", "https://tables.bifrost.test/acct", verifying, store.Unreachable, store.TLSUntrusted, &conns},
	} {
		r := azure.NewTableReader(azure.StorageAccount{Name: "acct", Key: "a2V5", TableEndpoint: c.endpoint}, azure.Options{Transport: c.transport})
		var heard retries
		_, err := r.ReadPage(firstContact(20*time.Second, &heard), "T", store.Query{}, store.Cursor{})
		f := azure.FaultOf(err)
		if f == nil || f.Kind != c.kind || f.TLS != c.tls || len(heard.events) != 0 {
			t.Errorf("%s: %v (fault %+v) after %d retries; want %s, TLS %d, at once", c.name, err, f, len(heard.events), c.kind, c.tls)
		}
		if c.attempts != nil && c.attempts.Load() != 1 {
			t.Errorf("%s: %d attempts, want 1", c.name, c.attempts.Load())
		}
	}

	var atWork retries
	r := azure.NewTableReader(azure.StorageAccount{Name: "acct", Key: "a2V5", TableEndpoint: "http://" + closed + "/acct"},
		azure.Options{Retry: azure.RetryOptions{Timeout: 300 * time.Millisecond, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond, OnRetry: atWork.add}})
	if _, err := r.ReadPage(context.Background(), "T", store.Query{}, store.Cursor{}); store.KindOf(err) != store.Unreachable || len(atWork.events) == 0 {
		t.Errorf("at work, a refused connection: %v after %d retries; want it tried again", err, len(atWork.events))
	}
}

// An endpoint that stays busy is tried until the check's deadline, not
// until --retry-timeout, and the error says which bound ended it.
func TestFirstContactEndsAtItsDeadline(t *testing.T) {
	busy, requests := emptyTables(t, http.StatusServiceUnavailable)
	r := azure.NewTableReader(azure.StorageAccount{Name: "acct", Key: "a2V5", TableEndpoint: busy.URL + "/acct"}, azure.Options{})
	var heard retries
	start := time.Now()
	_, err := r.ReadPage(firstContact(time.Second, &heard), "T", store.Query{}, store.Cursor{})
	if !errors.Is(err, store.ErrRetriesExhausted) || !strings.Contains(err.Error(), "the start-up check's deadline") {
		t.Errorf("err = %v; want ErrRetriesExhausted naming the start-up check's deadline", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("gave up after %v, long past its deadline of 1 s", d)
	}
	if requests.Load() < 2 {
		t.Errorf("%d attempts; want the 503 tried again", requests.Load())
	}
}

// The Cosmos DB client reads the account (GET /) before its first
// request and keeps a failed read for minutes: at first contact that
// read is tried again too, so a 503 and a closed connection at the
// account's front end do not end the check.
func TestFirstContactRetriesTheCosmosAccountRead(t *testing.T) {
	acct := testenv.Cosmos(t)
	p, err := faultproxy.Start(faultproxy.Config{Target: acct.Endpoint, First: []faultproxy.Kind{faultproxy.Unavailable, faultproxy.CloseBefore}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	acct.Endpoint = p.URL()
	client, err := azure.NewCosmosClient(acct, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var heard retries
	if _, err := azure.NewProvisionCosmos(client).DatabaseExists(firstContact(20*time.Second, &heard), testenv.Name("db")); err != nil {
		t.Fatalf("the check after a 503 and a closed connection: %v", err)
	}
	if got, want := heard.kinds(), "transient/503 transient/0"; got != want {
		t.Errorf("retries %q, want %q", got, want)
	}
	if _, err := azure.NewProvisionCosmos(client).DatabaseExists(context.Background(), testenv.Name("db")); err != nil {
		t.Errorf("the client after its first contact: %v", err)
	}
}
