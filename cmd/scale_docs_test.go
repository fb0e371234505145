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
	"time"

	"github.com/bifrost/bifrost-migrate/transform"
)

// scaleDocs is the read side of the scale benchmark's Cosmos DB service:
// the docs run writes for a world (--execution-ttl full, so that each
// follows from its row alone), computed from the world's rows when they
// are asked for and never held: execution n's doc in container
// executions (the repetitions of org 0's executions collide, so are not
// docs), the docs of the small rows in container entities. Every doc has
// the system properties of a doc written when the rows were (_ts: the
// world's Timestamp). It answers:
//
//   - the query "SELECT * FROM c" of a container, in pages of at most
//     x-ms-max-item-count docs and, as the service answers, about 4 MB
//     (scalePageBytes) with an opaque continuation;
//   - "SELECT VALUE COUNT(1) FROM c WHERE c.scope = @scope" and "SELECT
//     c.id FROM c WHERE c.scope = @scope" (verify --since), the latter in
//     pages too;
//   - point reads, by id and partition key;
//   - the partition key ranges (one range) and the change feed in latest
//     version mode: the docs whose _ts is at or after If-Modified-Since,
//     in pages whose etag is the continuation, 304 when none is left.
//
// Every doc is the transform of its row as run makes it, with the
// world's Timestamp as its _ts: nothing changed since. A benchmark of
// changes (a replay pass, the write-stop window) would keep the changed
// rows and docs beside the world and serve them here after the computed
// ones — in the change feed with their own _ts, in the counts, the
// queries and the point reads.
type scaleDocs struct {
	w    *scaleWorld
	opts transform.Options
	// others are the docs of the small rows, by container, in id order.
	others map[string][]scaleDoc
	// counts are the docs of each scope, by container.
	counts map[string]map[string]int
}

// scaleDoc is a doc as the service holds it.
type scaleDoc struct {
	scope, id string
	ts        int64
	json      []byte // without system properties
}

func newScaleDocs(w *scaleWorld) *scaleDocs {
	d := &scaleDocs{w: w, opts: scaleTransform, others: map[string][]scaleDoc{}, counts: map[string]map[string]int{
		transform.ContainerEntities: {}, transform.ContainerExecutions: {}}}
	d.opts.Now = time.Now()
	ids := transform.NewIDSet()
	for _, table := range []string{"Config", "Entities"} {
		for _, seg := range w.tables[table].segs {
			fixed, ok := seg.(fixedRows)
			if !ok {
				continue
			}
			for _, row := range fixed {
				o := ids.Check(transform.Transform(row, transform.BlobFacts{}, d.opts))
				if o.Disposition == transform.DispositionDoc {
					d.others[o.Container] = append(d.others[o.Container], scaleDoc{o.Scope, o.ID, w.stamp.Unix(), o.DocJSON})
					d.counts[o.Container][o.Scope]++
				}
			}
		}
	}
	for c := range d.others {
		slices.SortFunc(d.others[c], func(a, b scaleDoc) int { return strings.Compare(a.id, b.id) })
	}
	for o, pk := range w.orgs {
		d.counts[transform.ContainerExecutions][transform.Scope(pk)] += residueCount(w.n, scaleOrgs, o)
	}
	return d
}

// size is the number of docs of container.
func (d *scaleDocs) size(container string) int {
	n := len(d.others[container])
	if container == transform.ContainerExecutions {
		n += d.w.n
	}
	return n
}

// at is the doc at position p of container: the small rows' docs, then
// (executions) execution p-len(others).
func (d *scaleDocs) at(container string, p int) scaleDoc {
	if p < len(d.others[container]) {
		return d.others[container][p]
	}
	n := p - len(d.others[container])
	o := transform.Transform(d.w.execRow(n, d.w.orgs[d.w.org(n)]), d.w.execFacts(n), d.opts)
	return scaleDoc{o.Scope, o.ID, d.w.stamp.Unix(), o.DocJSON}
}

