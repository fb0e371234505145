package azure_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"golang.org/x/sync/errgroup"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
	"github.com/bifrost/bifrost-migrate/internal/recorder"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/store"
)

// cosmosFixture is a fresh database with container "entities" (partition
// key /scope) on the Cosmos DB stand-in, a direct client to check results,
// and optionally a fault proxy in front of it.
type cosmosFixture struct {
	direct *azcosmos.Client
	db     string
	proxy  *faultproxy.Proxy
	rec    *recorder.Transport
	// sleeps records every wait the retry loop asked for.
	mu     sync.Mutex
	sleeps []time.Duration
}

func newCosmosFixture(t *testing.T, faults *faultproxy.Config) *cosmosFixture {
	t.Helper()
	ctx := context.Background()
	acct := testenv.Cosmos(t)
	direct, err := azure.NewCosmosClient(acct, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := &cosmosFixture{direct: direct, db: testenv.Name("docs")}
	if _, err := direct.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: f.db}, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if d, err := direct.NewDatabase(f.db); err == nil {
			_, _ = d.Delete(context.Background(), nil)
		}
	})
	d, _ := direct.NewDatabase(f.db)
	if _, err := d.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "entities",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/scope"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if faults != nil {
		cfg := *faults
		cfg.Target = acct.Endpoint
		p, err := faultproxy.Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		f.proxy = p
		acct.Endpoint = p.URL()
	}
	f.rec = recorder.New(nil)
	return f
}

