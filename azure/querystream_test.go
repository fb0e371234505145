package azure_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/store"
)

// queryAccount is a Cosmos DB account over HTTP whose container "c" of
// database "db" holds docs: it answers a query of it page by page as the
// service does (x-ms-max-item-count docs a page, x-ms-continuation), each
// doc written and flushed on its own, so that the client can read a page
// while it is being sent.
type queryAccount struct {
	srv  *httptest.Server
	docs []string
	// cut, when not nil, is asked before each doc of each attempt at a
	// page (the nth query request, the doc's index in the page) whether
	// to end the body there, as a dropped connection does.
	cut func(request, doc int) bool
	// hold, when not nil, is waited for after the first doc of the first
	// page is flushed (at most 30 s).
	hold chan struct{}
	// answer, when not "", is the body of every query's answer.
	answer string

	mu       sync.Mutex
	auths    []string // the Authorization of each query request
	held     bool     // the first doc was handed on while the page waited
	requests int
}

func newQueryAccount(t *testing.T, n int) *queryAccount {
	t.Helper()
	a := &queryAccount{}
	for i := range n {
		// Each doc written as the service writes it, and one with white
		// space and escapes, which is handed on as it is.
		a.docs = append(a.docs, fmt.Sprintf(`{"id":"d%03d","scope":"s","n":%d,"_rid":"r%d","_ts":1764000000}`, i, i, i))
	}
	a.docs[1] = `{ "id" : "d001", "scope":"s", "t":"\u00e9\n", "n":1.50 }`
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *queryAccount) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodGet && r.URL.Path == "/" {
		u := a.srv.URL + "/"
		fmt.Fprintf(w, `{"id":"acct","writableLocations":[{"name":"local","databaseAccountEndpoint":%q}],"readableLocations":[{"name":"local","databaseAccountEndpoint":%q}],"enableMultipleWriteLocations":false}`, u, u)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/dbs/db/colls/c/docs" || !strings.EqualFold(r.Header.Get("x-ms-documentdb-query"), "true") {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"code":"NotFound","message":"no %s %s here"}`, r.Method, r.URL.Path)
		return
	}
	a.mu.Lock()
	a.requests++
	request := a.requests
	a.auths = append(a.auths, r.Header.Get("Authorization"))
	a.mu.Unlock()
	w.Header().Set("x-ms-request-charge", "2.5")
	if a.answer != "" {
		fmt.Fprint(w, a.answer)
		return
	}
	from, _ := strconv.Atoi(r.Header.Get("x-ms-continuation"))
	limit, _ := strconv.Atoi(r.Header.Get("x-ms-max-item-count"))
	end := min(len(a.docs), from+limit)
	if end < len(a.docs) {
		w.Header().Set("x-ms-continuation", strconv.Itoa(end))
	}
	fmt.Fprint(w, `{"_rid":"coll","Documents":[`)
	for i := from; i < end; i++ {
		if a.cut != nil && a.cut(request, i-from) {
			panic(http.ErrAbortHandler) // the connection ends mid-body
		}
		if i > from {
			fmt.Fprint(w, ",")
		}
		fmt.Fprint(w, a.docs[i])
		w.(http.Flusher).Flush()
		if i == 0 && a.hold != nil {
			select {
			case <-a.hold:
				a.mu.Lock()
				a.held = true
				a.mu.Unlock()
			case <-time.After(30 * time.Second):
			}
		}
	}
	fmt.Fprintf(w, `],"_count":%d}`, end-from)
}

