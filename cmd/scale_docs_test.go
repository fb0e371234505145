package cmd_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bifrost/bifrost-migrate/transform"
)

// scaleDocs is the read side of the scale benchmark's Cosmos DB service,
// and the writes a replay makes: the docs run writes for a world
// (--execution-ttl full, so that each follows from its row alone),
// computed from the world's rows when they are asked for and never held:
// execution n's doc in container executions (the repetitions of org 0's
// executions collide, so are not docs), the docs of the small rows in
// container entities. Every such doc has the system properties of a doc
// written when the rows were (_ts: the world's Timestamp). The docs
// created, replaced or deleted since (a replay's conditional writes, the
// application's deletes) are held apart, in the order of their writes, and
// served instead: the service's log. It answers:
//
//   - the query "SELECT * FROM c" of a container, in pages of at most
//     x-ms-max-item-count docs and, as the service answers, about 4 MB
//     (scalePageBytes) with an opaque continuation;
//   - "SELECT VALUE COUNT(1) FROM c", refused as the gateway of an
//     account of several physical partitions refuses it (400), unless
//     countsContainers;
//   - "SELECT VALUE COUNT(1) FROM c WHERE c.scope = @scope" and "SELECT
//     c.id FROM c WHERE c.scope = @scope" (verify --since), the latter in
//     pages too;
//   - point reads, by id and partition key, with the doc's etag;
//   - creates (409 when the doc exists) and replaces with If-Match (412
//     when the doc changed, 404 when there is none);
//   - the partition key ranges (one range) and the change feed in latest
//     version mode: the docs whose _ts is at or after If-Modified-Since,
//     each once at its latest version (deleted ones not at all), in pages
//     whose etag is the continuation, 304 when none is left.
//
// It is safe for concurrent use.
type scaleDocs struct {
	w    *scaleWorld
	opts transform.Options
	// others are the docs of the small rows, by container, in id order.
	others map[string][]scaleDoc
	// counts are the docs of each scope, by container, writes included.
	counts map[string]map[string]int

	// countsContainers, when set, answers the count of a whole container
	// ("SELECT VALUE COUNT(1) FROM c"), as the local stand-in and an
	// account of one physical partition may; else it is refused (400),
	// as the gateway of an account of several refuses a cross-partition
	// aggregate from the Go SDK, and verify --since counts each scope.
	countsContainers atomic.Bool
	// wmu lets one write (or delete) at a time check and write.
	wmu sync.Mutex
	mu  sync.Mutex
	// log is every write since the world's, by container, in order;
	// latest is each doc's last entry in it (container/scope/id), added
	// the ids of the docs created that the world did not have.
	log    map[string][]scaleDoc
	latest map[string]int
	added  map[string][]scaleDoc
}

// scaleDoc is a doc as the service holds it.
type scaleDoc struct {
	scope, id string
	ts        int64
	json      []byte // without system properties; nil: deleted
}

func newScaleDocs(w *scaleWorld) *scaleDocs {
	d := &scaleDocs{w: w, opts: scaleTransform, others: map[string][]scaleDoc{}, counts: map[string]map[string]int{
		transform.ContainerEntities: {}, transform.ContainerExecutions: {}},
		log: map[string][]scaleDoc{}, latest: map[string]int{}, added: map[string][]scaleDoc{}}
	d.opts.Now = time.Now()
	w.fixedDocs(d.opts, func(_ string, _ transform.Row, o transform.Outcome) {
		d.others[o.Container] = append(d.others[o.Container], scaleDoc{o.Scope, o.ID, w.stamp.Unix(), o.DocJSON})
		d.counts[o.Container][o.Scope]++
	})
	for c := range d.others {
		slices.SortFunc(d.others[c], func(a, b scaleDoc) int { return strings.Compare(a.id, b.id) })
	}
	for o, pk := range w.orgs {
		d.counts[transform.ContainerExecutions][transform.Scope(pk)] += residueCount(w.n, scaleOrgs, o)
	}
	return d
}

