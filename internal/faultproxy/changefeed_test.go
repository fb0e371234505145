package faultproxy_test

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
)

// feedUpstream stands in for the Cosmos DB stand-in's container
// dbs/d/colls/c: it answers the two queries of the proxy (the system
// members of every doc; the docs whose _ts is at or after @ts) two docs
// per page (following x-ms-continuation), in the order they were last
// written, and fails the test on any other query; its
// partition key ranges come in the stand-in's format (a numeric id). It
// fails the test when it receives a change-feed header: the proxy must
// answer those itself.
type feedUpstream struct {
	t   *testing.T
	srv *httptest.Server

	mu   sync.Mutex
	docs []map[string]any // in write order
	rid  int
	etag int
	// bodies counts the docs sent whole (the answers to the query of the
	// docs changed since @ts).
	bodies int
}

func newFeedUpstream(t *testing.T) *feedUpstream {
	t.Helper()
	u := &feedUpstream{t: t}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *feedUpstream) serve(w http.ResponseWriter, r *http.Request) {
	for _, h := range []string{"A-IM", "If-None-Match", "If-Modified-Since", "x-ms-max-item-count", "x-ms-documentdb-partitionkeyrangeid"} {
		if r.Header.Get(h) != "" {
			u.t.Errorf("upstream got %s %s with %s: %q", r.Method, r.URL.Path, h, r.Header.Get(h))
		}
	}
	if r.Header.Get("Authorization") != "sig" {
		u.t.Errorf("upstream got %s %s without the client's Authorization", r.Method, r.URL.Path)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	w.Header().Set("x-ms-request-charge", "1")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/dbs/d/colls/c/pkranges":
		fmt.Fprint(w, `{"PartitionKeyRanges":[{"id":0,"minInclusive":"","maxExclusive":"FF","ridPrefix":0,"throughputFraction":1,"status":"online","parents":[],"_rid":"rid-pkr","_self":"dbs/x/colls/y/pkranges/rid-pkr","_etag":"e","_ts":1}],"_count":1}`)
	case r.Method == http.MethodPost && r.URL.Path == "/dbs/d/colls/c/docs" && r.Header.Get("x-ms-documentdb-isquery") == "True":
		docs, whole, ok := u.query(r)
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		from, _ := strconv.Atoi(r.Header.Get("x-ms-continuation"))
		to := min(from+2, len(docs))
		if to < len(docs) {
			w.Header().Set("x-ms-continuation", strconv.Itoa(to))
		}
		if whole {
			u.bodies += to - from
		}
		b, _ := json.Marshal(map[string]any{"Documents": docs[from:to], "_count": to - from})
		_, _ = w.Write(b)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"code":"NotFound","message":"no such resource"}`)
	}
}

// query answers the proxy's queries (the caller holds mu): the system
// members of every doc, or every doc whose _ts is at or after @ts (whole).
func (u *feedUpstream) query(r *http.Request) (docs []map[string]any, whole, ok bool) {
	var q struct {
		Query      string `json:"query"`
		Parameters []struct {
			Name  string  `json:"name"`
			Value float64 `json:"value"`
		} `json:"parameters"`
	}
	if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
		u.t.Errorf("upstream got a query it cannot read: %v", err)
		return nil, false, false
	}
	switch {
	case q.Query == "SELECT c._rid, c._etag, c._ts, c.id FROM c" && len(q.Parameters) == 0:
		for _, d := range u.docs {
			docs = append(docs, map[string]any{"_rid": d["_rid"], "_etag": d["_etag"], "_ts": d["_ts"], "id": d["id"]})
		}
	case q.Query == "SELECT * FROM c WHERE c._ts >= @ts" && len(q.Parameters) == 1 && q.Parameters[0].Name == "@ts":
		for _, d := range u.docs {
			if float64(d["_ts"].(int64)) >= q.Parameters[0].Value {
				docs = append(docs, d)
			}
		}
		whole = true
	default:
		u.t.Errorf("upstream got the query %+v", q)
		return nil, false, false
	}
	return docs, whole, true
}

// put creates or changes the doc id, last modified at ts (Unix seconds).
func (u *feedUpstream) put(id string, ts int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.etag++
	rid := ""
	for i, d := range u.docs {
		if d["id"] == id {
			rid = d["_rid"].(string)
			u.docs = slices.Delete(u.docs, i, i+1)
			break
		}
	}
	if rid == "" {
		u.rid++
		rid = fmt.Sprintf("rid-%d", u.rid)
	}
	u.docs = append(u.docs, map[string]any{"id": id, "scope": "s", "v": u.etag, "_rid": rid, "_etag": fmt.Sprintf("etag-%d", u.etag), "_ts": ts})
}

func (u *feedUpstream) del(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.docs = slices.DeleteFunc(u.docs, func(d map[string]any) bool { return d["id"] == id })
}

// feedAnswer is what a client saw for one change-feed request.
type feedAnswer struct {
	status    int
	etag      string
	charge    string
	substatus string
	ids       []string
	vs        []float64
}

// readFeed sends one change-feed request for range rng with the given
// extra headers.
func readFeed(t *testing.T, p *faultproxy.Proxy, rng string, hdr map[string]string) feedAnswer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.URL()+"dbs/d/colls/c/docs", nil)
	req.Header.Set("Authorization", "sig")
	req.Header.Set("A-IM", "Incremental feed")
	if rng != "" {
		req.Header.Set("x-ms-documentdb-partitionkeyrangeid", rng)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := feedAnswer{status: resp.StatusCode, etag: resp.Header.Get("etag"), charge: resp.Header.Get("x-ms-request-charge"), substatus: resp.Header.Get("x-ms-substatus")}
	if resp.StatusCode != http.StatusOK {
		return a
	}
	var page struct {
		Documents []struct {
			ID string  `json:"id"`
			V  float64 `json:"v"`
		}
		Count int `json:"_count"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatalf("change feed answer %s: %v", body, err)
	}
	if page.Count != len(page.Documents) {
		t.Errorf("_count %d for %d docs", page.Count, len(page.Documents))
	}
	for _, d := range page.Documents {
		a.ids = append(a.ids, d.ID)
		a.vs = append(a.vs, d.V)
	}
	return a
}