// find returns the doc id in scope of container, if there is one.
func (d *scaleDocs) find(container, scope, id string) (scaleDoc, bool) {
	if container == transform.ContainerExecutions {
		if n := execOfID(id); n >= 0 && n < d.w.n {
			if doc := d.at(container, len(d.others[container])+n); doc.scope == scope {
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

// render is doc as the service returns it: with its system properties.
func (doc scaleDoc) render(container string) []byte {
	b := slices.Clip(bytes.TrimSuffix(doc.json, []byte("}"))) // a copy, not doc's bytes
	return fmt.Appendf(b, `,"_rid":"%s","_self":"dbs/db/colls/%s/docs/%s/","_etag":"\"%x\"","_attachments":"attachments/","_ts":%d}`,
		doc.id, container, doc.id, digest(doc.json), doc.ts)
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
		d.page(w, d.size(container), from, limit, func(p int) []byte { return d.at(container, p).render(container) })
	case "SELECT VALUE COUNT(1) FROM c WHERE c.scope = @scope":
		s, _ := scope.(string)
		fmt.Fprintf(w, `{"_rid":"coll","Documents":[%d],"_count":1}`, d.counts[container][s])
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
	var ids []string
	for _, doc := range d.others[container] {
		if doc.scope == scope {
			ids = append(ids, doc.id)
		}
	}
	if container == transform.ContainerExecutions {
		for o, pk := range d.w.orgs {
			if transform.Scope(pk) == scope {
				for n := o; n < d.w.n; n += scaleOrgs {
					ids = append(ids, execID(n))
				}
			}
		}
	}
	return ids
}

// scalePageBytes is about the most a page of a query's answer holds: the
// service ends a page at 4 MB whatever x-ms-max-item-count asks for, so
// that a page's request charge stays within what an account serves.
const scalePageBytes = 4 << 20

// page writes the items from position from on, of total (at most limit,
// and no more once the page has scalePageBytes), with a continuation
// when more follow.
func (d *scaleDocs) page(w http.ResponseWriter, total, from, limit int, item func(p int) []byte) {
	var b bytes.Buffer
	b.WriteString(`{"_rid":"coll","Documents":[`)
	end := min(total, from+limit)
	for p := from; p < end; p++ {
		if b.Len() >= scalePageBytes {
			end = p
			break
		}
		if p > from {
			b.WriteByte(',')
		}
		b.Write(item(p))
	}
	fmt.Fprintf(&b, `],"_count":%d}`, max(0, end-from))
	if end < total {
		w.Header().Set("x-ms-continuation", strconv.Itoa(end))
	}
	w.Header().Set("x-ms-item-count", strconv.Itoa(max(0, end-from)))
	w.Header().Set("x-ms-request-charge", strconv.FormatFloat(float64(b.Len())/1024, 'f', 2, 64))
	_, _ = w.Write(b.Bytes())
}

// read answers a point read.
func (d *scaleDocs) read(w http.ResponseWriter, r *http.Request, container, id string) {
	var pk []string
	if err := json.Unmarshal([]byte(r.Header.Get("x-ms-documentdb-partitionkey")), &pk); err != nil || len(pk) != 1 {
		cosmosError(w, http.StatusBadRequest, "no partition key")
		return
	}
	doc, ok := d.find(container, pk[0], id)
	if !ok {
		cosmosError(w, http.StatusNotFound, "Entity with the specified id does not exist in the system.")
		return
	}
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

// changes answers a read of container's change feed: its docs in log
// order (positions 1 to size) after the continuation in If-None-Match
// whose _ts is at or after If-Modified-Since — all of them, or none,
// since they all have the world's _ts.
func (d *scaleDocs) changes(w http.ResponseWriter, r *http.Request, container string) {
	after := 0
	if inm := strings.Trim(r.Header.Get("If-None-Match"), `"`); inm != "" {
		after, _ = strconv.Atoi(inm)
	}
	if s := r.Header.Get("If-Modified-Since"); s != "" {
		t, err := time.Parse(time.RFC1123, s)
		if err != nil {
			cosmosError(w, http.StatusBadRequest, "If-Modified-Since "+s)
			return
		}
		if d.w.stamp.Unix() < t.Unix() {
			after = d.size(container)
		}
	}
	n, err := strconv.Atoi(r.Header.Get("x-ms-max-item-count"))
	if err != nil || n <= 0 {
		n = 1000
	}
	end := min(d.size(container), after+n)
	w.Header().Set("etag", `"`+strconv.Itoa(max(end, after))+`"`)
	if end <= after {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	var b bytes.Buffer
	b.WriteString(`{"_rid":"coll","Documents":[`)
	for p := after; p < end; p++ {
		if p > after {
			b.WriteByte(',')
		}
		b.Write(d.at(container, p).render(container))
	}
	fmt.Fprintf(&b, `],"_count":%d}`, end-after)
	w.Header().Set("x-ms-item-count", strconv.Itoa(end-after))
	_, _ = w.Write(b.Bytes())
}
