package faultproxy

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// This file holds the partition key ranges of the change-feed simulation
// and their splits (see ChangeFeed).

// epkSpace is the end of the simulated effective partition key space,
// maxExclusive "FF": a doc's EPK and every range boundary is a number in
// [0, epkSpace), written as hex (epkString).
const epkSpace = uint32(0xFF) << 24

// pkRange is one partition key range of a container, live or split.
type pkRange struct {
	id      string
	lo, hi  uint32   // [lo, hi) in the EPK space
	parents []string // the ranges it came from, oldest first
	// lsn is the range's newest log sequence number: the number of the
	// last change logged in it. Children start from their parent's, as
	// in the service, so the parent's continuation goes on in each.
	lsn uint64
	// version is the version of the container's ranges that added it
	// (1 for the first ranges; a split adds 1).
	version uint64
	gone    bool // split: change-feed reads of it answer 410/1002
}

// ranges returns the container's ranges, made on first use: n ranges of
// equal width, ids "0", "1", … (the caller holds l.mu).
func (l *feedLog) ranges(n int) []*pkRange {
	if l.all == nil {
		for i := range n {
			l.all = append(l.all, &pkRange{id: strconv.Itoa(i), lo: rangeStart(i, n), hi: rangeStart(i+1, n), parents: []string{}, version: 1})
		}
		l.version = 1
	}
	return l.all
}

// rangeStart is the minInclusive of range i of n equal ranges (n for i:
// the end of the space).
func rangeStart(i, n int) uint32 {
	if i >= n {
		return epkSpace
	}
	return uint32(i*256/n) << 24
}

// live returns the ranges that are not split, in EPK order (the caller
// holds l.mu).
func (l *feedLog) live(n int) []*pkRange {
	var out []*pkRange
	for _, r := range l.ranges(n) {
		if !r.gone {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *pkRange) int { return cmp.Compare(a.lo, b.lo) })
	return out
}

// byID returns the range with this id, live or split, or nil (the caller
// holds l.mu).
func (l *feedLog) byID(n int, id string) *pkRange {
	for _, r := range l.ranges(n) {
		if r.id == id {
			return r
		}
	}
	return nil
}

// rangeAt returns the live range that holds pos (the caller holds l.mu).
func (l *feedLog) rangeAt(n int, pos uint32) *pkRange {
	for _, r := range l.ranges(n) {
		if !r.gone && r.lo <= pos && pos < r.hi {
			return r
		}
	}
	panic("faultproxy: the live ranges do not cover the EPK space") // split keeps them a partition
}

// split replaces the live range id by two children of half its width,
// which start from its LSN, and returns them (the caller holds l.mu).
func (l *feedLog) split(n int, id string) ([2]*pkRange, error) {
	parent := l.byID(n, id)
	switch {
	case parent == nil:
		return [2]*pkRange{}, fmt.Errorf("faultproxy: no partition key range %q", id)
	case parent.gone:
		return [2]*pkRange{}, fmt.Errorf("faultproxy: partition key range %q is already split", id)
	case parent.hi-parent.lo < 2:
		return [2]*pkRange{}, fmt.Errorf("faultproxy: partition key range %q is too narrow to split", id)
	}
	l.version++
	mid := parent.lo + (parent.hi-parent.lo)/2
	parents := append(slices.Clone(parent.parents), parent.id)
	var children [2]*pkRange
	for i, b := range [][2]uint32{{parent.lo, mid}, {mid, parent.hi}} {
		children[i] = &pkRange{id: strconv.Itoa(len(l.all)), lo: b[0], hi: b[1], parents: parents, lsn: parent.lsn, version: l.version}
		l.all = append(l.all, children[i])
	}
	parent.gone = true
	return children, nil
}

