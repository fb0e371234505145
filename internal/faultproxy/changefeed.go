package faultproxy

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ChangeFeed makes the proxy answer the partition-key-range and
// change-feed requests of Cosmos DB clients itself, in the service's
// format, from the docs the upstream holds. The Cosmos DB stand-in
// (@vercel/cosmosdb-server) has no change feed of its own (it answers
// every doc once, then 304) and answers the partition key ranges in a
// format azcosmos cannot read (a numeric id).
//
// What it models, per container (the path /dbs/{db}/colls/{coll}):
//
//   - Partition key ranges: GET …/pkranges answers Ranges ranges with
//     string ids "0", "1", …, contiguous from minInclusive "" to
//     maxExclusive "FF", status "online", no parents, in the service's
//     body ({"PartitionKeyRanges":[…],"_count":n}) with an etag; asked
//     again as a change feed (A-IM: Incremental feed) with that etag in
//     If-None-Match, it answers 304: the ranges never split. A container
//     the upstream does not have gets the upstream's answer (404).
//   - The change feed in "latest version" mode: a GET on …/docs with
//     A-IM: Incremental feed. The proxy reads the container from the
//     upstream with two queries of its own, sent with the client's
//     headers (the stand-in checks no signature): the system members of
//     every doc, then the bodies of the new and changed ones. It keeps a
//     modification log: each doc, known by its _rid, whose _etag
//     differs from the one the proxy recorded last gets the next number
//     of a sequence. A request is answered, in sequence order, with the
//     docs of its range (x-ms-documentdb-partitionkeyrangeid) changed
//     after the sequence number in If-None-Match (the etag of an earlier
//     answer, "N" with the quotes; "*" means from now on), or, without
//     one, every doc, or with If-Modified-Since those whose _ts is at or
//     after that time (both headers: both conditions). At most
//     x-ms-max-item-count docs (absent or ≤ 0: no limit), and no more
//     than PageBytes of them (the service's limit on the size of a
//     response; at least one doc), go in one answer, {"Documents":[…],"_count":n} (each doc with its "_lsn",
//     its sequence number, as the service adds one), whose etag header
//     is the continuation: the number of the last doc sent when the page is
//     full, else the newest number so far. Nothing to send is 304 Not
//     Modified with the etag. With Config.Budget a change-feed answer is
//     charged like a query: 1 RU per started KB (a 304: 1 RU).
//
// What it does not model: deletes (a deleted doc is simply no longer
// sent, as in the service's latest-version mode); intermediate versions
// (changes to a doc between two proxy reads collapse into one, as in
// the service, but here "between two reads" means between two
// change-feed requests for that container, so a doc changed twice
// between two passes is sent once); the exact order of docs first seen in
// the same read (ordered by _ts, then as the upstream listed them, not
// necessarily as they were written within one second); splits and merges
// (410 Gone); change feeds scoped to a partition key (answered 400); and
// the mapping of partition key values to ranges: a doc's range is a
// hash of its id, whereas the service hashes the partition key value
// (a client reading whole ranges cannot tell). Docs the proxy never read
// before they were deleted are never sent. The log is in memory: a new
// proxy starts a new sequence, so its etags do not continue another's.
type ChangeFeed struct {
	// Ranges is the number of partition key ranges every container
	// announces (0 means 1; at most 64).
	Ranges int
	// PageBytes bounds the docs of one answer, as the service bounds a
	// response (0 means 4 MiB, the service's limit).
	PageBytes int
}

// feedPageBytes is the service's limit on the size of a response: a
// change-feed page holds at most that many bytes of docs, whatever
// x-ms-max-item-count asks for.
const feedPageBytes = 4 << 20

// maxFeedRanges bounds ChangeFeed.Ranges so that every boundary is a
// distinct two-digit hex string.
const maxFeedRanges = 64

// pkRangesETag is the etag of the partition key ranges, which never
// change.
const pkRangesETag = `"1"`

// IsChangeFeedRead reports whether r reads a container's change feed: a
// GET on …/docs with A-IM: Incremental feed. Config.Match can use it to
// inject faults into change-feed reads.
func IsChangeFeedRead(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/docs") &&
		strings.EqualFold(r.Header.Get("A-IM"), "Incremental feed")
}

// isPKRangesRead reports whether r reads a container's partition key
// ranges.
func isPKRangesRead(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/pkranges")
}

// feedHeaders are the request headers of a change feed that the proxy
// answers itself and never forwards.
var feedHeaders = []string{"A-IM", "If-None-Match", "If-Modified-Since", "x-ms-max-item-count",
	"x-ms-continuation", "x-ms-documentdb-partitionkeyrangeid"}