func TestFeedPartitionKeyRangesInTheServiceFormat(t *testing.T) {
	for _, n := range []int{0, 1, 3} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			u := newFeedUpstream(t)
			p := start(t, faultproxy.Config{Target: u.srv.URL, ChangeFeed: &faultproxy.ChangeFeed{Ranges: n}})
			get := func(hdr map[string]string) *http.Response {
				req, _ := http.NewRequest(http.MethodGet, p.URL()+"dbs/d/colls/c/pkranges", nil)
				req.Header.Set("Authorization", "sig")
				for k, v := range hdr {
					req.Header.Set(k, v)
				}
				resp, err := client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				return resp
			}
			resp := get(map[string]string{"A-IM": "Incremental feed", "x-ms-max-item-count": "-1"})
			defer resp.Body.Close()
			var answer struct {
				Ranges []struct {
					ID                         string
					MinInclusive, MaxExclusive string
					Status                     string
					Parents                    []string
					RID                        string `json:"_rid"`
				} `json:"PartitionKeyRanges"`
				Count int `json:"_count"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
				t.Fatalf("the ranges are not in the service's format (string ids): %v", err)
			}
			want := max(n, 1)
			if resp.StatusCode != http.StatusOK || answer.Count != want || len(answer.Ranges) != want {
				t.Fatalf("status %d, %d ranges, _count %d; want 200 and %d", resp.StatusCode, len(answer.Ranges), answer.Count, want)
			}
			prev := ""
			for i, r := range answer.Ranges {
				if r.ID != strconv.Itoa(i) || r.MinInclusive != prev || r.Status != "online" || r.Parents == nil || r.RID != "rid-pkr" {
					t.Errorf("range %d: %+v (previous max %q)", i, r, prev)
				}
				if r.MaxExclusive <= r.MinInclusive {
					t.Errorf("range %d is empty: %+v", i, r)
				}
				prev = r.MaxExclusive
			}
			if prev != "FF" {
				t.Errorf("the last range ends at %q, want FF", prev)
			}
			etag := resp.Header.Get("etag")
			if etag == "" {
				t.Fatal("no etag on the ranges")
			}
			again := get(map[string]string{"A-IM": "Incremental feed", "If-None-Match": etag})
			again.Body.Close()
			if again.StatusCode != http.StatusNotModified || again.Header.Get("etag") != etag {
				t.Errorf("ranges asked again from their etag: %d etag %q, want 304 %q", again.StatusCode, again.Header.Get("etag"), etag)
			}
		})
	}
}

func TestFeedPassesWhatItDoesNotSimulate(t *testing.T) {
	u := newFeedUpstream(t)
	// Without ChangeFeed the stand-in's ranges are forwarded as they are.
	plain := start(t, faultproxy.Config{Target: u.srv.URL})
	req, _ := http.NewRequest(http.MethodGet, plain.URL()+"dbs/d/colls/c/pkranges", nil)
	req.Header.Set("Authorization", "sig")
	resp, err := client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var raw struct{ PartitionKeyRanges []map[string]any }
	if err := json.Unmarshal(b, &raw); err != nil || len(raw.PartitionKeyRanges) != 1 || raw.PartitionKeyRanges[0]["id"] != float64(0) {
		t.Errorf("without ChangeFeed the ranges changed: %s", b)
	}
	// A missing container is the upstream's 404, for ranges and feeds.
	p := start(t, faultproxy.Config{Target: u.srv.URL, ChangeFeed: &faultproxy.ChangeFeed{}})
	for _, path := range []string{"dbs/d/colls/nope/pkranges", "dbs/d/colls/nope/docs"} {
		req, _ := http.NewRequest(http.MethodGet, p.URL()+path, nil)
		req.Header.Set("Authorization", "sig")
		req.Header.Set("A-IM", "Incremental feed")
		resp, err := client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want the upstream's 404", path, resp.StatusCode)
		}
	}
	// What the proxy cannot answer is a 400, never a made-up success.
	for name, hdr := range map[string]map[string]string{
		"continuation": {"If-None-Match": `"abc"`},
		"range":        {"x-ms-documentdb-partitionkeyrangeid": "1"},
		"partition":    {"x-ms-documentdb-partitionkey": `["s"]`},
		"since":        {"If-Modified-Since": "yesterday"},
		"count":        {"x-ms-max-item-count": "many"},
	} {
		if a := readFeed(t, p, "", hdr); a.status != http.StatusBadRequest {
			t.Errorf("%s %v: %d, want 400", name, hdr, a.status)
		}
	}
	if _, err := faultproxy.Start(faultproxy.Config{Target: u.srv.URL, ChangeFeed: &faultproxy.ChangeFeed{Ranges: 65}}); err == nil {
		t.Error("65 ranges accepted")
	}
}

// From the beginning, then from each answer's etag: every doc once, at its
// latest version, in the order of its last change; deletes are not in the
// feed; nothing new is 304 with the same continuation.
func TestFeedSendsEachChangeOnceInOrder(t *testing.T) {
	u := newFeedUpstream(t)
	p := start(t, faultproxy.Config{Target: u.srv.URL, ChangeFeed: &faultproxy.ChangeFeed{}})
	for i, id := range []string{"a", "b", "c", "d", "e"} { // five docs: the upstream answers in three pages
		u.put(id, 1000+int64(i))
	}
	first := readFeed(t, p, "0", nil)
	if first.status != http.StatusOK || fmt.Sprint(first.ids) != "[a b c d e]" {
		t.Fatalf("from the beginning: %d %v, want 200 [a b c d e]", first.status, first.ids)
	}
	idle := readFeed(t, p, "0", map[string]string{"If-None-Match": first.etag})
	if idle.status != http.StatusNotModified || idle.etag != first.etag {
		t.Fatalf("nothing new: %d etag %q, want 304 %q", idle.status, idle.etag, first.etag)
	}
	u.put("b", 2000)
	u.put("f", 2001)
	u.put("b", 2002) // twice between two reads: once, at its latest version
	u.del("c")
	u.put("d", 2003)
	u.del("d") // changed, then deleted: not in the feed
	next := readFeed(t, p, "0", map[string]string{"If-None-Match": idle.etag})
	if next.status != http.StatusOK || fmt.Sprint(next.ids) != "[f b]" {
		t.Fatalf("after the changes: %d %v, want 200 [f b]", next.status, next.ids)
	}
	if next.vs[1] != 8 {
		t.Errorf("b came at version %v, want its latest (8)", next.vs[1])
	}
	if n, _ := strconv.ParseUint(next.etag[1:len(next.etag)-1], 10, 64); next.etag == first.etag || n == 0 {
		t.Errorf("etag %q after changes, first was %q", next.etag, first.etag)
	}
	if a := readFeed(t, p, "0", map[string]string{"If-None-Match": next.etag}); a.status != http.StatusNotModified {
		t.Errorf("after reading everything: %d %v, want 304", a.status, a.ids)
	}
	// The old continuation still gives what followed it; "*" is from now.
	if a := readFeed(t, p, "0", map[string]string{"If-None-Match": first.etag}); fmt.Sprint(a.ids) != "[f b]" {
		t.Errorf("from the first etag again: %v, want [f b]", a.ids)
	}
	if a := readFeed(t, p, "0", nil); fmt.Sprint(a.ids) != "[a e f b]" {
		t.Errorf("from the beginning after the deletes: %v, want [a e f b]", a.ids)
	}
	if a := readFeed(t, p, "0", map[string]string{"If-None-Match": "*"}); a.status != http.StatusNotModified || a.etag != next.etag {
		t.Errorf("from now: %d %q, want 304 %q", a.status, a.etag, next.etag)
	}
}

func TestFeedStartsAtIfModifiedSince(t *testing.T) {
	u := newFeedUpstream(t)
	p := start(t, faultproxy.Config{Target: u.srv.URL, ChangeFeed: &faultproxy.ChangeFeed{}})
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, id := range []string{"old", "edge", "new"} {
		u.put(id, t0.Unix()-1+int64(i))
	}
	// azcosmos writes the time as time.RFC1123 in UTC; HTTP clients as GMT.
	for _, since := range []string{t0.Format(time.RFC1123), t0.Format(http.TimeFormat)} {
		a := readFeed(t, p, "0", map[string]string{"If-Modified-Since": since})
		if a.status != http.StatusOK || fmt.Sprint(a.ids) != "[edge new]" {
			t.Errorf("since %s: %d %v, want [edge new] (_ts at or after)", since, a.status, a.ids)
		}
		// With both headers (the SDKs send If-Modified-Since on every page),
		// a doc must satisfy both.
		u.put("old", t0.Unix()-5) // changed, but dated before since
		u.put("later", t0.Unix()+10)
		b := readFeed(t, p, "0", map[string]string{"If-Modified-Since": since, "If-None-Match": a.etag})
		if fmt.Sprint(b.ids) != "[later]" {
			t.Errorf("since %s from %s: %v, want [later]", since, a.etag, b.ids)
		}
		u.del("later")
	}
	future := t0.Add(time.Hour).Format(time.RFC1123)
	if a := readFeed(t, p, "0", map[string]string{"If-Modified-Since": future}); a.status != http.StatusNotModified || a.etag == "" {
		t.Errorf("since the future: %d etag %q, want 304 with an etag", a.status, a.etag)
	}
}

// A read after the first asks the upstream for the bodies of the docs
// changed since (by _ts), not the whole container again, and still sees
// a doc changed with an older _ts than the others and a delete.
func TestFeedReadsOnlyChangedBodies(t *testing.T) {
	u := newFeedUpstream(t)
	p := start(t, faultproxy.Config{Target: u.srv.URL, ChangeFeed: &faultproxy.ChangeFeed{}})
	for i := range 6 {
		u.put(fmt.Sprintf("d%d", i), 100+int64(i))
	}
	a := readFeed(t, p, "0", nil)
	if len(a.ids) != 6 || u.bodies != 6 {
		t.Fatalf("first read: %v, %d bodies from the upstream; want 6 and 6", a.ids, u.bodies)
	}
	u.put("d4", 300)
	u.del("d5")
	b := readFeed(t, p, "0", map[string]string{"If-None-Match": a.etag})
	if fmt.Sprint(b.ids) != "[d4]" || u.bodies != 7 {
		t.Errorf("after d4 changed: %v, %d bodies in all; want [d4] and 7 (d4 alone read again)", b.ids, u.bodies)
	}
	u.put("d1", 50) // changed, dated before the docs read since
	c := readFeed(t, p, "0", map[string]string{"If-None-Match": b.etag})
	if fmt.Sprint(c.ids) != "[d1]" {
		t.Errorf("after d1 changed with an older _ts: %v, want [d1]", c.ids)
	}
	if all := readFeed(t, p, "0", nil); fmt.Sprint(all.ids) != "[d0 d2 d3 d4 d1]" {
		t.Errorf("from the beginning: %v, want [d0 d2 d3 d4 d1] (d5 deleted)", all.ids)
	}
}

// Pages hold at most x-ms-max-item-count docs; each etag continues where
// its page ended, whatever changed meanwhile.
func TestFeedPagesByMaxItemCount(t *testing.T) {
	u := newFeedUpstream(t)
	p := start(t, faultproxy.Config{Target: u.srv.URL, ChangeFeed: &faultproxy.ChangeFeed{}})
	for i := range 5 {
		u.put(fmt.Sprintf("d%d", i), 100)
	}
	pages, _ := readPages(t, p, map[string]string{"x-ms-max-item-count": "2"}, func(page int) {
		if page == 0 {
			u.put("d0", 200) // changed after it was sent: comes again, last
		}
	})
	if sizes, got := pageSizes(pages); fmt.Sprint(sizes) != "[2 2 2]" || fmt.Sprint(got) != "[d0 d1 d2 d3 d4 d0]" {
		t.Errorf("pages %v with %v; want [2 2 2] with [d0 d1 d2 d3 d4 d0]", sizes, got)
	}
}

// readPages reads range 0 of the feed page after page, hdr on every
// request and each answer's etag as the next If-None-Match, until a 304
// (at most 10 requests), calling after(i) after page i when after is not
// nil. It returns the ids of each page, and the upstream requests the
// proxy had made before each request (the 304's included).
func readPages(t *testing.T, p *faultproxy.Proxy, hdr map[string]string, after func(page int)) (pages [][]string, reads []int) {
	t.Helper()
	etag := ""
	for range 10 {
		h := maps.Clone(hdr)
		if etag != "" {
			h["If-None-Match"] = etag
		}
		reads = append(reads, p.Forwarded())
		a := readFeed(t, p, "0", h)
		if a.etag == "" {
			t.Fatal("no etag")
		}
		etag = a.etag
		if a.status == http.StatusNotModified {
			break
		}
		pages = append(pages, a.ids)
		if after != nil {
			after(len(pages) - 1)
		}
	}
	return pages, reads
}

// pageSizes returns the number of docs of each page, and their ids in
// order.
func pageSizes(pages [][]string) (sizes []int, ids []string) {
	for _, p := range pages {
		sizes = append(sizes, len(p))
		ids = append(ids, p...)
	}
	return sizes, ids
}

// Several ranges: each doc is in exactly one, each range has its own
// continuation, and together they are every doc.
func TestFeedSplitsDocsOverRanges(t *testing.T) {
	u := newFeedUpstream(t)
	p := start(t, faultproxy.Config{Target: u.srv.URL, ChangeFeed: &faultproxy.ChangeFeed{Ranges: 3}})
	const n = 30
	for i := range n {
		u.put(fmt.Sprintf("doc-%02d", i), 100)
	}
	seen := map[string]int{}
	etags := map[string]string{}
	nonEmpty := 0
	for _, rng := range []string{"0", "1", "2"} {
		a := readFeed(t, p, rng, nil)
		etags[rng] = a.etag
		if len(a.ids) > 0 {
			nonEmpty++
		}
		for _, id := range a.ids {
			seen[id]++
		}
	}
	if len(seen) != n || nonEmpty < 2 {
		t.Fatalf("%d distinct docs over the ranges (%d ranges had some), want %d over at least 2", len(seen), nonEmpty, n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("%s in %d ranges", id, c)
		}
	}
	u.put("doc-07", 200)
	changed := 0
	for _, rng := range []string{"0", "1", "2"} {
		a := readFeed(t, p, rng, map[string]string{"If-None-Match": etags[rng]})
		changed += len(a.ids)
		if len(a.ids) > 0 && fmt.Sprint(a.ids) != "[doc-07]" {
			t.Errorf("range %s: %v", rng, a.ids)
		}
	}
	if changed != 1 {
		t.Errorf("the changed doc came %d times over the ranges, want once", changed)
	}
}

// With a budget a change-feed answer is charged like a query, 304s
// included, and a read of an empty bucket is throttled.
func TestFeedChargesTheBudget(t *testing.T) {
	u := newFeedUpstream(t)
	p := start(t, faultproxy.Config{Target: u.srv.URL, ChangeFeed: &faultproxy.ChangeFeed{}, Budget: &faultproxy.Budget{RUPerSecond: 50}})
	for i := range 3 {
		u.put(fmt.Sprintf("d%d", i), 100)
	}
	a := readFeed(t, p, "0", nil)
	if a.status != http.StatusOK || a.charge != "1" {
		t.Fatalf("first page: %d charged %q, want 200 charged 1 (under 1 KB)", a.status, a.charge)
	}
	b := readFeed(t, p, "0", map[string]string{"If-None-Match": a.etag})
	if b.status != http.StatusNotModified || b.charge != "1" {
		t.Fatalf("304 charged %q, want 1", b.charge)
	}
	ru, attempts, throttled, _, _ := faultproxy.Totals(p.Ledger(), "client", false)
	if ru != 2 || attempts != 2 || throttled != 0 {
		t.Errorf("ledger: %v RU over %d attempts (%d throttled), want 2 over 2", ru, attempts, throttled)
	}
	p.SetBudget(0)
	if c := readFeed(t, p, "0", map[string]string{"If-None-Match": a.etag}); c.status != http.StatusTooManyRequests {
		t.Errorf("empty bucket: %d, want 429", c.status)
	}
}

// Concurrent change-feed reads of one container see one log: every change
// gets one sequence number, whatever the interleaving.
func TestFeedConcurrentReads(t *testing.T) {
	u := newFeedUpstream(t)
	p := start(t, faultproxy.Config{Target: u.srv.URL, ChangeFeed: &faultproxy.ChangeFeed{}})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 10 {
				u.put(fmt.Sprintf("w%d-%d", w, i), int64(100+i))
				req, _ := http.NewRequest(http.MethodGet, p.URL()+"dbs/d/colls/c/docs", nil)
				req.Header.Set("Authorization", "sig")
				req.Header.Set("A-IM", "Incremental feed")
				resp, err := client().Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("concurrent read: %d", resp.StatusCode)
				}
			}
		})
	}
	wg.Wait()
	a := readFeed(t, p, "0", nil)
	if len(a.ids) != 40 {
		t.Fatalf("%d docs from the beginning, want 40", len(a.ids))
	}
	if a.etag != `"40"` {
		t.Errorf("etag %s after 40 changes, each seen once: want \"40\"", a.etag)
	}
}

// A client paging through a feed the log already holds gets its full
// pages from the log: the upstream is read again only for a page the log
// cannot fill.
func TestFeedPagesFromTheLog(t *testing.T) {
	u := newFeedUpstream(t)
	p := start(t, faultproxy.Config{Target: u.srv.URL, ChangeFeed: &faultproxy.ChangeFeed{}})
	for i := range 10 {
		u.put(fmt.Sprintf("d%d", i), 100)
	}
	pages, reads := readPages(t, p, map[string]string{"x-ms-max-item-count": "2"}, nil)
	if _, got := pageSizes(pages); fmt.Sprint(got) != "[d0 d1 d2 d3 d4 d5 d6 d7 d8 d9]" {
		t.Errorf("docs %v, want d0 to d9", got)
	}
	// reads[i] is counted before request i: the first reads the
	// upstream; the next four pages come from the log.
	if len(reads) != 6 || reads[1] == reads[0] || reads[1] != reads[5] {
		t.Errorf("upstream requests before each request: %v; want the first to read it, the next four not", reads)
	}
}

// A page holds no more than PageBytes of docs (the service's limit on a
// response), at least one, whatever x-ms-max-item-count asks (here
// nothing: no limit on the count); a client paging through them is
// answered from the log, without reading the whole container again for
// every page.
func TestFeedPagesAreBoundedInBytes(t *testing.T) {
	u := newFeedUpstream(t)
	p := start(t, faultproxy.Config{Target: u.srv.URL, ChangeFeed: &faultproxy.ChangeFeed{PageBytes: 1}})
	for i := range 5 {
		u.put(fmt.Sprintf("d%d", i), 100)
	}
	pages, reads := readPages(t, p, map[string]string{}, nil)
	if sizes, got := pageSizes(pages); fmt.Sprint(sizes) != "[1 1 1 1 1]" || fmt.Sprint(got) != "[d0 d1 d2 d3 d4]" {
		t.Errorf("pages %v with %v; want [1 1 1 1 1] with d0 to d4", sizes, got)
	}
	// The first request reads the upstream; the next three pages come
	// from the log; the last doc (the log holds no full page after it)
	// and the 304 read it again.
	if len(reads) != 6 || reads[1] == reads[0] || reads[1] != reads[4] || reads[5] == reads[4] {
		t.Errorf("upstream requests before each request: %v; want the first to read it, the next three not, the fifth to", reads)
	}
}

// pkRangesAnswer is what a client saw for one read of the partition key
// ranges.
type pkRangesAnswer struct {
	status int
	etag   string
	ranges []struct {
		ID                         string
		MinInclusive, MaxExclusive string
		Parents                    []string
	}
}

// readRanges reads the partition key ranges of dbs/d/colls/c as the SDK
// does (a change feed of them), from the etag ifNoneMatch ("" : all).
func readRanges(t *testing.T, p *faultproxy.Proxy, ifNoneMatch string) pkRangesAnswer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.URL()+"dbs/d/colls/c/pkranges", nil)
	req.Header.Set("Authorization", "sig")
	req.Header.Set("A-IM", "Incremental feed")
	if ifNoneMatch != "" {
		req.Header.Set("If-None-Match", ifNoneMatch)
	}
	resp, err := client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := pkRangesAnswer{status: resp.StatusCode, etag: resp.Header.Get("etag")}
	if resp.StatusCode == http.StatusOK {
		var body struct {
			Ranges []struct {
				ID                         string
				MinInclusive, MaxExclusive string
				Parents                    []string
			} `json:"PartitionKeyRanges"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		a.ranges = body.Ranges
	}
	return a
}

