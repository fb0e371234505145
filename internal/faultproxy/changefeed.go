package faultproxy

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
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
//   - Partition key ranges: GET …/pkranges answers the container's live
//     ranges, at first Ranges of them with string ids "0", "1", …,
//     contiguous from minInclusive "" to maxExclusive "FF", status
//     "online", no parents, in the service's body
//     ({"PartitionKeyRanges":[…],"_count":n}) with an etag, the version of
//     the ranges ("1", then one more per split); asked again as a change
//     feed (A-IM: Incremental feed) with that etag in If-None-Match, it
//     answers 304, with an older version's etag the ranges added since. A
//     container the upstream does not have gets the upstream's answer
//     (404).
//   - Splits (Proxy.Split), as when a container grows: the range is
//     replaced by two children of half its width (the next ids; parents:
//     its parents and itself). A change-feed read of the split range is
//     answered 410 Gone with x-ms-substatus 1002 (PartitionKeyRangeGone),
//     as the service answers, and the SDK is to read the ranges again and
//     go on in the children.
//   - The change feed in "latest version" mode: a GET on …/docs with
//     A-IM: Incremental feed. The proxy reads the container from the
//     upstream with two queries of its own, sent with the client's
//     headers (the stand-in checks no signature): the system members of
//     every doc, then the bodies of the new and changed ones. It keeps a
//     modification log: each doc, known by its _rid, whose _etag
//     differs from the one the proxy recorded last gets the next log
//     sequence number (LSN) of the range that holds it. Each range has
//     its own LSNs, as each physical partition of the service does; a
//     split's children start from their parent's newest, so an etag of
//     the parent is a position in each child. A request is answered, in
//     LSN order, with the docs of its range
//     (x-ms-documentdb-partitionkeyrangeid; it may be left out on a
//     container of one range) changed after the LSN in If-None-Match (the
//     etag of an earlier answer, "N" with the quotes; "*" means from now
//     on), or, without one, every doc, or with If-Modified-Since those
//     whose _ts is at or after that time (both headers: both
//     conditions). At most x-ms-max-item-count docs (absent or ≤ 0: no
//     limit), and no more than PageBytes of them (the service's limit on
//     the size of a response; at least one doc), go in one answer,
//     {"Documents":[…],"_count":n} (each doc with its "_lsn", as the
//     service adds one), whose etag header is the continuation: the LSN
//     of the last doc sent when the page is full, else the range's newest
//     LSN. Nothing to send is 304 Not Modified with the etag. With
//     Config.Budget a change-feed answer is charged like a query: 1 RU
//     per started KB (a 304: 1 RU).
//
// What it does not model: deletes (a deleted doc is simply no longer
// sent, as in the service's latest-version mode); intermediate versions
// (changes to a doc between two proxy reads collapse into one, as in
// the service, but here "between two reads" means between two
// change-feed requests for that container, so a doc changed twice
// between two passes is sent once); the exact order of docs first seen in
// the same read (ordered by _ts, then as the upstream listed them, not
// necessarily as they were written within one second); merges, and the
// time a split takes (it happens at once: there is no 410 with substatus
// 1007, "completing split"); change feeds scoped to a partition key
// (answered 400); and the mapping of partition key values to ranges: a
// doc's EPK is a hash of its id, whereas the service hashes the
// partition key value (a client reading whole ranges cannot tell). Docs
// the proxy never read before they were deleted are never sent. The log
// is in memory: a new proxy starts new LSNs and ranges, so its etags do
// not continue another's.
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

// feedLog is the modification log of one container and its partition key
// ranges. mu is held across the upstream read, so that an older snapshot
// never overwrites a newer one.
type feedLog struct {
	mu   sync.Mutex
	docs map[string]*feedEntry // by _rid
	// all are the container's partition key ranges, split ones included,
	// in the order they were made; nil until first used (ranges).
	all []*pkRange
	// version counts the versions of the ranges: 1, and 1 more per split.
	version uint64
	// armed are the splits SplitAfter arms.
	armed []*armedSplit
}

// feedEntry is the latest version of one doc the proxy has seen.
type feedEntry struct {
	etag string
	lsn  uint64 // its log sequence number in the range it was logged in
	ts   int64
	epk  uint32 // its EPK: the range that holds it serves it
	body []byte
}

// feed returns the log of the container at path (/dbs/{db}/colls/{coll}).
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

// feedRequest is what a change-feed request asks for.
type feedRequest struct {
	rangeID  string // x-ms-documentdb-partitionkeyrangeid; "" when absent
	fromLSN  uint64 // with hasFrom: docs changed after it
	hasFrom  bool
	fromNow  bool // If-None-Match: *
	since    time.Time
	maxItems int // ≤ 0: no limit
}