// worldSize is the number of the world's docs in container.
func (d *scaleDocs) worldSize(container string) int {
	n := len(d.others[container])
	if container == transform.ContainerExecutions {
		n += d.w.n
	}
	return n
}

// size is the number of positions of container's docs: the world's,
// then those created since (a deleted doc keeps its position, empty).
func (d *scaleDocs) size(container string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.worldSize(container) + len(d.added[container])
}

// docs is the number of docs container holds.
func (d *scaleDocs) docs(container string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range d.counts[container] {
		n += c
	}
	return n
}

// world is the world's doc at position p of container: the small rows'
// docs, then (executions) execution p-len(others).
func (d *scaleDocs) world(container string, p int) scaleDoc {
	if p < len(d.others[container]) {
		return d.others[container][p]
	}
	n := p - len(d.others[container])
	o := transform.Transform(d.w.execRow(n, d.w.orgs[d.w.org(n)]), d.w.execFacts(n), d.opts)
	return scaleDoc{o.Scope, o.ID, d.w.stamp.Unix(), o.DocJSON}
}

// at is the doc at position p of container as it is now (json nil: it
// was deleted).
func (d *scaleDocs) at(container string, p int) scaleDoc {
	d.mu.Lock()
	defer d.mu.Unlock()
	if p >= d.worldSize(container) {
		doc := d.added[container][p-d.worldSize(container)]
		return d.log[container][d.latest[docKey(container, doc.scope, doc.id)]]
	}
	doc := d.world(container, p)
	if i, ok := d.latest[docKey(container, doc.scope, doc.id)]; ok {
		return d.log[container][i]
	}
	return doc
}

func docKey(container, scope, id string) string { return container + "/" + scope + "/" + id }

// find returns the doc id in scope of container, if there is one.
func (d *scaleDocs) find(container, scope, id string) (scaleDoc, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if i, ok := d.latest[docKey(container, scope, id)]; ok {
		doc := d.log[container][i]
		return doc, doc.json != nil
	}
	if container == transform.ContainerExecutions {
		if n := execOfID(id); n >= 0 && n < d.w.n {
			if doc := d.world(container, len(d.others[container])+n); doc.scope == scope {
				return doc, true
			}
			return scaleDoc{}, false
		}
	}
	for _, doc := range d.others[container] {
		if doc.id == id && doc.scope == scope {
			return doc, true
		}
	}
	return scaleDoc{}, false
}

// write makes doc (json nil: a delete) the latest version of its id, at
// its _ts; existed says whether the id had a doc before.
func (d *scaleDocs) write(container string, doc scaleDoc, existed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := docKey(container, doc.scope, doc.id)
	_, logged := d.latest[k]
	d.log[container] = append(d.log[container], doc)
	d.latest[k] = len(d.log[container]) - 1
	switch {
	case !existed && doc.json != nil:
		d.counts[container][doc.scope]++
		if !logged && !d.inWorld(container, doc.scope, doc.id) {
			d.added[container] = append(d.added[container], doc)
		}
	case existed && doc.json == nil:
		d.counts[container][doc.scope]--
	}
}

// inWorld reports whether the world has a doc id in scope of container.
func (d *scaleDocs) inWorld(container, scope, id string) bool {
	if container == transform.ContainerExecutions {
		if n := execOfID(id); n >= 0 && n < d.w.n {
			return transform.Scope(d.w.orgs[d.w.org(n)]) == scope
		}
	}
	for _, doc := range d.others[container] {
		if doc.id == id && doc.scope == scope {
			return true
		}
	}
	return false
}

// remove deletes the doc id of scope in container, as the application
// may: it reports whether there was one.
func (d *scaleDocs) remove(container, scope, id string) bool {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if _, ok := d.find(container, scope, id); !ok {
		return false
	}
	d.write(container, scaleDoc{scope: scope, id: id, ts: time.Now().Unix()}, true)
	return true
}