// String is "id:min-max<parents …" for each range.
func (a pkRangesAnswer) String() string {
	var parts []string
	for _, r := range a.ranges {
		parts = append(parts, fmt.Sprintf("%s:%s-%s<%v", r.ID, r.MinInclusive, r.MaxExclusive, r.Parents))
	}
	return fmt.Sprintf("%d %s %v", a.status, a.etag, parts)
}

// drain reads range rng from etag ("": from the beginning), a doc a
// page, until a 304, and returns the ids in order and the last etag.
func drain(t *testing.T, p *faultproxy.Proxy, rng, etag string) (ids []string, last string) {
	t.Helper()
	for range 100 {
		h := map[string]string{"x-ms-max-item-count": "1"}
		if etag != "" {
			h["If-None-Match"] = etag
		}
		a := readFeed(t, p, rng, h)
		if a.status != http.StatusOK && a.status != http.StatusNotModified {
			t.Fatalf("range %s from %s: %d", rng, etag, a.status)
		}
		etag = a.etag
		if a.status == http.StatusNotModified {
			return ids, etag
		}
		ids = append(ids, a.ids...)
	}
	t.Fatalf("range %s: no 304 after 100 pages", rng)
	return nil, ""
}

// A split, as the service does it: the old range answers 410 with
// substatus 1002; the ranges list its two children (parents: the old
// one) instead, at a new etag, and the ranges added since an older etag;
// each child serves, from the old range's continuation, the changes of
// its half that came after it — those before the split and those after
// — and nothing else; the other range is untouched; a child splits
// again.
func TestFeedSplit(t *testing.T) {
	u := newFeedUpstream(t)
	p := start(t, faultproxy.Config{Target: u.srv.URL, ChangeFeed: &faultproxy.ChangeFeed{Ranges: 2}})
	ids := make([]string, 40)
	for i := range ids {
		ids[i] = fmt.Sprintf("doc-%02d", i)
		u.put(ids[i], 100)
	}
	before := readRanges(t, p, "")
	if fmt.Sprint(before) != `200 "1" [0:-80<[] 1:80-FF<[]]` {
		t.Fatalf("ranges before the split: %v", before)
	}
	inRange := func(rng string) (in []string) {
		for _, id := range ids {
			if r, err := p.RangeOf("d", "c", id); err != nil {
				t.Fatal(err)
			} else if r == rng {
				in = append(in, id)
			}
		}
		return in
	}
	zero, one := inRange("0"), inRange("1")
	if len(zero) < 8 || len(one) < 8 {
		t.Fatalf("%d docs in range 0, %d in range 1: want both well filled", len(zero), len(one))
	}
	// The client reads range 0 halfway; range 1 to its end.
	etag := ""
	var read0 []string
	for range len(zero) / 2 {
		h := map[string]string{"x-ms-max-item-count": "1"}
		if etag != "" {
			h["If-None-Match"] = etag
		}
		a := readFeed(t, p, "0", h)
		read0, etag = append(read0, a.ids...), a.etag
	}
	got1, etag1 := drain(t, p, "1", "")
	if !slices.Equal(got1, one) {
		t.Fatalf("range 1: %v, want %v", got1, one)
	}

	children, err := p.Split("d", "c", "0")
	if err != nil || children != [2]string{"2", "3"} {
		t.Fatalf("split: %v %v, want children 2 and 3", children, err)
	}
	if a := readFeed(t, p, "0", map[string]string{"If-None-Match": etag}); a.status != http.StatusGone || a.substatus != "1002" {
		t.Errorf("the split range from its continuation: %d substatus %q, want 410 substatus 1002", a.status, a.substatus)
	}
	if p.Gone() != 1 {
		t.Errorf("Gone() = %d after one 410, want 1", p.Gone())
	}
	after := readRanges(t, p, "")
	if fmt.Sprint(after) != `200 "2" [2:-40<[0] 3:40-80<[0] 1:80-FF<[]]` {
		t.Errorf("ranges after the split: %v", after)
	}
	if a := readRanges(t, p, before.etag); fmt.Sprint(a) != `200 "2" [2:-40<[0] 3:40-80<[0]]` {
		t.Errorf("ranges added since %s: %v", before.etag, a)
	}
	if a := readRanges(t, p, after.etag); a.status != http.StatusNotModified || a.etag != after.etag {
		t.Errorf("ranges from the current etag: %v, want 304 %s", a, after.etag)
	}

	// Changes after the split: new docs (in both halves of the old range
	// and in range 1) and a change to a doc read before it.
	for i := range 40 {
		id := fmt.Sprintf("new-%02d", i)
		ids = append(ids, id)
		u.put(id, 200)
	}
	u.put(read0[0], 300)
	// From the old range's continuation the children send what it had not
	// sent, and what changed in it since, each once.
	want := append(slices.Clone(zero[len(read0):]), read0[0])
	for _, child := range children {
		in := inRange(child)
		if !slices.ContainsFunc(in, func(id string) bool { return strings.HasPrefix(id, "new-") }) {
			t.Fatalf("no new doc in child %s: %v", child, in)
		}
		for _, id := range in {
			if strings.HasPrefix(id, "new-") {
				want = append(want, id)
			}
		}
	}
	var got []string
	for _, child := range children {
		ids, last := drain(t, p, child, etag)
		for _, id := range ids {
			if r, _ := p.RangeOf("d", "c", id); r != child {
				t.Errorf("child %s sent %s, which is in %s", child, id, r)
			}
		}
		if last == etag {
			t.Errorf("child %s: its continuation did not move from the parent's %s", child, etag)
		}
		got = append(got, ids...)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the children from the old range's continuation sent\n%v\nwant each once\n%v", got, want)
	}
	// Range 1 goes on from its own continuation, and sends its new docs.
	if got, _ := drain(t, p, "1", etag1); len(got) == 0 || !slices.Equal(got, slices.DeleteFunc(inRange("1"), func(id string) bool { return !strings.HasPrefix(id, "new-") })) {
		t.Errorf("range 1 after the split: %v", got)
	}

	// A child splits again: its children name both ancestors.
	if grand, err := p.Split("d", "c", "2"); err != nil || grand != [2]string{"4", "5"} {
		t.Fatalf("split of 2: %v %v", grand, err)
	}
	if a := readRanges(t, p, ""); fmt.Sprint(a) != `200 "3" [4:-20<[0 2] 5:20-40<[0 2] 3:40-80<[0] 1:80-FF<[]]` {
		t.Errorf("ranges after the second split: %v", a)
	}
	if a := readRanges(t, p, before.etag); fmt.Sprint(a) != `200 "3" [2:-40<[0] 3:40-80<[0] 4:-20<[0 2] 5:20-40<[0 2]]` {
		t.Errorf("ranges added since %s: %v", before.etag, a)
	}
	for name, id := range map[string]string{"split": "0", "unknown": "9"} {
		if _, err := p.Split("d", "c", id); err == nil {
			t.Errorf("split of the %s range %s: no error", name, id)
		}
	}
	if a := readFeed(t, p, "9", nil); a.status != http.StatusBadRequest {
		t.Errorf("a range that never existed: %d, want 400", a.status)
	}
	plain := start(t, faultproxy.Config{Target: u.srv.URL})
	if _, err := plain.Split("d", "c", "0"); err == nil {
		t.Error("split without ChangeFeed: no error")
	}
}