// reader returns a DocReader of the account, with a key unless entra,
// quick retries that it records (o's MaxAttempts, 4 when 0), and o's
// pacer. (The SDK tries a read whose connection dropped again three
// times itself, a second apart, within each of these attempts.)
func (a *queryAccount) reader(t *testing.T, entra bool, o azure.Options, heard *retries) *azure.DocReader {
	t.Helper()
	acct := azure.CosmosAccount{Endpoint: a.srv.URL + "/", Key: "c2VjcmV0LWtleS1vZi10aGUtdGVzdA=="}
	if entra {
		acct.Key, o.Credential = "", &fakeCredential{}
	}
	attempts := o.Retry.MaxAttempts
	if attempts == 0 {
		attempts = 4
	}
	o.Retry = azure.RetryOptions{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, MaxAttempts: attempts, OnRetry: heard.add}
	client, err := azure.NewCosmosClient(acct, o)
	if err != nil {
		t.Fatal(err)
	}
	r, err := azure.NewDocReader(client, "db")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// collect queries the container in pages of 4 and returns the docs.
func collect(r *azure.DocReader, fn func(i int, doc []byte) error) ([]string, error) {
	var got []string
	err := r.QueryAll(context.Background(), "c", "SELECT * FROM c", nil, 4, func(doc []byte) error {
		got = append(got, string(doc))
		if fn != nil {
			return fn(len(got)-1, doc)
		}
		return nil
	})
	return got, err
}

// A query's page is read doc by doc: the first doc reaches the caller
// while the rest of its page is still on its way, every doc exactly as
// the service wrote it, each in a slice of its own; the pages follow the
// continuation.
func TestQueryAllHandsOnEachDocAsItArrives(t *testing.T) {
	a := newQueryAccount(t, 10)
	a.hold = make(chan struct{})
	var heard retries
	got, err := collect(a.reader(t, false, azure.Options{}, &heard), func(i int, doc []byte) error {
		if i == 0 {
			close(a.hold)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !a.held {
		t.Error("the first doc was not handed on while the rest of its page was still to come")
	}
	if strings.Join(got, "\n") != strings.Join(a.docs, "\n") {
		t.Errorf("docs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(a.docs, "\n"))
	}
	if a.requests != 3 || heard.kinds() != "" {
		t.Errorf("%d query requests for 10 docs in pages of 4, retries %q; want 3 and none", a.requests, heard.kinds())
	}
}

// A page whose body breaks off is read again, by the retry rule, and its
// docs reach the caller once each; one that breaks off every time ends
// the query once the retry rule gives up.
func TestQueryAllReadsAPageAgainAfterItsBodyBreaks(t *testing.T) {
	a := newQueryAccount(t, 10)
	// The second page's first attempt ends after two of its docs.
	a.cut = func(request, doc int) bool { return request == 2 && doc == 2 }
	var heard retries
	got, err := collect(a.reader(t, false, azure.Options{}, &heard), nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "\n") != strings.Join(a.docs, "\n") {
		t.Errorf("docs:\n%s\nwant each once, in order:\n%s", strings.Join(got, "\n"), strings.Join(a.docs, "\n"))
	}
	if a.requests < 4 {
		t.Errorf("%d query requests: the broken page was not read again", a.requests)
	}

	b := newQueryAccount(t, 10)
	b.cut = func(request, doc int) bool { return request > 1 && doc == 1 }
	got, err = collect(b.reader(t, false, azure.Options{Retry: azure.RetryOptions{MaxAttempts: 1}}, &heard), nil)
	if !errors.Is(err, store.ErrRetriesExhausted) {
		t.Fatalf("a page that breaks off every time: %v, want retries exhausted", err)
	}
	if len(got) != 5 {
		t.Errorf("%d docs handed on before the query failed, want the first page and one doc: %v", len(got), got)
	}
}

// The caller's error ends the query at once, returned as it is: no
// request is sent again.
func TestQueryAllStopsAtTheCallersError(t *testing.T) {
	a := newQueryAccount(t, 10)
	stop := errors.New("the caller's own failure")
	var heard retries
	got, err := collect(a.reader(t, false, azure.Options{}, &heard), func(i int, _ []byte) error {
		if i == 2 {
			return stop
		}
		return nil
	})
	if err != stop {
		t.Fatalf("error %v, want the caller's own", err)
	}
	if len(got) != 3 || a.requests != 1 || heard.kinds() != "" {
		t.Errorf("%d docs, %d requests, retries %q; want 3, 1 and none", len(got), a.requests, heard.kinds())
	}
}

// An answer that is not a page of docs is an answer in a form that is
// not the service's, and is not asked again.
func TestQueryAllUnreadableAnswer(t *testing.T) {
	for _, answer := range []string{`<html>busy</html>`, `["not","a","page"]`} {
		a := newQueryAccount(t, 3)
		a.answer = answer
		var heard retries
		_, err := collect(a.reader(t, false, azure.Options{}, &heard), nil)
		var re *azure.ResourceError
		if !azure.Unreadable(err) || !errors.As(err, &re) || a.requests != 1 {
			t.Errorf("answer %s: error %v (unreadable %v), %d requests; want an unreadable *ResourceError after 1", answer, err, azure.Unreadable(err), a.requests)
		}
	}
}

// The query's requests are the SDK's, signed as it signs every request —
// with the account key, or with a Microsoft Entra ID token — and paced
// and counted by the pacer.
func TestQueryAllIsSignedAndPaced(t *testing.T) {
	for _, entra := range []bool{false, true} {
		a := newQueryAccount(t, 10)
		p := azure.NewPacer(azure.PacerOptions{MaxRU: 1000})
		var heard retries
		if _, err := collect(a.reader(t, entra, azure.Options{Pacer: p}, &heard), nil); err != nil {
			t.Fatal(err)
		}
		want := "type%3Dmaster%26ver%3D1.0%26sig%3D"
		if entra {
			want = "type=aad&ver=1.0&sig=stand-in-token"
		}
		for _, auth := range a.auths {
			if !strings.HasPrefix(auth, want) || (!entra && len(auth) < len(want)+40) {
				t.Errorf("entra %v: query request authorized by %q, want %s…", entra, auth, want)
			}
		}
		if s := p.Stats(); s.ByContainer["c"] != 7.5 || s.Requests < 3 {
			t.Errorf("entra %v: pacer counted %+v, want 7.5 RU on container c in 3 queries", entra, s)
		}
	}
}

// Through the fault proxy, against the stand-in: a query whose pages meet
// a 503 and a dropped connection gets every doc once.
func TestDocReaderQueryAllThroughFaults(t *testing.T) {
	_, dbName := newDocContainer(t, 25)
	acct := testenv.Cosmos(t)
	p, err := faultproxy.Start(faultproxy.Config{
		Target: acct.Endpoint,
		Rules:  []faultproxy.Rule{{Kind: faultproxy.Unavailable, Share: 1, Count: 1}, {Kind: faultproxy.DropAfter, Share: 1, Count: 1}},
		Match: func(r *http.Request) bool {
			return r.Method == http.MethodPost && strings.EqualFold(r.Header.Get("x-ms-documentdb-query"), "true")
		},
		DocKey: func(r *http.Request, _ []byte) string { return r.Header.Get("x-ms-continuation") },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	acct.Endpoint = p.URL()
	var heard retries
	c, err := azure.NewCosmosClient(acct, azure.Options{Retry: azure.RetryOptions{BaseDelay: time.Millisecond, OnRetry: heard.add}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := azure.NewDocReader(c, dbName)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	err = r.QueryAll(context.Background(), "docs", "SELECT * FROM c", nil, 10, func(doc []byte) error {
		i := strings.Index(string(doc), `"id":"`)
		seen[string(doc[i+6:i+10])]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 25 {
		t.Errorf("%d docs, want 25: %v", len(seen), seen)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("doc %s handed on %d times", id, n)
		}
	}
	if p.Injected(faultproxy.Unavailable) != 1 || p.Injected(faultproxy.DropAfter) != 1 {
		t.Errorf("faults injected: %v, want a 503 and a dropped connection", p.Counts())
	}
}