// written are the docs written since the world's (creates and replaces,
// not deletes), each at its latest version, by container/id.
func (d *scaleDocs) written() map[string]scaleDoc {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]scaleDoc{}
	for c, log := range d.log {
		for i, doc := range log {
			if d.latest[docKey(c, doc.scope, doc.id)] == i && doc.json != nil {
				out[c+"/"+doc.id] = doc
			}
		}
	}
	return out
}

// etag is the doc's etag, as its _etag and the etag header carry it.
func (doc scaleDoc) etag() string { return fmt.Sprintf(`"%x"`, digest(doc.json)) }

// render is doc as the service returns it: with its system properties.
func (doc scaleDoc) render(container string) []byte {
	b := slices.Clip(bytes.TrimSuffix(doc.json, []byte("}"))) // a copy, not doc's bytes
	return fmt.Appendf(b, `,"_rid":"%s","_self":"dbs/db/colls/%s/docs/%s/","_etag":%q,"_attachments":"attachments/","_ts":%d}`,
		doc.id, container, doc.id, doc.etag(), doc.ts)
}

func cosmosError(w http.ResponseWriter, status int, msg string) {
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"code":%q,"message":%q}`, http.StatusText(status), msg)
}

// query answers a query of container (odd hears what it does not know).
func (d *scaleDocs) query(w http.ResponseWriter, r *http.Request, container string, odd func(*http.Request)) {
	var q struct {
		Query      string `json:"query"`
		Parameters []struct {
			Name  string `json:"name"`
			Value any    `json:"value"`
		} `json:"parameters"`
	}
	body, err := io.ReadAll(r.Body)
	if err != nil || json.Unmarshal(body, &q) != nil {
		odd(r)
		cosmosError(w, http.StatusBadRequest, "not a query")
		return
	}
	scope, _ := func() (any, bool) {
		for _, p := range q.Parameters {
			if p.Name == "@scope" {
				return p.Value, true
			}
		}
		return nil, false
	}()
	from, _ := strconv.Atoi(r.Header.Get("x-ms-continuation"))
	limit, err := strconv.Atoi(r.Header.Get("x-ms-max-item-count"))
	if err != nil || limit <= 0 {
		limit = 100
	}
	switch q.Query {
	case "SELECT * FROM c":
		d.page(w, d.size(container), from, limit, func(p int) []byte {
			if doc := d.at(container, p); doc.json != nil {
				return doc.render(container)
			}
			return nil
		})
	case "SELECT VALUE COUNT(1) FROM c":
		if !d.countsContainers.Load() {
			// As the gateway answers a cross-partition aggregate on an
			// account of several physical partitions.
			cosmosError(w, http.StatusBadRequest, "The provided cross partition query can not be directly served by the gateway.")
			return
		}
		fmt.Fprintf(w, `{"_rid":"coll","Documents":[%d],"_count":1}`, d.docs(container))
	case "SELECT VALUE COUNT(1) FROM c WHERE c.scope = @scope":
		s, _ := scope.(string)
		d.mu.Lock()
		n := d.counts[container][s]
		d.mu.Unlock()
		fmt.Fprintf(w, `{"_rid":"coll","Documents":[%d],"_count":1}`, n)
	case "SELECT c.id FROM c WHERE c.scope = @scope":
		s, _ := scope.(string)
		ids := d.scopeIDs(container, s)
		d.page(w, len(ids), from, limit, func(p int) []byte {
			b, _ := json.Marshal(map[string]string{"id": ids[p]})
			return b
		})
	default:
		odd(r)
		cosmosError(w, http.StatusBadRequest, "the scale benchmark's service does not answer "+strconv.Quote(q.Query))
	}
}

// scopeIDs are the ids of the docs of scope in container.
func (d *scaleDocs) scopeIDs(container, scope string) []string {
	var ps []int
	for p, doc := range d.others[container] {
		if doc.scope == scope {
			ps = append(ps, p)
		}
	}
	if container == transform.ContainerExecutions {
		for o, pk := range d.w.orgs {
			if transform.Scope(pk) == scope {
				for n := o; n < d.w.n; n += scaleOrgs {
					ps = append(ps, len(d.others[container])+n)
				}
			}
		}
	}
	d.mu.Lock()
	for i, doc := range d.added[container] {
		if doc.scope == scope {
			ps = append(ps, d.worldSize(container)+i)
		}
	}
	d.mu.Unlock()
	var ids []string
	for _, p := range ps {
		if p < d.worldSize(container) && p >= len(d.others[container]) {
			// An execution: its id and scope without computing its doc.
			n := p - len(d.others[container])
			if !d.deleted(container, scope, execID(n)) {
				ids = append(ids, execID(n))
			}
			continue
		}
		if doc := d.at(container, p); doc.json != nil {
			ids = append(ids, doc.id)
		}
	}
	return ids
}

// deleted reports whether the doc id of scope was deleted since.
func (d *scaleDocs) deleted(container, scope, id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	i, ok := d.latest[docKey(container, scope, id)]
	return ok && d.log[container][i].json == nil
}

// scalePageBytes is about the most a page of a query's answer holds: the
// service ends a page at 4 MB whatever x-ms-max-item-count asks for, so
// that a page's request charge stays within what an account serves.
const scalePageBytes = 4 << 20

// page writes the items from position from on, of total (at most limit,
// and no more once the page has scalePageBytes; an item that is nil is
// no item), with a continuation when more follow.
func (d *scaleDocs) page(w http.ResponseWriter, total, from, limit int, item func(p int) []byte) {
	var b bytes.Buffer
	b.WriteString(`{"_rid":"coll","Documents":[`)
	n, p := 0, from
	for ; p < total && n < limit && b.Len() < scalePageBytes; p++ {
		it := item(p)
		if it == nil {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
		n++
	}
	fmt.Fprintf(&b, `],"_count":%d}`, n)
	if p < total {
		w.Header().Set("x-ms-continuation", strconv.Itoa(p))
	}
	w.Header().Set("x-ms-item-count", strconv.Itoa(n))
	w.Header().Set("x-ms-request-charge", strconv.FormatFloat(float64(b.Len())/1024, 'f', 2, 64))
	_, _ = w.Write(b.Bytes())
}

// partitionKey is the request's partition key (x-ms-documentdb-partitionkey).
func partitionKey(r *http.Request) (string, bool) {
	var pk []string
	if err := json.Unmarshal([]byte(r.Header.Get("x-ms-documentdb-partitionkey")), &pk); err != nil || len(pk) != 1 {
		return "", false
	}
	return pk[0], true
}

// read answers a point read.
func (d *scaleDocs) read(w http.ResponseWriter, r *http.Request, container, id string) {
	scope, ok := partitionKey(r)
	if !ok {
		cosmosError(w, http.StatusBadRequest, "no partition key")
		return
	}
	doc, ok := d.find(container, scope, id)
	if !ok {
		cosmosError(w, http.StatusNotFound, "Entity with the specified id does not exist in the system.")
		return
	}
	w.Header().Set("etag", doc.etag())
	_, _ = w.Write(doc.render(container))
}

// put answers a create (POST, no upsert: replace false) or a replace
// (PUT of doc id, with or without If-Match): the body must be one JSON
// object whose id and scope are the request's.
func (d *scaleDocs) put(w http.ResponseWriter, r *http.Request, container, id string, replace bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	scope, ok := partitionKey(r)
	bid, bscope, err := topMembers(body)
	if !ok || err != nil || bscope != scope || (replace && bid != id) || bid == "" {
		cosmosError(w, http.StatusBadRequest, fmt.Sprintf("doc %q of scope %q: partition key %q, %v", bid, bscope, scope, err))
		return
	}
	d.wmu.Lock()
	defer d.wmu.Unlock()
	cur, exists := d.find(container, scope, bid)
	switch {
	case !replace && exists:
		cosmosError(w, http.StatusConflict, "Entity with the specified id already exists in the system.")
		return
	case replace && !exists:
		cosmosError(w, http.StatusNotFound, "Entity with the specified id does not exist in the system.")
		return
	case replace && r.Header.Get("If-Match") != "" && r.Header.Get("If-Match") != cur.etag():
		cosmosError(w, http.StatusPreconditionFailed, "One of the specified pre-condition is not met.")
		return
	}
	doc := scaleDoc{scope: scope, id: bid, ts: time.Now().Unix(), json: body}
	d.write(container, doc, exists)
	w.Header().Set("etag", doc.etag())
	w.Header().Set("x-ms-request-charge", strconv.FormatFloat(5.71*float64((len(body)+1023)/1024), 'f', 2, 64))
	status := http.StatusCreated
	if replace {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(doc.render(container))
}

// pkRanges answers the partition key ranges of a container: one range,
// version 1.
func (d *scaleDocs) pkRanges(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("etag", `"1"`)
	if strings.EqualFold(r.Header.Get("A-IM"), "Incremental feed") && r.Header.Get("If-None-Match") == `"1"` {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	fmt.Fprint(w, `{"_rid":"coll","PartitionKeyRanges":[{"_rid":"coll","id":"0","_etag":"\"1\"","minInclusive":"","maxExclusive":"FF","ridPrefix":0,"_self":"","throughputFraction":1,"status":"online","parents":[],"_ts":1,"lsn":0}],"_count":1}`)
}

// changes answers a read of container's change feed: from the position
// after the continuation in If-None-Match (the etag of the page before),
// the docs whose _ts is at or after If-Modified-Since, each at its latest
// version — the world's docs not written since (positions 0 to the
// world's size; they all have the world's _ts), then the log of writes
// (each entry that is its doc's latest and no delete).
func (d *scaleDocs) changes(w http.ResponseWriter, r *http.Request, container string) {
	after := 0
	if inm := strings.Trim(r.Header.Get("If-None-Match"), `"`); inm != "" {
		after, _ = strconv.Atoi(inm)
	}
	since := int64(0)
	if s := r.Header.Get("If-Modified-Since"); s != "" {
		t, err := time.Parse(time.RFC1123, s)
		if err != nil {
			cosmosError(w, http.StatusBadRequest, "If-Modified-Since "+s)
			return
		}
		since = t.Unix()
	}
	limit, err := strconv.Atoi(r.Header.Get("x-ms-max-item-count"))
	if err != nil || limit <= 0 {
		limit = 1000
	}
	worldSize := d.worldSize(container)
	if d.w.stamp.Unix() < since {
		after = max(after, worldSize)
	}
	var b bytes.Buffer
	b.WriteString(`{"_rid":"coll","Documents":[`)
	n, p := 0, after
	for ; n < limit; p++ {
		doc, ok, more := d.feedAt(container, p, worldSize, since)
		if !more {
			break
		}
		if !ok {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(doc.render(container))
		n++
	}
	w.Header().Set("etag", `"`+strconv.Itoa(p)+`"`)
	if n == 0 {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	fmt.Fprintf(&b, `],"_count":%d}`, n)
	w.Header().Set("x-ms-item-count", strconv.Itoa(n))
	_, _ = w.Write(b.Bytes())
}

// feedAt is the change feed's entry at position p: the doc, and whether
// it is one the feed gives since since (Unix seconds); more is false past
// the end.
func (d *scaleDocs) feedAt(container string, p, worldSize int, since int64) (doc scaleDoc, ok, more bool) {
	if p < worldSize {
		doc = d.world(container, p)
		d.mu.Lock()
		_, written := d.latest[docKey(container, doc.scope, doc.id)]
		d.mu.Unlock()
		return doc, !written, true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	log := d.log[container]
	if p-worldSize >= len(log) {
		return scaleDoc{}, false, false
	}
	doc = log[p-worldSize]
	return doc, doc.json != nil && doc.ts >= since && d.latest[docKey(container, doc.scope, doc.id)] == p-worldSize, true
}
