package fakes

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bifrost/bifrost-migrate/store"
)

// Docs is the docs of one Cosmos DB database in memory, with the methods
// of azure.CosmosDocs (migrate.DocWriter and migrate.DocStore); Reader
// gives those of azure.DocReader. Every container exists and is
// partitioned by /scope, as init's definitions say.
//
// As in the service, every write gives the doc a new _etag and _ts and a
// new place in the change feed; a doc is read back as it was written,
// without the system properties it carried (_rid, _self, _etag,
// _attachments, _ts, which the service owns), followed by the service's.
// A doc whose id or scope is not the id or partition it is written to is
// refused (400), as the service refuses a partition key that does not
// match the doc's.
//
// Docs is safe for concurrent use; set its fields before first use.
type Docs struct {
	// Charge is the request charge every request reports (the emulator
	// reports none: 0).
	Charge float64
	// BeforeWrite, when set, runs before each Upsert, Create, Replace
	// and Delete.
	BeforeWrite BeforeWrite
	// Now gives the docs' _ts; nil means the fakes' own clock (a second
	// later at each write).
	Now func() time.Time
	// Feed, when set, rewrites what one Changes call delivers: a test can
	// send a doc twice, or an older copy after the newer one, as the
	// service's change feed may when docs change during a pass.
	Feed func(container string, docs [][]byte) [][]byte
	// RefuseContainerCounts, when set, refuses the count of a whole
	// container ("SELECT VALUE COUNT(1) FROM c") with a 400, as the
	// gateway of an account of several physical partitions refuses a
	// cross-partition aggregate from the Go SDK; a scope's count is still
	// answered (one partition).
	RefuseContainerCounts bool

	clock  clock
	mu     sync.Mutex
	docs   map[docKey]*docEntry
	seq    uint64 // the last sequence number given (_rid order, _lsn)
	writes int
}

type docKey struct{ container, scope, id string }

func (k docKey) String() string { return k.container + "/" + k.scope + "/" + k.id }

// docEntry is a stored doc.
type docEntry struct {
	body []byte // as written, without system properties
	etag string
	ts   int64  // _ts, Unix seconds
	rid  uint64 // creation order
	lsn  uint64 // the sequence number of its last change
}

// NewDocs returns an empty database.
func NewDocs() *Docs { return &Docs{docs: map[docKey]*docEntry{}} }

// systemProps are the properties the service owns; a written doc's own
// are dropped.
var systemProps = map[string]bool{"_rid": true, "_self": true, "_etag": true, "_attachments": true, "_ts": true}

// badRequest is the service's answer to a doc it cannot take.
func badRequest(op string, k docKey, why string) error {
	return fault(store.Refused, http.StatusBadRequest, "cosmos %s %s: 400 Bad Request: %s", op, k, why)
}

// prepare checks that doc is a JSON object whose id and scope are k's and
// returns it without system properties (the same bytes when it has none).
func prepare(op string, k docKey, doc []byte) ([]byte, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(doc))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, badRequest(op, k, "the doc is not a JSON object")
	}
	out := []byte{'{'}
	var id, scope *string
	stripped := false
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, badRequest(op, k, "the doc is not valid JSON: "+err.Error())
		}
		n := name.String() // before the next read voids the token
		val, err := dec.ReadValue()
		if err != nil {
			return nil, badRequest(op, k, "the doc is not valid JSON: "+err.Error())
		}
		switch {
		case systemProps[n]:
			stripped = true
			continue
		case n == "id":
			id = stringValue(val)
		case n == "scope":
			scope = stringValue(val)
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out, _ = jsontext.AppendQuote(out, n) // n came from a valid JSON string
		out = append(append(out, ':'), val...)
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, badRequest(op, k, "the doc is not valid JSON: "+err.Error())
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, badRequest(op, k, "the doc is followed by more JSON")
	}
	switch {
	case id == nil || *id != k.id:
		return nil, badRequest(op, k, fmt.Sprintf("the doc's id is not %q", k.id))
	case scope == nil || *scope != k.scope:
		return nil, badRequest(op, k, "PartitionKey extracted from document doesn't match the one specified in the header")
	}
	if !stripped {
		return bytes.Clone(doc), nil
	}
	return append(out, '}'), nil
}

// stringValue is the string a JSON value holds, nil when it is not one.
func stringValue(v jsontext.Value) *string {
	var s string
	if json.Unmarshal(v, &s) != nil {
		return nil
	}
	return &s
}