// feedLog is the modification log of one container. mu is held across the
// upstream read, so that an older snapshot never overwrites a newer one.
type feedLog struct {
	mu   sync.Mutex
	seq  uint64
	docs map[string]*feedEntry // by _rid
}

// feedEntry is the latest version of one doc the proxy has seen.
type feedEntry struct {
	etag string
	seq  uint64
	ts   int64
	rng  int
	body []byte
}

// feed returns the log of the container at path (…/docs).
func (p *Proxy) feed(container string) *feedLog {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.feeds[container]
	if l == nil {
		l = &feedLog{docs: make(map[string]*feedEntry)}
		p.feeds[container] = l
	}
	return l
}

func (p *Proxy) feedRanges() int { return max(p.cfg.ChangeFeed.Ranges, 1) }

// rangeBounds returns the minInclusive and maxExclusive of range i of n.
func rangeBounds(i, n int) (lo, hi string) {
	if i > 0 {
		lo = fmt.Sprintf("%02X", i*256/n)
	}
	hi = "FF"
	if i < n-1 {
		hi = fmt.Sprintf("%02X", (i+1)*256/n)
	}
	return lo, hi
}

// docRange is the range of the doc with this id.
func docRange(id string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
}

// madeAnswer is an answer the proxy makes up, with the upstream's headers
// when it has some.
func madeAnswer(status int, h http.Header, body []byte) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	h.Del("Content-Length")
	h.Set("Content-Type", "application/json")
	if h.Get("x-ms-request-charge") == "" {
		h.Set("x-ms-request-charge", "1")
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}
}

// badRequest is a made-up 400 with the service's error body.
func badRequest(msg string) *http.Response {
	b, _ := json.Marshal(map[string]string{"code": "BadRequest", "message": "faultproxy: " + msg})
	return madeAnswer(http.StatusBadRequest, nil, b)
}

// withoutFeedHeaders returns a copy of r for the upstream: the same
// method, path and credentials, without the change-feed headers.
func withoutFeedHeaders(r *http.Request) *http.Request {
	out := r.Clone(r.Context())
	for _, h := range feedHeaders {
		out.Header.Del(h)
	}
	return out
}

// partitionKeyRanges answers a GET of a container's partition key ranges.
func (p *Proxy) partitionKeyRanges(r *http.Request) (*http.Response, error) {
	resp, err := p.forward(withoutFeedHeaders(r), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	defer resp.Body.Close()
	up, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the partition key ranges: %w", err)
	}
	h := resp.Header.Clone()
	h.Set("etag", pkRangesETag)
	if strings.EqualFold(r.Header.Get("A-IM"), "Incremental feed") && r.Header.Get("If-None-Match") == pkRangesETag {
		return madeAnswer(http.StatusNotModified, h, nil), nil
	}
	var answer struct {
		RID    string           `json:"_rid"`
		Ranges []map[string]any `json:"PartitionKeyRanges"`
	}
	if err := json.Unmarshal(up, &answer); err != nil || len(answer.Ranges) == 0 {
		return nil, fmt.Errorf("the upstream's partition key ranges are not readable: %.200s", up)
	}
	n := p.feedRanges()
	ranges := make([]map[string]any, n)
	for i := range n {
		pkr := make(map[string]any, len(answer.Ranges[0])+8)
		for k, v := range answer.Ranges[0] { // _rid, _self, _etag, _ts of the upstream's range
			pkr[k] = v
		}
		lo, hi := rangeBounds(i, n)
		pkr["id"] = strconv.Itoa(i)
		pkr["minInclusive"], pkr["maxExclusive"] = lo, hi
		pkr["ridPrefix"] = i
		pkr["throughputFraction"] = 1 / float64(n)
		pkr["status"] = "online"
		pkr["parents"] = []string{}
		pkr["lsn"] = 0
		ranges[i] = pkr
	}
	body, err := json.Marshal(map[string]any{"_rid": answer.RID, "PartitionKeyRanges": ranges, "_count": n})
	if err != nil {
		return nil, err
	}
	return madeAnswer(http.StatusOK, h, body), nil
}

// feedRequest is what a change-feed request asks for.
type feedRequest struct {
	rng      int
	fromSeq  uint64 // with hasFrom: docs changed after it
	hasFrom  bool
	fromNow  bool // If-None-Match: *
	since    time.Time
	maxItems int // ≤ 0: no limit
}