// epkString writes an EPK boundary as the service does: "" for the
// start, "FF" for the end, else hex digits without trailing "00" pairs
// (the SDK compares boundaries of different lengths as if padded with
// zeros).
func epkString(v uint32) string {
	switch v {
	case 0:
		return ""
	case epkSpace:
		return "FF"
	}
	s := fmt.Sprintf("%08X", v)
	for len(s) > 2 && strings.HasSuffix(s, "00") {
		s = s[:len(s)-2]
	}
	return s
}

// docEPK is the simulated effective partition key of the doc with this
// id: a hash of the id (the service hashes the partition key value),
// spread over the whole space.
func docEPK(id string) uint32 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return uint32(mix(h.Sum64()) % uint64(epkSpace))
}

// containerOf is the path of the container r is about, /dbs/{db}/colls/{coll},
// from a path of its docs or partition key ranges.
func containerOf(r *http.Request) string {
	p := r.URL.Path
	for _, suffix := range []string{"/docs", "/pkranges"} {
		if c, ok := strings.CutSuffix(p, suffix); ok {
			return c
		}
	}
	return p
}

// containerPath is the path of a container by its database and name.
func containerPath(database, container string) string {
	return "/dbs/" + database + "/colls/" + container
}

// errNoChangeFeed is the error of Split and RangeOf on a proxy without
// Config.ChangeFeed.
var errNoChangeFeed = errors.New("faultproxy: the proxy simulates no change feed (Config.ChangeFeed is nil)")

// Split splits the live partition key range id of the container
// database/container in two, as the service does when a container grows:
// from then on a change-feed read of that range is answered 410 Gone
// with x-ms-substatus 1002 (PartitionKeyRangeGone); the partition key
// ranges list the two children instead (new ids, the next numbers;
// parents: the old range's parents and the old range; its minInclusive
// and maxExclusive split at their midpoint); and each child serves the
// changes of the docs whose EPK falls into it, from the old range's log
// sequence numbers on, so that a continuation (etag) of the old range
// goes on in each child. It returns the children's ids, lower half
// first, or an error when the proxy simulates no change feed or id is
// not a live range of the container. It is safe for concurrent use.
func (p *Proxy) Split(database, container, id string) (children [2]string, err error) {
	if p.cfg.ChangeFeed == nil {
		return children, errNoChangeFeed
	}
	l := p.feed(containerPath(database, container))
	l.mu.Lock()
	defer l.mu.Unlock()
	rs, err := l.split(p.feedRanges(), id)
	if err != nil {
		return children, err
	}
	return [2]string{rs[0].id, rs[1].id}, nil
}

// RangeOf returns the id of the live partition key range of the container
// database/container whose change feed sends the doc with this id, or an
// error when the proxy simulates no change feed. It is safe for
// concurrent use.
func (p *Proxy) RangeOf(database, container, docID string) (string, error) {
	if p.cfg.ChangeFeed == nil {
		return "", errNoChangeFeed
	}
	l := p.feed(containerPath(database, container))
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rangeAt(p.feedRanges(), docEPK(docID)).id, nil
}

// Gone returns how many change-feed reads the proxy answered 410 Gone
// (substatus 1002) because their range was split.
func (p *Proxy) Gone() int { return int(p.gone.Load()) }

// armedSplit is a split SplitAfter armed.
type armedSplit struct {
	id   string
	left int // reads of the range with a continuation to let through
	done chan [2]string
}

// SplitAfter arms a split of the partition key range id of the container
// database/container (see Split): the proxy splits the range when it
// receives the reads-th change-feed read of it that carries a
// continuation (If-None-Match) from now on, and answers that read 410,
// as the service answers a client whose range split between two of its
// pages. reads below 1 count as 1. It returns at once a channel that
// receives the children's ids when the split happens and is closed then,
// or is closed without them when the range could not be split by then
// (it was already); an error when the proxy simulates no change feed. It
// is safe for concurrent use.
func (p *Proxy) SplitAfter(database, container, id string, reads int) (<-chan [2]string, error) {
	if p.cfg.ChangeFeed == nil {
		return nil, errNoChangeFeed
	}
	l := p.feed(containerPath(database, container))
	l.mu.Lock()
	defer l.mu.Unlock()
	a := &armedSplit{id: id, left: max(reads, 1), done: make(chan [2]string, 1)}
	l.armed = append(l.armed, a)
	return a.done, nil
}