// put stores body as k's new version (the caller holds d.mu).
func (d *Docs) put(k docKey, body []byte) *docEntry {
	if d.docs == nil {
		d.docs = map[docKey]*docEntry{}
	}
	d.seq++
	e := d.docs[k]
	if e == nil {
		e = &docEntry{rid: d.seq}
		d.docs[k] = e
	}
	e.body, e.lsn = body, d.seq
	e.etag = fmt.Sprintf(`"%08x-0000-0000-0000-000000000000"`, d.seq)
	e.ts = d.clock.now(d.Now).Unix()
	return e
}

// render is e as the service returns it: the doc followed by its system
// properties.
func (e *docEntry) render(k docKey) []byte {
	body := bytes.TrimRight(e.body, " \t\r\n")
	out := append([]byte(nil), body[:len(body)-1]...)
	if len(bytes.TrimSpace(out)) > 1 {
		out = append(out, ',')
	}
	rid := fmt.Sprintf("fake%d", e.rid)
	etag, _ := json.Marshal(e.etag) // a string always encodes
	out = fmt.Appendf(out, `"_rid":%q,"_self":%q,"_etag":%s,"_attachments":"attachments/","_ts":%d}`,
		rid, "dbs/fake/colls/"+k.container+"/docs/"+rid+"/", etag, e.ts)
	return out
}

// write runs BeforeWrite and the checks every write shares, and returns
// the doc to store (nil for a delete).
func (d *Docs) write(ctx context.Context, op string, k docKey, doc []byte) ([]byte, error) {
	if d.BeforeWrite != nil {
		if err := d.BeforeWrite(ctx, Op{Name: op, Container: k.container, Partition: k.scope, ID: k.id}); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cosmos %s %s: %w", op, k, err)
	}
	if doc == nil {
		return nil, nil
	}
	return prepare(op, k, doc)
}