// parseFeedRequest reads the change-feed headers of r; a made-up 400 when
// they are not valid.
func parseFeedRequest(r *http.Request) (feedRequest, *http.Response) {
	var q feedRequest
	if r.Header.Get("x-ms-documentdb-partitionkey") != "" {
		return q, badRequest("a change feed scoped to a partition key is not simulated")
	}
	q.rangeID = r.Header.Get("x-ms-documentdb-partitionkeyrangeid")
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
		lsn, err := strconv.ParseUint(strings.Trim(inm, `"`), 10, 64)
		if err != nil {
			return q, badRequest("If-None-Match " + strconv.Quote(inm) + " is not a continuation this proxy made")
		}
		q.fromLSN, q.hasFrom = lsn, true
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

// appendWithLSN appends a doc's JSON to dst with "_lsn": lsn added, as
// the service's change feed sends each doc with its log sequence number
// (a property that a point read or a query of the doc does not have).
func appendWithLSN(dst, doc []byte, lsn uint64) []byte {
	d := bytes.TrimRight(doc, " \t\r\n")
	if len(d) < 2 || d[len(d)-1] != '}' {
		return append(dst, doc...)
	}
	dst = append(dst, d[:len(d)-1]...)
	if len(bytes.TrimSpace(d[:len(d)-1])) > 1 {
		dst = append(dst, ',')
	}
	return append(fmt.Appendf(dst, `"_lsn":%d`, lsn), '}')
}

// changeFeed answers a change-feed read of the container whose docs are at
// r's path.
func (p *Proxy) changeFeed(r *http.Request) (*http.Response, error) {
	q, bad := parseFeedRequest(r)
	if bad != nil {
		return bad, nil
	}
	l := p.feed(containerOf(r))
	l.mu.Lock()
	defer l.mu.Unlock()
	if q.hasFrom {
		l.fireSplits(p.feedRanges(), q.rangeID)
	}
	rng, bad := l.feedRange(p.feedRanges(), q.rangeID)
	if bad != nil {
		if bad.StatusCode == http.StatusGone {
			p.gone.Add(1)
		}
		return bad, nil
	}
	// The upstream is read again unless the log already holds a full page
	// after the continuation: a client paging through a large feed would
	// otherwise make the proxy read the whole container (and the
	// stand-in scan it) for every page. What changed meanwhile comes once
	// the pages the log holds are read, as in the service, where a feed
	// read sends what it has.
	sel, more := l.page(rng, q, p.feedPageBytes())
	if full := more || (q.maxItems > 0 && len(sel) == q.maxItems); !q.hasFrom || !full {
		upstream, err := p.observe(r, l)
		if err != nil || upstream != nil {
			return upstream, err
		}
		sel, more = l.page(rng, q, p.feedPageBytes())
	}
	next := rng.lsn
	if more {
		next = sel[len(sel)-1].lsn
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

// feedRange returns the range a change-feed request names (id; "" on a
// container of one range: that one), or the answer it gets instead: 410
// with substatus 1002 for a range that was split, 400 for one that never
// existed (the caller holds l.mu).
func (l *feedLog) feedRange(n int, id string) (*pkRange, *http.Response) {
	if id == "" {
		if live := l.live(n); len(live) == 1 {
			return live[0], nil
		}
		return nil, badRequest("a change feed request without x-ms-documentdb-partitionkeyrangeid on a container of several ranges")
	}
	switch r := l.byID(n, id); {
	case r == nil:
		return nil, badRequest(fmt.Sprintf("partition key range %q does not exist", id))
	case r.gone:
		return nil, goneAnswer(id)
	default:
		return r, nil
	}
}

// page selects, in LSN order, the docs of range rng in the answer to q
// from the log: at most q.maxItems (≤ 0: no limit) and at most pageBytes
// of bodies, at least one. more says that more docs follow them (the
// caller holds l.mu).
func (l *feedLog) page(rng *pkRange, q feedRequest, pageBytes int) (sel []*feedEntry, more bool) {
	if q.fromNow {
		return nil, false
	}
	for _, e := range l.docs {
		if e.epk < rng.lo || e.epk >= rng.hi || (q.hasFrom && e.lsn <= q.fromLSN) || (!q.since.IsZero() && e.ts < q.since.Unix()) {
			continue
		}
		sel = append(sel, e)
	}
	slices.SortFunc(sel, func(a, b *feedEntry) int { return cmp.Compare(a.lsn, b.lsn) })
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
		epk := docEPK(v.meta.ID)
		rng := l.rangeAt(n, epk)
		rng.lsn++
		l.docs[v.meta.RID] = &feedEntry{etag: v.meta.ETag, lsn: rng.lsn, ts: v.meta.TS, epk: epk, body: v.raw}
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