// fireSplits counts a change-feed read of range id that carries a
// continuation against the splits armed for it, and makes those whose
// count is reached (the caller holds l.mu).
func (l *feedLog) fireSplits(n int, id string) {
	l.armed = slices.DeleteFunc(l.armed, func(a *armedSplit) bool {
		if a.id != id {
			return false
		}
		if a.left--; a.left > 0 {
			return false
		}
		if rs, err := l.split(n, id); err == nil {
			a.done <- [2]string{rs[0].id, rs[1].id}
		}
		close(a.done)
		return true
	})
}

// rangesETag is the etag of version v of a container's ranges.
func rangesETag(v uint64) string { return `"` + strconv.FormatUint(v, 10) + `"` }

// partitionKeyRanges answers a GET of a container's partition key ranges:
// the live ranges; asked as a change feed (A-IM: Incremental feed) from
// the etag of the current version, 304; from an older version's, the
// ranges added since (split ones included: their children name them as
// parents, as in the service).
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
	var answer struct {
		RID    string           `json:"_rid"`
		Ranges []map[string]any `json:"PartitionKeyRanges"`
	}
	if err := json.Unmarshal(up, &answer); err != nil || len(answer.Ranges) == 0 {
		return nil, fmt.Errorf("the upstream's partition key ranges are not readable: %.200s", up)
	}
	l := p.feed(containerOf(r))
	l.mu.Lock()
	defer l.mu.Unlock()
	n := p.feedRanges()
	rs := l.live(n)
	since, _ := strconv.ParseUint(strings.Trim(r.Header.Get("If-None-Match"), `"`), 10, 64)
	h := resp.Header.Clone()
	h.Set("etag", rangesETag(l.version))
	if strings.EqualFold(r.Header.Get("A-IM"), "Incremental feed") && since > 0 && since <= l.version {
		if since == l.version {
			return madeAnswer(http.StatusNotModified, h, nil), nil
		}
		rs = nil
		for _, pr := range l.ranges(n) {
			if pr.version > since {
				rs = append(rs, pr)
			}
		}
	}
	out := make([]map[string]any, len(rs))
	for i, pr := range rs {
		out[i] = rangeJSON(answer.Ranges[0], pr)
	}
	body, err := json.Marshal(map[string]any{"_rid": answer.RID, "PartitionKeyRanges": out, "_count": len(out)})
	if err != nil {
		return nil, err
	}
	return madeAnswer(http.StatusOK, h, body), nil
}

// rangeJSON is pr in the service's format, with the system members
// (_rid, _self, _etag, _ts) of the upstream's range up.
func rangeJSON(up map[string]any, pr *pkRange) map[string]any {
	out := make(map[string]any, len(up)+8)
	for k, v := range up {
		out[k] = v
	}
	id, _ := strconv.Atoi(pr.id)
	out["id"] = pr.id
	out["minInclusive"], out["maxExclusive"] = epkString(pr.lo), epkString(pr.hi)
	out["ridPrefix"] = id
	out["throughputFraction"] = float64(pr.hi-pr.lo) / float64(epkSpace)
	out["status"] = "online"
	out["parents"] = pr.parents
	out["lsn"] = 0
	return out
}

// goneAnswer is the service's answer to a read of a partition key range
// that was split: 410 with substatus 1002.
func goneAnswer(id string) *http.Response {
	b, _ := json.Marshal(map[string]string{"code": "Gone", "message": "faultproxy: partition key range " + id + " is gone (split)"})
	h := http.Header{}
	h.Set("x-ms-substatus", "1002")
	return madeAnswer(http.StatusGone, h, b)
}