// Upsert creates or replaces the doc, as azure.CosmosDocs.Upsert.
func (d *Docs) Upsert(ctx context.Context, container, scope, id string, doc []byte) (store.WriteResult, error) {
	k := docKey{container, scope, id}
	body, err := d.write(ctx, "upsert", k, doc)
	if err != nil {
		return store.WriteResult{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.writes++
	return store.WriteResult{RequestCharge: d.Charge, ETag: d.put(k, body).etag}, nil
}

// Create creates the doc; one that exists gives a fault of kind
// store.Exists (409).
func (d *Docs) Create(ctx context.Context, container, scope, id string, doc []byte) (store.WriteResult, error) {
	k := docKey{container, scope, id}
	body, err := d.write(ctx, "create", k, doc)
	if err != nil {
		return store.WriteResult{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.docs[k] != nil {
		return store.WriteResult{}, fault(store.Exists, http.StatusConflict, "cosmos create %s: 409 Conflict", k)
	}
	d.writes++
	return store.WriteResult{RequestCharge: d.Charge, ETag: d.put(k, body).etag}, nil
}

// check answers If-Match as the service does: a missing doc is 404
// (store.NotFound), another _etag 412 (store.Changed); an empty ifMatch
// is no condition. The caller holds d.mu.
func (d *Docs) check(op string, k docKey, ifMatch string) error {
	e := d.docs[k]
	switch {
	case e == nil:
		return fault(store.NotFound, http.StatusNotFound, "cosmos %s %s: 404 Not Found", op, k)
	case ifMatch != "" && ifMatch != e.etag:
		return fault(store.Changed, http.StatusPreconditionFailed, "cosmos %s %s: 412 Precondition Failed", op, k)
	}
	return nil
}

// Replace replaces the doc if its _etag is ifMatch (no condition when
// empty), as azure.CosmosDocs.Replace.
func (d *Docs) Replace(ctx context.Context, container, scope, id string, doc []byte, ifMatch string) (store.WriteResult, error) {
	k := docKey{container, scope, id}
	body, err := d.write(ctx, "replace", k, doc)
	if err != nil {
		return store.WriteResult{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check("replace", k, ifMatch); err != nil {
		return store.WriteResult{}, err
	}
	d.writes++
	return store.WriteResult{RequestCharge: d.Charge, ETag: d.put(k, body).etag}, nil
}

// Delete deletes the doc if its _etag is ifMatch (no condition when
// empty), with the errors of Replace.
func (d *Docs) Delete(ctx context.Context, container, scope, id, ifMatch string) (store.WriteResult, error) {
	k := docKey{container, scope, id}
	if _, err := d.write(ctx, "delete", k, nil); err != nil {
		return store.WriteResult{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check("delete", k, ifMatch); err != nil {
		return store.WriteResult{}, err
	}
	d.writes++
	delete(d.docs, k)
	return store.WriteResult{RequestCharge: d.Charge}, nil
}

// Read point-reads a doc, as azure.CosmosDocs.Read: a missing doc is
// found false and no error.
func (d *Docs) Read(ctx context.Context, container, scope, id string) (doc []byte, etag string, found bool, charge float64, err error) {
	if err := ctx.Err(); err != nil {
		return nil, "", false, 0, fmt.Errorf("cosmos read %s/%s: %w", container, id, err)
	}
	k := docKey{container, scope, id}
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.docs[k]
	if e == nil {
		return nil, "", false, d.Charge, nil
	}
	return e.render(k), e.etag, true, d.Charge, nil
}

// Put stores doc (JSON with string id and scope) in container as the
// application would: with a new _etag, _ts and place in the change feed,
// replacing any doc with its id and scope. It does not count as a write
// of the tool's (Writes) and runs no BeforeWrite. It returns the doc's
// _etag, and panics when doc has no string id and scope: a mistake in the
// test.
func (d *Docs) Put(container string, doc []byte) string {
	var ids struct{ ID, Scope *string }
	if err := json.Unmarshal(doc, &ids); err != nil || ids.ID == nil || ids.Scope == nil {
		panic(fmt.Sprintf("fakes: Docs.Put: the doc has no string id and scope (%v): %s", err, doc))
	}
	k := docKey{container, *ids.Scope, *ids.ID}
	body, err := prepare("put", k, doc)
	if err != nil {
		panic("fakes: Docs.Put: " + err.Error())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.put(k, body).etag
}

// Touch saves the doc again unchanged, as an application re-saving it: a
// new _etag, _ts and place in the change feed. It reports whether the doc
// exists.
func (d *Docs) Touch(container, scope, id string) bool {
	k := docKey{container, scope, id}
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.docs[k]
	if e != nil {
		d.put(k, e.body)
	}
	return e != nil
}

// Doc returns the doc as a read returns it (with its system properties).
func (d *Docs) Doc(container, scope, id string) ([]byte, bool) {
	k := docKey{container, scope, id}
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.docs[k]; e != nil {
		return e.render(k), true
	}
	return nil, false
}

// Snapshot returns every doc as written (without system properties) by
// "container/scope/id".
func (d *Docs) Snapshot() map[string][]byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string][]byte, len(d.docs))
	for k, e := range d.docs {
		out[k.String()] = bytes.Clone(e.body)
	}
	return out
}

// Writes returns the number of writes that succeeded (Upsert, Create,
// Replace, Delete).
func (d *Docs) Writes() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.writes
}

// Reader returns the read side of d, as azure.DocReader has it.
func (d *Docs) Reader() *DocReader { return &DocReader{d: d} }

// DocReader is the read side of Docs with the methods of azure.DocReader
// (verify.DocSource, migrate.DocQuerier, migrate.ChangeFeed). It is safe
// for concurrent use.
type DocReader struct{ d *Docs }

// The queries the fake answers: every doc; the number of docs of the
// container; the number of docs of a scope and their ids (verify
// --since), with the parameter @scope.
const (
	selectAll    = "SELECT * FROM c"
	countAll     = "SELECT VALUE COUNT(1) FROM c"
	countOfScope = "SELECT VALUE COUNT(1) FROM c WHERE c.scope = @scope"
	idsOfScope   = "SELECT c.id FROM c WHERE c.scope = @scope"
)

// entries returns the docs of container that keep selects, rendered by
// render, in the order of order's numbers (the caller holds d.mu).
func (d *Docs) entries(container string, keep func(*docEntry) bool, order func(*docEntry) uint64, render func(docKey, *docEntry) []byte) [][]byte {
	type item struct {
		n   uint64
		doc []byte
	}
	var items []item
	for k, e := range d.docs {
		if k.container == container && keep(e) {
			items = append(items, item{order(e), render(k, e)})
		}
	}
	slices.SortFunc(items, func(a, b item) int { return cmp.Compare(a.n, b.n) })
	out := make([][]byte, len(items))
	for i, it := range items {
		out[i] = it.doc
	}
	return out
}

// QueryAll answers "SELECT * FROM c" with every doc of container, in the
// order they were created, as the service lists one partition; "SELECT
// VALUE COUNT(1) FROM c" with their number (unless RefuseContainerCounts:
// a *store.Fault of kind Refused, status 400); and, with the parameter
// @scope, "SELECT VALUE COUNT(1) FROM c WHERE c.scope = @scope" with the
// number of docs of that scope and "SELECT c.id FROM c WHERE c.scope =
// @scope" with {"id": …} of each. It refuses any other query. fn gets
// each item's raw JSON, its own to keep; it may call the fake.
func (r *DocReader) QueryAll(ctx context.Context, container, query string, params []store.QueryParam, pageSize int, fn func(doc []byte) error) error {
	q := strings.TrimSpace(query)
	var scope string
	switch {
	case q == countAll && len(params) == 0 && r.d.RefuseContainerCounts:
		return &store.Fault{Kind: store.Refused, Status: 400, Reason: fmt.Sprintf("query container %s: the cross partition query can not be directly served by the gateway", container)}
	case (q == selectAll || q == countAll) && len(params) == 0:
	case (q == countOfScope || q == idsOfScope) && len(params) == 1 && params[0].Name == "@scope":
		var ok bool
		if scope, ok = params[0].Value.(string); !ok {
			return fmt.Errorf("fakes: query container %s: @scope is not a string", container)
		}
	default:
		return fmt.Errorf("fakes: query container %s: the fake answers %q, %q, %q and %q only, not %q", container, selectAll, countAll, countOfScope, idsOfScope, query)
	}
	r.d.mu.Lock()
	var docs [][]byte
	switch q {
	case selectAll:
		docs = r.d.entries(container, func(*docEntry) bool { return true }, func(e *docEntry) uint64 { return e.rid },
			func(k docKey, e *docEntry) []byte { return e.render(k) })
	case countAll:
		docs = [][]byte{[]byte(strconv.Itoa(len(r.d.entries(container, func(*docEntry) bool { return true },
			func(e *docEntry) uint64 { return e.rid }, func(docKey, *docEntry) []byte { return nil }))))}
	default:
		docs = r.d.entries(container, func(*docEntry) bool { return true }, func(e *docEntry) uint64 { return e.rid },
			func(k docKey, e *docEntry) []byte {
				if k.scope != scope {
					return nil
				}
				b, _ := json.Marshal(map[string]string{"id": k.id})
				return b
			})
		docs = slices.DeleteFunc(docs, func(b []byte) bool { return b == nil })
		if q == countOfScope {
			docs = [][]byte{[]byte(strconv.Itoa(len(docs)))}
		}
	}
	r.d.mu.Unlock()
	for _, doc := range docs {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("query container %s: %w", container, err)
		}
		if err := fn(doc); err != nil {
			return err
		}
	}
	return nil
}

// Read point-reads a doc, as azure.DocReader.Read.
func (r *DocReader) Read(ctx context.Context, container, scope, id string) (doc []byte, found bool, err error) {
	doc, _, found, _, err = r.d.Read(ctx, container, scope, id)
	return doc, found, err
}

// ErrBadChangePosition is wrapped by the error of Changes given a position
// that neither Since nor Changes made.
var ErrBadChangePosition = errors.New("not a change feed position of the fake")

// Since returns the position of the change feed at t, as
// azure.ChangeFeedSince: Changes from it reads the docs whose _ts is at or
// after t rounded down to the second; the zero time is the beginning.
func (r *DocReader) Since(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return "since:" + strconv.FormatInt(t.Truncate(time.Second).Unix(), 10)
}

// position is a parsed position of the change feed.
type position struct {
	lsn   uint64 // changes after this sequence number
	since int64  // with _ts at or after this (Unix seconds)
}

func parsePosition(s string) (position, error) {
	var p position
	var err error
	switch {
	case s == "":
	case strings.HasPrefix(s, "since:"):
		p.since, err = strconv.ParseInt(s[len("since:"):], 10, 64)
	case strings.HasPrefix(s, "lsn:"):
		p.lsn, err = strconv.ParseUint(s[len("lsn:"):], 10, 64)
	default:
		err = ErrBadChangePosition
	}
	if err != nil {
		return p, fmt.Errorf("change feed position %q: %w", s, ErrBadChangePosition)
	}
	return p, nil
}

// Changes calls fn with each doc of container changed after position
// from, once, at its latest version, in the order of their last changes,
// each with its "_lsn" as the service's change feed sends it (deletes
// are not changes it reports), and returns the position after them. Feed,
// when set, rewrites the docs delivered. pageSize is not used.
func (r *DocReader) Changes(ctx context.Context, container, from string, pageSize int, fn func(doc []byte) error) (string, error) {
	pos, err := parsePosition(from)
	if err != nil {
		return "", err
	}
	r.d.mu.Lock()
	docs := r.d.entries(container, func(e *docEntry) bool { return e.lsn > pos.lsn && e.ts >= pos.since },
		func(e *docEntry) uint64 { return e.lsn },
		func(k docKey, e *docEntry) []byte {
			doc := e.render(k)
			return fmt.Appendf(doc[:len(doc)-1], `,"_lsn":%d}`, e.lsn)
		})
	next := "lsn:" + strconv.FormatUint(r.d.seq, 10)
	feed := r.d.Feed
	r.d.mu.Unlock()
	if feed != nil {
		docs = feed(container, docs)
	}
	for _, doc := range docs {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("change feed of container %s: %w", container, err)
		}
		if err := fn(doc); err != nil {
			return "", err
		}
	}
	return next, nil
}