// docs returns a CosmosDocs through the proxy (if any) with fast backoff
// and a recording sleep that really sleeps.
func (f *cosmosFixture) docs(t *testing.T, o azure.RetryOptions) *azure.CosmosDocs {
	t.Helper()
	acct := testenv.Cosmos(t)
	if f.proxy != nil {
		acct.Endpoint = f.proxy.URL()
	}
	c, err := azure.NewCosmosClient(acct, azure.Options{Transport: f.rec})
	if err != nil {
		t.Fatal(err)
	}
	if o.BaseDelay == 0 {
		o.BaseDelay = time.Millisecond
	}
	if o.MaxDelay == 0 {
		o.MaxDelay = 5 * time.Millisecond
	}
	if o.Sleep == nil {
		o.Sleep = func(ctx context.Context, d time.Duration) error {
			f.mu.Lock()
			f.sleeps = append(f.sleeps, d)
			f.mu.Unlock()
			tm := time.NewTimer(d)
			defer tm.Stop()
			select {
			case <-tm.C:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return azure.NewCosmosDocs(c, f.db, &o)
}

func (f *cosmosFixture) readDirect(t *testing.T, scope, id string) map[string]any {
	t.Helper()
	c, _ := f.direct.NewContainer(f.db, "entities")
	r, err := c.ReadItem(context.Background(), azcosmos.NewPartitionKeyString(scope), id, nil)
	if err != nil {
		t.Fatalf("read %s back: %v", id, err)
	}
	return withoutSystem(t, r.Value)
}

func withoutSystem(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"_rid", "_self", "_etag", "_ts", "_attachments"} {
		delete(m, k)
	}
	return m
}

func testDoc(id, scope string, n int) []byte {
	return fmt.Appendf(nil, `{"id":%q,"scope":%q,"type":"config","n":%d,"nested":{"s":"é\u2028","f":5.5,"list":[1,"two",null,true]}}`, id, scope, n)
}

// Through the fault proxy every upsert succeeds, and what is stored is what
// was written, although the proxy threw every kind of fault at them.
func TestCosmosDocsUpsertSurvivesInjectedFaults(t *testing.T) {
	f := newCosmosFixture(t, &faultproxy.Config{
		Seed:      1,
		MaxPerDoc: 8,
		Rules: []faultproxy.Rule{
			{Kind: faultproxy.Throttle, Share: 0.15, Run: 4, RetryAfter: 3 * time.Millisecond},
			{Kind: faultproxy.Unavailable, Share: 0.1},
			{Kind: faultproxy.Timeout, Share: 0.1},
			{Kind: faultproxy.RetryWith, Share: 0.1},
			{Kind: faultproxy.DropBefore, Share: 0.05},
			{Kind: faultproxy.DropAfter, Share: 0.1},
		},
	})
	w := f.docs(t, azure.RetryOptions{MaxAttempts: 20})
	const n = 80
	g, ctx := errgroup.WithContext(context.Background())
	g.SetLimit(16)
	charges := make([]float64, n)
	for i := range n {
		g.Go(func() error {
			id, scope := fmt.Sprintf("doc-%03d", i), fmt.Sprintf("org-%d", i%5)
			res, err := w.Upsert(ctx, "entities", scope, id, testDoc(id, scope, i))
			if err != nil {
				return fmt.Errorf("upsert %s: %w", id, err)
			}
			charges[i] = res.RequestCharge
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []faultproxy.Kind{faultproxy.Throttle, faultproxy.Unavailable, faultproxy.Timeout,
		faultproxy.RetryWith, faultproxy.DropBefore, faultproxy.DropAfter} {
		if f.proxy.Injected(k) == 0 {
			t.Errorf("no %v injected; counts %v", k, f.proxy.Counts())
		}
	}
	if s := f.proxy.MaxStreak(faultproxy.Throttle); s < 4 {
		t.Errorf("longest run of 429s for one doc = %d, want ≥ 4", s)
	}
	for i := range n {
		id, scope := fmt.Sprintf("doc-%03d", i), fmt.Sprintf("org-%d", i%5)
		got := f.readDirect(t, scope, id)
		want := withoutSystem(t, testDoc(id, scope, i))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s stored as %v, want %v", id, got, want)
		}
		if charges[i] < 1 {
			t.Errorf("%s: RequestCharge %v, want ≥ 1", id, charges[i])
		}
	}
	t.Logf("injected %v", f.proxy.Counts())
}

// One doc gets, in a row: a 429 asking for 2 s, four more 429s, then 503,
// 408, 449, a reset before and a reset after the write, and an EOF. Our loop must wait
// exactly what the service asked, and the proxy must see exactly one
// request per attempt of our loop: the SDK retried nothing by itself
// (azcore would have retried the 429s up to 3 times).
func TestCosmosDocsRetryLoopIsTheOnlyOneRetrying(t *testing.T) {
	f := newCosmosFixture(t, &faultproxy.Config{
		FaultCharge: 0.25,
		Rules: []faultproxy.Rule{
			{Kind: faultproxy.Throttle, Share: 1, Count: 1, RetryAfter: 2 * time.Second},
			{Kind: faultproxy.Throttle, Share: 1, Count: 4, Run: 4, RetryAfter: 7 * time.Millisecond},
			{Kind: faultproxy.Unavailable, Share: 1, Count: 1},
			{Kind: faultproxy.Timeout, Share: 1, Count: 1},
			{Kind: faultproxy.RetryWith, Share: 1, Count: 1},
			{Kind: faultproxy.DropBefore, Share: 1, Count: 1},
			{Kind: faultproxy.DropAfter, Share: 1, Count: 1},
			{Kind: faultproxy.CloseBefore, Share: 1, Count: 1},
		},
	})
	w := f.docs(t, azure.RetryOptions{MaxAttempts: 12})
	doc := testDoc("one", "GLOBAL", 1)
	res, err := w.Upsert(context.Background(), "entities", "GLOBAL", "one", doc)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.proxy.Requests("one"); got != 12 || len(f.sleeps) != 11 {
		t.Fatalf("proxy saw %d requests, our loop waited %d times; want 12 and 11", got, len(f.sleeps))
	}
	want := []time.Duration{2 * time.Second, 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond}
	if !reflect.DeepEqual(f.sleeps[:5], want) {
		t.Errorf("waits after the 429s = %v, want %v", f.sleeps[:5], want)
	}
	for i, d := range f.sleeps[5:] {
		if d < 0 || d > 5*time.Millisecond {
			t.Errorf("backoff %d = %v, want within [0, MaxDelay 5ms]", i, d)
		}
	}
	// 8 made-up answers at 0.25 RU plus the stand-in's 1 RU for the final
	// write (the reset-after-write attempt's charge never reached us).
	if res.RequestCharge != 8*0.25+1 {
		t.Errorf("RequestCharge = %v, want 3", res.RequestCharge)
	}
	if !reflect.DeepEqual(f.readDirect(t, "GLOBAL", "one"), withoutSystem(t, doc)) {
		t.Errorf("doc not stored as written")
	}
}

// azcore gives up at once on a Retry-After longer than its MaxRetryDelay
// (60 s); our loop waits it out. The sleep is recorded, not slept.
func TestCosmosDocsHonoursRetryAfterBeyondTheSDKMaximum(t *testing.T) {
	f := newCosmosFixture(t, &faultproxy.Config{Rules: []faultproxy.Rule{
		{Kind: faultproxy.Throttle, Share: 1, Count: 2, Run: 2, RetryAfter: 90 * time.Second}}})
	var waits []time.Duration
	w := f.docs(t, azure.RetryOptions{Sleep: func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}})
	if _, err := w.Upsert(context.Background(), "entities", "GLOBAL", "x", testDoc("x", "GLOBAL", 0)); err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{90 * time.Second, 90 * time.Second}; !reflect.DeepEqual(waits, want) || f.proxy.Requests("x") != 3 {
		t.Errorf("waits %v over %d requests, want %v over 3", waits, f.proxy.Requests("x"), want)
	}
}

func TestCosmosDocsRefusalIsNotRetried(t *testing.T) {
	f := newCosmosFixture(t, nil)
	w := f.docs(t, azure.RetryOptions{})
	_, err := w.Upsert(context.Background(), "entities", "GLOBAL", "", []byte(`{"scope":"GLOBAL","secret":"do-not-echo"}`))
	pe := store.FaultOf(err)
	if pe == nil || pe.Kind != store.Refused {
		t.Fatalf("err = %v (%T), want a Refused fault", err, err)
	}
	if pe.Status != 400 || pe.Error() != "cosmos upsert: 400 Bad Request: missing id" {
		t.Errorf("got %d %q", pe.Status, pe.Error())
	}
	if n := len(f.rec.Writes()); n != 1 {
		t.Errorf("%d write requests, want 1 (no retry)", n)
	}
	if errors.Is(err, store.ErrRetriesExhausted) || strings.Contains(err.Error(), "do-not-echo") {
		t.Errorf("bad error %q", err)
	}
}

func TestCosmosDocsGivesUpAfterMaxAttempts(t *testing.T) {
	f := newCosmosFixture(t, &faultproxy.Config{Rules: []faultproxy.Rule{{Kind: faultproxy.Unavailable, Share: 1}}})
	w := f.docs(t, azure.RetryOptions{MaxAttempts: 3})
	_, err := w.Upsert(context.Background(), "entities", "GLOBAL", "x", testDoc("x", "GLOBAL", 0))
	if !errors.Is(err, store.ErrRetriesExhausted) || store.KindOf(err) != store.Transient {
		t.Fatalf("err = %v (%s), want ErrRetriesExhausted of a Transient fault", err, store.KindOf(err))
	}
	if !strings.Contains(err.Error(), "after 3 attempts") || !strings.Contains(err.Error(), "503 Service Unavailable") {
		t.Errorf("err = %q", err)
	}
	// The last answer and the container come with it.
	var re *azcore.ResponseError
	var res *azure.ResourceError
	if !errors.As(err, &re) || re.StatusCode != http.StatusServiceUnavailable || !errors.As(err, &res) || res.Name != f.db+"/entities" {
		t.Errorf("err = %v, want the last 503 answer and container %s/entities", err, f.db)
	}
	if n := f.proxy.Requests("x"); n != 3 {
		t.Errorf("proxy saw %d requests, want 3", n)
	}
}

// A retry-after that would end past the Timeout is not waited for.
func TestCosmosDocsGivesUpWhenTheWaitExceedsTheTimeout(t *testing.T) {
	f := newCosmosFixture(t, &faultproxy.Config{Rules: []faultproxy.Rule{
		{Kind: faultproxy.Throttle, Share: 1, RetryAfter: time.Hour}}})
	w := f.docs(t, azure.RetryOptions{Timeout: time.Minute})
	_, err := w.Upsert(context.Background(), "entities", "GLOBAL", "x", testDoc("x", "GLOBAL", 0))
	if !errors.Is(err, store.ErrRetriesExhausted) || !strings.Contains(err.Error(), "429 Too Many Requests") {
		t.Fatalf("err = %v", err)
	}
	if len(f.sleeps) != 0 || f.proxy.Requests("x") != 1 {
		t.Errorf("waited %v over %d requests; want no wait, 1 request", f.sleeps, f.proxy.Requests("x"))
	}
}

// Cancelling the context ends a long retry-after wait (the default sleep).
func TestCosmosDocsCancelEndsTheWait(t *testing.T) {
	f := newCosmosFixture(t, &faultproxy.Config{Rules: []faultproxy.Rule{
		{Kind: faultproxy.Throttle, Share: 1, RetryAfter: time.Hour}}})
	acct := testenv.Cosmos(t)
	acct.Endpoint = f.proxy.URL()
	c, err := azure.NewCosmosClient(acct, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := azure.NewCosmosDocs(c, f.db, &azure.RetryOptions{Timeout: 2 * time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for f.proxy.Injected(faultproxy.Throttle) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err = w.Upsert(ctx, "entities", "GLOBAL", "x", testDoc("x", "GLOBAL", 0))
	if !errors.Is(err, context.Canceled) || errors.Is(err, store.ErrRetriesExhausted) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := f.proxy.Requests("x"); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestCosmosDocsReadCreateReplaceDelete(t *testing.T) {
	ctx := context.Background()
	f := newCosmosFixture(t, nil)
	w := f.docs(t, azure.RetryOptions{})

	_, _, found, charge, err := w.Read(ctx, "entities", "org-1", "missing")
	if err != nil || found {
		t.Fatalf("Read missing: found=%v err=%v", found, err)
	}
	// The stand-in answers 500 without the cross-partition header, which
	// both the SDK (once) and our loop would retry: one GET proves the 404.
	if n := f.rec.Count(http.MethodGet) - f.rec.CountPath(http.MethodGet, "/"); n != 1 || charge <= 0 {
		t.Errorf("Read missing: %d GETs of docs (want 1), charge %v", n, charge)
	}

	doc1 := testDoc("a", "org-1", 1)
	created, err := w.Create(ctx, "entities", "org-1", "a", doc1)
	if err != nil || created.ETag == "" {
		t.Fatalf("Create: %+v %v", created, err)
	}
	if _, err := w.Create(ctx, "entities", "org-1", "a", doc1); store.KindOf(err) != store.Exists {
		t.Fatalf("second Create: %v, want Exists", err)
	}
	got, etag, found, _, err := w.Read(ctx, "entities", "org-1", "a")
	if err != nil || !found || etag != created.ETag || !reflect.DeepEqual(withoutSystem(t, got), withoutSystem(t, doc1)) {
		t.Fatalf("Read: found=%v etag=%q (created %q) err=%v doc=%s", found, etag, created.ETag, err, got)
	}

	doc2 := testDoc("a", "org-1", 2)
	if _, err := w.Replace(ctx, "entities", "org-1", "a", doc2, `"stale"`); store.KindOf(err) != store.Changed {
		t.Fatalf("Replace with a stale etag: %v, want Changed", err)
	}
	replaced, err := w.Replace(ctx, "entities", "org-1", "a", doc2, etag)
	if err != nil || replaced.ETag == "" || replaced.ETag == etag {
		t.Fatalf("Replace: %+v %v", replaced, err)
	}
	if !reflect.DeepEqual(f.readDirect(t, "org-1", "a"), withoutSystem(t, doc2)) {
		t.Errorf("Replace did not store the new doc")
	}
	if _, err := w.Replace(ctx, "entities", "org-1", "nope", testDoc("nope", "org-1", 0), ""); store.KindOf(err) != store.NotFound {
		t.Errorf("Replace missing: %v, want NotFound", err)
	}

	if _, err := w.Delete(ctx, "entities", "org-1", "a", etag); store.KindOf(err) != store.Changed {
		t.Fatalf("Delete with the old etag: %v, want Changed", err)
	}
	if _, err := w.Delete(ctx, "entities", "org-1", "a", replaced.ETag); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, _, found, _, err := w.Read(ctx, "entities", "org-1", "a"); err != nil || found {
		t.Fatalf("Read after Delete: found=%v err=%v", found, err)
	}
	if _, err := w.Delete(ctx, "entities", "org-1", "a", ""); store.KindOf(err) != store.NotFound {
		t.Errorf("second Delete: %v, want NotFound", err)
	}
}

// refuseWrites answers every doc write with the given status, as Cosmos DB
// does for a rotated key (401) or a principal without a data-plane write
// role (403); everything else goes to the Cosmos DB stand-in.
type refuseWrites struct{ status int }

func (r refuseWrites) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/docs") {
		body := `{"code":"Forbidden","message":"Request blocked by Auth"}`
		return &http.Response{StatusCode: r.status, Status: http.StatusText(r.status), Request: req,
			Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)),
			ContentLength: int64(len(body))}, nil
	}
	return http.DefaultTransport.RoundTrip(req)
}

// 401 and 403 concern the account, not the row: they stop the command
// (an Auth fault), not a refusal that would dead-letter every row.
func TestCosmosDocsAccessDeniedIsFatal(t *testing.T) {
	f := newCosmosFixture(t, nil)
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		c, err := azure.NewCosmosClient(testenv.Cosmos(t), azure.Options{Transport: refuseWrites{status}})
		if err != nil {
			t.Fatal(err)
		}
		w := azure.NewCosmosDocs(c, f.db, &azure.RetryOptions{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
		_, err = w.Upsert(context.Background(), "entities", "GLOBAL", "x", testDoc("x", "GLOBAL", 0))
		if store.KindOf(err) != store.Auth || errors.Is(err, store.ErrRetriesExhausted) {
			t.Errorf("%d: err = %v (%T), want an Auth fault, not retried", status, err, err)
		}
		// The service's answer and the container come with it, so that
		// the command can say which role or key is missing, and where.
		var re *azcore.ResponseError
		var res *azure.ResourceError
		if !errors.As(err, &re) || re.StatusCode != status || !errors.As(err, &res) ||
			res.Resource != (azure.Resource{Service: azure.ServiceCosmos, Kind: azure.KindContainer, Name: f.db + "/entities", Endpoint: testenv.Cosmos(t).Endpoint}) {
			t.Errorf("%d: err = %v, want the %d answer and the resource of container %s/entities", status, err, status, f.db)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%d: a message of several lines: %q", status, err)
		}
	}
}

// 429s never count against MaxAttempts: a doc throttled more times than
// that in a row is still written.
func TestCosmosDocsWaitsOut429sBeyondMaxAttempts(t *testing.T) {
	f := newCosmosFixture(t, &faultproxy.Config{Rules: []faultproxy.Rule{
		{Kind: faultproxy.Throttle, Share: 1, Count: 10, Run: 10, RetryAfter: time.Millisecond}}})
	w := f.docs(t, azure.RetryOptions{MaxAttempts: 3})
	if _, err := w.Upsert(context.Background(), "entities", "GLOBAL", "x", testDoc("x", "GLOBAL", 0)); err != nil {
		t.Fatalf("upsert after ten 429s: %v", err)
	}
	if n := f.proxy.Requests("x"); n != 11 {
		t.Errorf("%d requests, want 11", n)
	}
}