// SplitAfter splits a range between two of a client's pages: the reads
// with a continuation before the count go through, the one that reaches
// it is answered 410, and the channel names the children; armed for a
// range split already, it closes without them.
func TestFeedSplitAfter(t *testing.T) {
	u := newFeedUpstream(t)
	p := start(t, faultproxy.Config{Target: u.srv.URL, ChangeFeed: &faultproxy.ChangeFeed{Ranges: 1}})
	for i := range 5 {
		u.put(fmt.Sprintf("d%d", i), 100)
	}
	split, err := p.SplitAfter("d", "c", "0", 2)
	if err != nil {
		t.Fatal(err)
	}
	var statuses []int
	etag := ""
	for range 4 {
		h := map[string]string{"x-ms-max-item-count": "1"}
		if etag != "" {
			h["If-None-Match"] = etag
		}
		a := readFeed(t, p, "0", h)
		statuses = append(statuses, a.status)
		if a.status != http.StatusOK {
			break
		}
		etag = a.etag
	}
	// The first read has no continuation; the second and third have one:
	// the third is the second that counts.
	if fmt.Sprint(statuses) != "[200 200 410]" {
		t.Errorf("reads %v, want [200 200 410]", statuses)
	}
	select {
	case children, ok := <-split:
		if !ok || children != [2]string{"1", "2"} {
			t.Errorf("children %v (%v), want 1 and 2", children, ok)
		}
	default:
		t.Fatal("no split announced")
	}
	again, err := p.SplitAfter("d", "c", "0", 1)
	if err != nil {
		t.Fatal(err)
	}
	readFeed(t, p, "0", map[string]string{"If-None-Match": etag})
	if children, ok := <-again; ok {
		t.Errorf("a split range split again: %v", children)
	}
	if _, err := start(t, faultproxy.Config{Target: u.srv.URL}).SplitAfter("d", "c", "0", 1); err == nil {
		t.Error("SplitAfter without ChangeFeed: no error")
	}
}