// parseFeedRequest reads the change-feed headers of r; a made-up 400 when
// they are not valid.
func (p *Proxy) parseFeedRequest(r *http.Request) (feedRequest, *http.Response) {
	var q feedRequest
	if r.Header.Get("x-ms-documentdb-partitionkey") != "" {
		return q, badRequest("a change feed scoped to a partition key is not simulated")
	}
	n := p.feedRanges()
	if id := r.Header.Get("x-ms-documentdb-partitionkeyrangeid"); id != "" {
		i, err := strconv.Atoi(id)
		if err != nil || i < 0 || i >= n {
			return q, badRequest(fmt.Sprintf("partition key range %q does not exist (the container has %d)", id, n))
		}
		q.rng = i
	} else if n > 1 {
		return q, badRequest("a change feed request without x-ms-documentdb-partitionkeyrangeid on a container of several ranges")
	}
	if s := r.Header.Get("x-ms-max-item-count"); s != "" {
		m, err := strconv.Atoi(s)
		if err != nil {
			return q, badRequest("x-ms-max-item-count " + strconv.Quote(s) + " is not a number")
		}
		q.maxItems = m
	}
	switch inm := r.Header.Get("If-None-Match"); inm {
	case "":
	case "*":
		q.fromNow = true
	default:
		seq, err := strconv.ParseUint(strings.Trim(inm, `"`), 10, 64)
		if err != nil {
			return q, badRequest("If-None-Match " + strconv.Quote(inm) + " is not a continuation this proxy made")
		}
		q.fromSeq, q.hasFrom = seq, true
	}
	if s := r.Header.Get("If-Modified-Since"); s != "" {
		t, err := time.Parse(time.RFC1123, s) // azcosmos: "… 15:04:05 UTC"
		if err != nil {
			if t, err = http.ParseTime(s); err != nil {
				return q, badRequest("If-Modified-Since " + strconv.Quote(s) + " is not an HTTP date")
			}
		}
		q.since = t
	}
	return q, nil
}

// appendWithLSN appends a doc's JSON to dst with "_lsn": seq added, as
// the service's change feed sends each doc with its log sequence number
// (a property that a point read or a query of the doc does not have).
func appendWithLSN(dst, doc []byte, seq uint64) []byte {
	d := bytes.TrimRight(doc, " \t\r\n")
	if len(d) < 2 || d[len(d)-1] != '}' {
		return append(dst, doc...)
	}
	dst = append(dst, d[:len(d)-1]...)
	if len(bytes.TrimSpace(d[:len(d)-1])) > 1 {
		dst = append(dst, ',')
	}
	return append(fmt.Appendf(dst, `"_lsn":%d`, seq), '}')
}

// changeFeed answers a change-feed read of the container whose docs are at
// r's path.
func (p *Proxy) changeFeed(r *http.Request) (*http.Response, error) {
	q, bad := p.parseFeedRequest(r)
	if bad != nil {
		return bad, nil
	}
	l := p.feed(r.URL.Path)
	l.mu.Lock()
	defer l.mu.Unlock()
	// The upstream is read again unless the log already holds a full page
	// after the continuation: a client paging through a large feed would
	// otherwise make the proxy read the whole container (and the
	// stand-in scan it) for every page. What changed meanwhile comes once
	// the pages the log holds are read, as in the service, where a feed
	// read sends what it has.
	sel, more := l.page(q, p.feedPageBytes())
	if full := more || (q.maxItems > 0 && len(sel) == q.maxItems); !q.hasFrom || !full {
		upstream, err := p.observe(r, l)
		if err != nil || upstream != nil {
			return upstream, err
		}
		sel, more = l.page(q, p.feedPageBytes())
	}
	next := l.seq
	if more {
		next = sel[len(sel)-1].seq
	}
	h := http.Header{}
	h.Set("etag", `"`+strconv.FormatUint(next, 10)+`"`)
	if len(sel) == 0 {
		return madeAnswer(http.StatusNotModified, h, nil), nil
	}
	body := feedAnswer(sel)
	h.Set("x-ms-item-count", strconv.Itoa(len(sel)))
	return madeAnswer(http.StatusOK, h, body), nil
}

// page selects, in sequence order, the docs of the answer to q from the
// log: at most q.maxItems (≤ 0: no limit) and at most pageBytes of
// bodies, at least one. more says that more docs follow them (the caller
// holds l.mu).
func (l *feedLog) page(q feedRequest, pageBytes int) (sel []*feedEntry, more bool) {
	if q.fromNow {
		return nil, false
	}
	for _, e := range l.docs {
		if e.rng != q.rng || (q.hasFrom && e.seq <= q.fromSeq) || (!q.since.IsZero() && e.ts < q.since.Unix()) {
			continue
		}
		sel = append(sel, e)
	}
	slices.SortFunc(sel, func(a, b *feedEntry) int { return cmp.Compare(a.seq, b.seq) })
	n, size := 0, 0
	for n < len(sel) && (q.maxItems <= 0 || n < q.maxItems) && (n == 0 || size+len(sel[n].body) <= pageBytes) {
		size += len(sel[n].body)
		n++
	}
	return sel[:n], n < len(sel)
}

// feedPageBytes is ChangeFeed.PageBytes, or the service's limit.
func (p *Proxy) feedPageBytes() int {
	if p.cfg.ChangeFeed.PageBytes > 0 {
		return p.cfg.ChangeFeed.PageBytes
	}
	return feedPageBytes
}

// observe records in l the docs of the container that changed since the
// last read of the upstream (the caller holds l.mu). It reads the system
// members of every doc (a query of _rid, _etag, _ts and id: a few dozen
// bytes a doc, from which deletes are seen too), then the bodies of the
// new and changed ones only (a query of the docs whose _ts is at or after
// the oldest of them). Reading every body for every read, as the read
// feed does, cost the stand-in and the proxy a whole container's JSON for
// each change-feed read: seconds for 10,000 docs of 24 KB. The queries
// carry the client's headers, whose signature is for a read of the docs
// (the stand-in checks none). It returns the upstream's answer instead
// when that is not a 200 (a missing container: 404).
func (p *Proxy) observe(r *http.Request, l *feedLog) (*http.Response, error) {
	live := map[string]bool{}
	changed, oldest := false, int64(math.MaxInt64)
	resp, err := p.queryDocs(r, "SELECT c._rid, c._etag, c._ts, c.id FROM c", nil, func(_ []byte, d docMeta) {
		live[d.RID] = true
		if l.changed(d) {
			changed, oldest = true, min(oldest, d.TS)
		}
	})
	if err != nil || resp != nil {
		return resp, err
	}
	for rid := range l.docs {
		if !live[rid] {
			delete(l.docs, rid) // deleted: latest-version mode has no deletes
		}
	}
	if !changed {
		return nil, nil
	}
	type version struct {
		meta docMeta
		raw  []byte
	}
	var versions []version
	resp, err = p.queryDocs(r, "SELECT * FROM c WHERE c._ts >= @ts", []queryParam{{"@ts", oldest}}, func(raw []byte, d docMeta) {
		if l.changed(d) { // the changed ones, and any new since the first query
			versions = append(versions, version{d, bytes.Clone(raw)})
		}
	})
	if err != nil || resp != nil {
		return resp, err
	}
	slices.SortStableFunc(versions, func(a, b version) int { return cmp.Compare(a.meta.TS, b.meta.TS) })
	n := p.feedRanges()
	for _, v := range versions {
		l.seq++
		l.docs[v.meta.RID] = &feedEntry{etag: v.meta.ETag, seq: l.seq, ts: v.meta.TS, rng: docRange(v.meta.ID, n), body: v.raw}
	}
	return nil, nil
}

// changed reports whether d is a version of a doc the log does not hold
// (the caller holds l.mu).
func (l *feedLog) changed(d docMeta) bool {
	e := l.docs[d.RID]
	return e == nil || e.etag != d.ETag
}

// queryParam is a named parameter of a query.
type queryParam struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
}

// queryDocs sends the query text (with params) to the container r reads,
// following continuations, and calls fn with each doc of the answers and
// its system members (a doc without a _rid is known by its id). It
// returns the upstream's answer instead when that is not a 200.
func (p *Proxy) queryDocs(r *http.Request, text string, params []queryParam, fn func(raw []byte, d docMeta)) (*http.Response, error) {
	if params == nil {
		params = []queryParam{} // the service wants an array
	}
	body, err := json.Marshal(struct {
		Query      string       `json:"query"`
		Parameters []queryParam `json:"parameters"`
	}{text, params})
	if err != nil {
		return nil, err
	}
	continuation := ""
	for {
		out := withoutFeedHeaders(r)
		out.Method = http.MethodPost
		out.Header.Set("Content-Type", "application/query+json")
		out.Header.Set("x-ms-documentdb-isquery", "True")
		out.Header.Set("x-ms-documentdb-query-enablecrosspartition", "True")
		if continuation != "" {
			out.Header.Set("x-ms-continuation", continuation)
		}
		resp, err := p.forward(out, body)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return resp, nil
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the upstream's docs: %w", err)
		}
		err = readDocs(b, func(raw []byte, d docMeta) {
			if d.RID == "" {
				d.RID = "id:" + d.ID
			}
			fn(raw, d)
		})
		if err != nil {
			return nil, fmt.Errorf("the upstream's docs are not readable: %w", err)
		}
		if continuation = resp.Header.Get("x-ms-continuation"); continuation == "" {
			return nil, nil
		}
	}
}
