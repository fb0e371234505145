package fakes_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
	"github.com/bifrost/bifrost-migrate/verify"
)

// The conformance suite (restic's backend test suite is the model): one
// set of cases, run against the fakes always and against the azure
// adapters on the emulators when test.sh started them, so that a fake
// cannot drift from the service the tests of migrate and verify take it
// for. A case states what the engine relies on: ETags, If-Match (412),
// create of what exists (409), writes of what is gone (404), key order,
// the query filter, the change feed.

// The ports the fakes and the adapters both implement.
type (
	docStore interface {
		migrate.DocWriter
		migrate.DocStore
	}
	docReader interface {
		verify.DocSource
		migrate.DocQuerier
		migrate.ChangeFeed
	}
	rowStore interface {
		migrate.RowStore
		migrate.RowSource
		verify.RowSource
		fixtures.TableWriter
	}
	blobStore interface {
		migrate.BlobStore
		verify.BlobLister
	}
)

var (
	_ docStore            = (*fakes.Docs)(nil)
	_ docReader           = (*fakes.DocReader)(nil)
	_ rowStore            = (*fakes.Tables)(nil)
	_ blobStore           = (*fakes.Blobs)(nil)
	_ fixtures.BlobWriter = (*fakes.Blobs)(nil)

	_ docStore  = (*azure.CosmosDocs)(nil)
	_ docReader = (*azure.DocReader)(nil)
	_ rowStore  = tableRows{}
	_ blobStore = (*azure.BlobStore)(nil)
)

// tableRows is the adapters' rowStore, as cmd builds reverse's.
type tableRows struct {
	*azure.TableReader
	*azure.TableWriter
}

// services is what one case works on: a container (partitioned by
// /scope) of its own, a table of its own that exists, a name of a table
// that does not, and a blob container of its own.
type services struct {
	docs      docStore
	reader    docReader
	since     func(time.Time) string // the change feed's position at a time
	container string
	rows      rowStore
	table     string
	noTable   string
	blobs     blobStore
	// blobWriter writes into the same blob container as blobs (fixtures
	// load's writer).
	blobWriter fixtures.BlobWriter
}

// backend makes a case's services.
type backend func(t *testing.T) services

func TestConformance(t *testing.T) {
	for _, b := range []struct {
		name string
		make func(t *testing.T) backend
	}{{"fakes", fakeBackend}, {"azure", azureBackend}} {
		t.Run(b.name, func(t *testing.T) {
			newServices := b.make(t)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { c.run(t, newServices(t)) })
			}
		})
	}
}

func fakeBackend(*testing.T) backend {
	return func(t *testing.T) services {
		docs := fakes.NewDocs()
		blobs := fakes.NewBlobs()
		return services{docs: docs, reader: docs.Reader(), since: docs.Reader().Since, container: "docs",
			rows: fakes.NewTables("rows"), table: "rows", noTable: "missing", blobs: blobs, blobWriter: blobs}
	}
}

// azureBackend gives the adapters on the emulators, in names of their own:
// one database, a container, a table and a blob container per case. Docs
// go through the fault proxy's change feed (the Cosmos DB stand-in has
// none), which forwards everything else untouched. Without the emulators
// it skips (fails under BIFROST_INTEGRATION=1).
func azureBackend(t *testing.T) backend {
	ctx := context.Background()
	acct, cacct := testenv.Storage(t), testenv.Cosmos(t)
	direct, err := azure.NewCosmosClient(cacct, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db := testenv.Name("conformance")
	if _, err := direct.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: db}, nil); err != nil {
		t.Fatal(err)
	}
	database, err := direct.NewDatabase(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = database.Delete(context.WithoutCancel(ctx), nil) })
	proxy, err := faultproxy.Start(faultproxy.Config{Target: cacct.Endpoint, ChangeFeed: &faultproxy.ChangeFeed{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	cacct.Endpoint = proxy.URL()
	client, err := azure.NewCosmosClient(cacct, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reader, err := azure.NewDocReader(client, db)
	if err != nil {
		t.Fatal(err)
	}
	docs := azure.NewCosmosDocs(client, db, &azure.RetryOptions{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond})
	tw, err := azure.NewTableWriter(acct, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows := tableRows{azure.NewTableReader(acct, azure.Options{}), tw}
	return func(t *testing.T) services {
		s := services{docs: docs, reader: reader, since: azure.ChangeFeedSince, rows: rows,
			container: testenv.Name("c"), table: testenv.Name("t"), noTable: testenv.Name("missing")}
		if _, err := database.CreateContainer(ctx, azcosmos.ContainerProperties{ID: s.container,
			PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/scope"}}}, nil); err != nil {
			t.Fatal(err)
		}
		if err := tw.CreateTable(ctx, s.table); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tw.DeleteTable(context.WithoutCancel(ctx), s.table) })
		name := testenv.Name("b")
		c, err := azure.NewBlobContainerClient(acct, name, azure.Options{})
		if err != nil {
			t.Fatal(err)
		}
		bs := azure.NewBlobStore(c)
		if err := bs.EnsureContainer(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = c.Delete(context.WithoutCancel(ctx), nil) })
		s.blobs = bs
		if s.blobWriter, err = azure.NewBlobWriter(acct, name, azure.Options{}); err != nil {
			t.Fatal(err)
		}
		return s
	}
}

var cases = []struct {
	name string
	run  func(t *testing.T, s services)
}{
	{"DocsConditionalWrites", docsConditionalWrites},
	{"DocsUnconditionalWrites", docsUnconditionalWrites},
	{"DocsSystemProperties", docsSystemProperties},
	{"DocsQueryAndRead", docsQueryAndRead},
	{"DocsChangeFeed", docsChangeFeed},
	{"RowsConditionalWrites", rowsConditionalWrites},
	{"RowsPagesInKeyOrder", rowsPagesInKeyOrder},
	{"RowsQueryFilter", rowsQueryFilter},
	{"RowsSelect", rowsSelect},
	{"RowsMissingTable", rowsMissingTable},
	{"RowsUpsertBatch", rowsUpsertBatch},
	{"BlobsPutIfAbsent", blobsPutIfAbsent},
	{"BlobsUpload", blobsUpload},
	{"BlobsListInNameOrder", blobsListInNameOrder},
}

var bg = context.Background()

// testDoc is a doc of scope with id and a value n.
func testDoc(id, scope string, n int) []byte {
	return fmt.Appendf(nil, `{"id":%q,"scope":%q,"type":"test","n":%d}`, id, scope, n)
}

// docFields decodes a doc's JSON.
func docFields(t *testing.T, doc []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatalf("doc %s: %v", doc, err)
	}
	return m
}

// readN point-reads a doc and returns its n and etag; -1 when missing.
func readN(t *testing.T, s services, scope, id string) (float64, string) {
	t.Helper()
	doc, etag, found, _, err := s.docs.Read(bg, s.container, scope, id)
	if err != nil {
		t.Fatalf("read %s: %v", id, err)
	}
	if !found {
		return -1, ""
	}
	m := docFields(t, doc)
	if m["_etag"] != etag {
		t.Errorf("read %s: etag %q, the doc's _etag %v", id, etag, m["_etag"])
	}
	return m["n"].(float64), etag
}

// wantErr checks that err wraps want (nil: that it is nil).
func wantErr(t *testing.T, what string, err error, want store.FaultKind) {
	t.Helper()
	switch got := store.KindOf(err); {
	case want == store.NoFault && err != nil:
		t.Errorf("%s: %v, want no error", what, err)
	case got != want:
		t.Errorf("%s: %v (%s), want a fault of kind %s", what, err, got, want)
	}
}

// Create, Replace and Delete with If-Match: 409 for a create of what
// exists, 412 for a stale etag, 404 for what is gone; a refused write
// changes nothing; every write gives a new etag, which a read returns.
func docsConditionalWrites(t *testing.T, s services) {
	w, err := s.docs.Create(bg, s.container, "s1", "d1", testDoc("d1", "s1", 1))
	wantErr(t, "create", err, store.NoFault)
	if n, etag := readN(t, s, "s1", "d1"); n != 1 || etag != w.ETag || etag == "" {
		t.Fatalf("after create: n %v etag %q, want 1 and the create's %q", n, etag, w.ETag)
	}
	_, err = s.docs.Create(bg, s.container, "s1", "d1", testDoc("d1", "s1", 2))
	wantErr(t, "create again", err, store.Exists)
	e1 := w.ETag
	w, err = s.docs.Replace(bg, s.container, "s1", "d1", testDoc("d1", "s1", 3), e1)
	wantErr(t, "replace with the etag", err, store.NoFault)
	e2 := w.ETag
	if e2 == e1 || e2 == "" {
		t.Errorf("replace: etag %q, want a new one (was %q)", e2, e1)
	}
	_, err = s.docs.Replace(bg, s.container, "s1", "d1", testDoc("d1", "s1", 4), e1)
	wantErr(t, "replace with a stale etag", err, store.Changed)
	_, err = s.docs.Delete(bg, s.container, "s1", "d1", e1)
	wantErr(t, "delete with a stale etag", err, store.Changed)
	if n, etag := readN(t, s, "s1", "d1"); n != 3 || etag != e2 {
		t.Errorf("after the refused writes: n %v etag %q, want 3 and %q", n, etag, e2)
	}
	_, err = s.docs.Delete(bg, s.container, "s1", "d1", e2)
	wantErr(t, "delete with the etag", err, store.NoFault)
	if n, _ := readN(t, s, "s1", "d1"); n != -1 {
		t.Errorf("after delete: found n %v", n)
	}
	_, err = s.docs.Replace(bg, s.container, "s1", "d1", testDoc("d1", "s1", 5), e2)
	wantErr(t, "replace of a deleted doc", err, store.NotFound)
	_, err = s.docs.Delete(bg, s.container, "s1", "d1", e2)
	wantErr(t, "delete of a deleted doc", err, store.NotFound)
	_, err = s.docs.Delete(bg, s.container, "s1", "d1", "")
	wantErr(t, "unconditional delete of a deleted doc", err, store.NotFound)
	if n, _ := readN(t, s, "s1", "d1"); n != -1 {
		t.Errorf("a replace of a deleted doc created it: n %v", n)
	}
}

// Upsert creates and replaces; Replace and Delete without an etag are
// unconditional; docs of the same id in two partitions are two docs.
func docsUnconditionalWrites(t *testing.T, s services) {
	w1, err := s.docs.Upsert(bg, s.container, "s1", "d1", testDoc("d1", "s1", 1))
	wantErr(t, "upsert (create)", err, store.NoFault)
	w2, err := s.docs.Upsert(bg, s.container, "s1", "d1", testDoc("d1", "s1", 2))
	wantErr(t, "upsert (replace)", err, store.NoFault)
	if n, etag := readN(t, s, "s1", "d1"); n != 2 || etag != w2.ETag || w2.ETag == w1.ETag {
		t.Errorf("after two upserts: n %v etag %q, want 2 and the second's %q (the first's %q)", n, etag, w2.ETag, w1.ETag)
	}
	_, err = s.docs.Replace(bg, s.container, "s1", "d1", testDoc("d1", "s1", 3), "")
	wantErr(t, "replace without an etag", err, store.NoFault)
	_, err = s.docs.Create(bg, s.container, "s2", "d1", testDoc("d1", "s2", 10))
	wantErr(t, "create of the same id in another partition", err, store.NoFault)
	if n1, _ := readN(t, s, "s1", "d1"); n1 != 3 {
		t.Errorf("s1/d1: n %v, want 3", n1)
	}
	_, err = s.docs.Delete(bg, s.container, "s1", "d1", "")
	wantErr(t, "delete without an etag", err, store.NoFault)
	if n1, _ := readN(t, s, "s1", "d1"); n1 != -1 {
		t.Errorf("s1/d1 after delete: n %v", n1)
	}
	if n2, _ := readN(t, s, "s2", "d1"); n2 != 10 {
		t.Errorf("s2/d1 after deleting s1/d1: n %v, want 10", n2)
	}
}

// A read doc carries the service's system properties, its own _etag
// whatever the written doc said. (The service also adds _attachments and
// refuses a doc whose scope is not its partition; the Cosmos DB stand-in
// does neither, so the suite cannot hold the adapter to them: the fake
// does both, as the service.)
func docsSystemProperties(t *testing.T, s services) {
	doc := []byte(`{"id":"d1","scope":"s1","n":1,"_etag":"\"stale\"","_ts":1,"_rid":"x"}`)
	w, err := s.docs.Create(bg, s.container, "s1", "d1", doc)
	wantErr(t, "create with system properties", err, store.NoFault)
	raw, etag, _, _, err := s.docs.Read(bg, s.container, "s1", "d1")
	wantErr(t, "read", err, store.NoFault)
	m := docFields(t, raw)
	if m["_etag"] != etag || etag != w.ETag {
		t.Errorf("_etag %v, read etag %q, create etag %q: want one", m["_etag"], etag, w.ETag)
	}
	if ts, ok := m["_ts"].(float64); !ok || ts == 1 || ts != math.Trunc(ts) {
		t.Errorf("_ts %v, want the service's Unix seconds", m["_ts"])
	}
	for _, p := range []string{"_rid", "_self"} {
		if v, ok := m[p].(string); !ok || v == "" || v == "x" {
			t.Errorf("%s %v, want the service's", p, m[p])
		}
	}
	if m["n"] != 1.0 || m["id"] != "d1" || m["scope"] != "s1" {
		t.Errorf("doc %s", raw)
	}
}

// QueryAll lists every doc of the container with its system properties;
// the reader's point read finds a doc or says it is missing.
func docsQueryAndRead(t *testing.T, s services) {
	etags := map[string]string{}
	for i, id := range []string{"b", "a", "c"} {
		w, err := s.docs.Create(bg, s.container, "s"+id, id, testDoc(id, "s"+id, i))
		wantErr(t, "create "+id, err, store.NoFault)
		etags[id] = w.ETag
	}
	got := map[string]string{}
	err := s.reader.QueryAll(bg, s.container, "SELECT * FROM c", nil, 2, func(doc []byte) error {
		m := docFields(t, doc)
		got[m["id"].(string)] = m["_etag"].(string)
		return nil
	})
	wantErr(t, "query", err, store.NoFault)
	if !reflect.DeepEqual(got, etags) {
		t.Errorf("query: ids and etags %v, want %v", got, etags)
	}
	doc, found, err := s.reader.Read(bg, s.container, "sa", "a")
	if err != nil || !found || docFields(t, doc)["_etag"] != etags["a"] {
		t.Errorf("reader read a: found %v err %v doc %s", found, err, doc)
	}
	if _, found, err := s.reader.Read(bg, s.container, "sa", "nope"); err != nil || found {
		t.Errorf("reader read of a missing doc: found %v err %v", found, err)
	}
	// The number of docs of a scope, and their ids (verify --since).
	_, err = s.docs.Create(bg, s.container, "sa", "a2", testDoc("a2", "sa", 9))
	wantErr(t, "create a2", err, store.NoFault)
	scope := []store.QueryParam{{Name: "@scope", Value: "sa"}}
	var counts []string
	err = s.reader.QueryAll(bg, s.container, "SELECT VALUE COUNT(1) FROM c WHERE c.scope = @scope", scope, 2, func(doc []byte) error {
		counts = append(counts, string(doc))
		return nil
	})
	wantErr(t, "count", err, store.NoFault)
	if !reflect.DeepEqual(counts, []string{"2"}) {
		t.Errorf("count of scope sa: %q, want [2]", counts)
	}
	// The count of the whole container: a cross-partition aggregate,
	// which the local stand-in and the fake answer (the gateway of an
	// account of several physical partitions refuses it: the fake's
	// RefuseContainerCounts).
	var all []string
	err = s.reader.QueryAll(bg, s.container, "SELECT VALUE COUNT(1) FROM c", nil, 2, func(doc []byte) error {
		all = append(all, string(doc))
		return nil
	})
	wantErr(t, "count of the container", err, store.NoFault)
	if want := []string{strconv.Itoa(len(etags) + 1)}; !reflect.DeepEqual(all, want) {
		t.Errorf("count of the container: %q, want %q", all, want)
	}
	var ids []string
	err = s.reader.QueryAll(bg, s.container, "SELECT c.id FROM c WHERE c.scope = @scope", scope, 1, func(doc []byte) error {
		var v map[string]any
		if err := json.Unmarshal(doc, &v); err != nil || len(v) != 1 {
			t.Errorf("id of scope sa: %s", doc)
		}
		ids = append(ids, fmt.Sprint(v["id"]))
		return nil
	})
	wantErr(t, "ids", err, store.NoFault)
	slices.Sort(ids)
	if !reflect.DeepEqual(ids, []string{"a", "a2"}) {
		t.Errorf("ids of scope sa: %q, want [a a2]", ids)
	}
}

// changes runs one pass of the change feed and returns n by id, the
// _lsn and _etag of each doc, and the next position.
func changes(t *testing.T, s services, from string) (map[string]float64, string) {
	t.Helper()
	got := map[string]float64{}
	next, err := s.reader.Changes(bg, s.container, from, 0, func(doc []byte) error {
		m := docFields(t, doc)
		id := m["id"].(string)
		if _, dup := got[id]; dup {
			t.Errorf("the pass sent %s twice", id)
		}
		if _, ok := m["_lsn"].(float64); !ok {
			t.Errorf("%s has no _lsn: %s", id, doc)
		}
		if _, etag := readN(t, s, m["scope"].(string), id); etag != "" && m["_etag"] != etag {
			t.Errorf("%s: _etag %v, a read gives %q", id, m["_etag"], etag)
		}
		got[id] = m["n"].(float64)
		return nil
	})
	if err != nil {
		t.Fatalf("changes from %q: %v", from, err)
	}
	return got, next
}

// The change feed sends each changed doc once at its latest version, then
// from the position it returned only what changed since; deletes are not
// changes it reports; a position at a time selects by _ts.
func docsChangeFeed(t *testing.T, s services) {
	for i, id := range []string{"a", "b"} {
		_, err := s.docs.Create(bg, s.container, "s", id, testDoc(id, "s", i))
		wantErr(t, "create "+id, err, store.NoFault)
	}
	_, err := s.docs.Upsert(bg, s.container, "s", "a", testDoc("a", "s", 10))
	wantErr(t, "upsert a", err, store.NoFault)
	got, next := changes(t, s, s.since(time.Time{}))
	if want := map[string]float64{"a": 10, "b": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("first pass %v, want %v", got, want)
	}
	if got, _ := changes(t, s, next); len(got) != 0 {
		t.Errorf("pass with nothing changed: %v", got)
	}
	_, err = s.docs.Upsert(bg, s.container, "s", "a", testDoc("a", "s", 11))
	wantErr(t, "upsert a", err, store.NoFault)
	_, err = s.docs.Delete(bg, s.container, "s", "b", "")
	wantErr(t, "delete b", err, store.NoFault)
	_, err = s.docs.Create(bg, s.container, "s", "c", testDoc("c", "s", 2))
	wantErr(t, "create c", err, store.NoFault)
	if got, _ := changes(t, s, next); !reflect.DeepEqual(got, map[string]float64{"a": 11, "c": 2}) {
		t.Errorf("pass after changes: %v, want a at 11 and c", got)
	}
	doc, _, _, _, err := s.docs.Read(bg, s.container, "s", "c")
	wantErr(t, "read c", err, store.NoFault)
	ts := time.Unix(int64(docFields(t, doc)["_ts"].(float64)), 0)
	if got, _ := changes(t, s, s.since(ts)); got["c"] != 2 {
		t.Errorf("pass from c's _ts: %v, want c among them", got)
	}
	if got, _ := changes(t, s, s.since(ts.Add(time.Hour))); len(got) != 0 {
		t.Errorf("pass from an hour after the last change: %v", got)
	}
}

// entity is the annotated JSON of a row with a Name and an Int64 N.
func entity(pk, rk, name string, n int64) []byte {
	return transform.EncodeEntity(transform.Row{PartitionKey: pk, RowKey: rk, Props: map[string]transform.Value{
		"Name": transform.String(name), "N": {Type: transform.EdmInt64, Int: n}}})
}

// readRow reads one row by its keys; ok false when it is missing.
func readRow(t *testing.T, s services, pk, rk string) (transform.Row, bool) {
	t.Helper()
	p, err := s.rows.ReadPage(bg, s.table, store.Query{Key: &store.Key{PartitionKey: pk, RowKey: rk}}, store.Cursor{})
	if err != nil {
		t.Fatalf("read %s/%s: %v", pk, rk, err)
	}
	if len(p.Rows) > 1 {
		t.Fatalf("read %s/%s: %d rows", pk, rk, len(p.Rows))
	}
	if len(p.Rows) == 0 {
		return transform.Row{}, false
	}
	return p.Rows[0], true
}

// Insert, Replace and Delete with If-Match, as reverse writes rows: 409,
// 412 and 404 as for docs, "*" matches any row, an empty ETag is refused;
// a row read back carries the write's ETag and a Timestamp; Replace
// removes the properties the new entity lacks.
func rowsConditionalWrites(t *testing.T, s services) {
	e1, err := s.rows.Insert(bg, s.table, entity("p", "r", "one", 1))
	wantErr(t, "insert", err, store.NoFault)
	row, ok := readRow(t, s, "p", "r")
	if !ok || row.ETag != e1 || e1 == "" || row.Timestamp.IsZero() || row.Table != s.table ||
		row.Props["Name"].Str != "one" || !reflect.DeepEqual(row.Props["N"], transform.Value{Type: transform.EdmInt64, Int: 1}) {
		t.Fatalf("after insert: %+v (insert etag %q)", row, e1)
	}
	_, err = s.rows.Insert(bg, s.table, entity("p", "r", "two", 2))
	wantErr(t, "insert again", err, store.Exists)
	e2, err := s.rows.Replace(bg, s.table, []byte(`{"PartitionKey":"p","RowKey":"r","Name":"two"}`), e1)
	wantErr(t, "replace with the etag", err, store.NoFault)
	if row, _ := readRow(t, s, "p", "r"); row.ETag != e2 || e2 == e1 || row.Props["Name"].Str != "two" || len(row.Props) != 1 {
		t.Errorf("after replace: %+v, want only Name two and etag %q (was %q)", row, e2, e1)
	}
	_, err = s.rows.Replace(bg, s.table, entity("p", "r", "three", 3), e1)
	wantErr(t, "replace with a stale etag", err, store.Changed)
	err = s.rows.Delete(bg, s.table, store.Key{PartitionKey: "p", RowKey: "r"}, e1)
	wantErr(t, "delete with a stale etag", err, store.Changed)
	_, err = s.rows.Replace(bg, s.table, entity("p", "r", "four", 4), "")
	if err == nil || store.KindOf(err) == store.Changed || store.KindOf(err) == store.NotFound {
		t.Errorf("replace with no etag: %v, want it refused", err)
	}
	if row, _ := readRow(t, s, "p", "r"); row.ETag != e2 || row.Props["Name"].Str != "two" {
		t.Errorf("after the refused writes: %+v", row)
	}
	e3, err := s.rows.Replace(bg, s.table, entity("p", "r", "five", 5), "*")
	wantErr(t, "replace with *", err, store.NoFault)
	err = s.rows.Delete(bg, s.table, store.Key{PartitionKey: "p", RowKey: "r"}, e3)
	wantErr(t, "delete with the etag", err, store.NoFault)
	if _, ok := readRow(t, s, "p", "r"); ok {
		t.Error("the row is still there after delete")
	}
	_, err = s.rows.Replace(bg, s.table, entity("p", "r", "six", 6), e3)
	wantErr(t, "replace of a deleted row", err, store.NotFound)
	_, err = s.rows.Replace(bg, s.table, entity("p", "r", "six", 6), "*")
	wantErr(t, "replace with * of a deleted row", err, store.NotFound)
	err = s.rows.Delete(bg, s.table, store.Key{PartitionKey: "p", RowKey: "r"}, "*")
	wantErr(t, "delete of a deleted row", err, store.NotFound)
	if _, ok := readRow(t, s, "p", "r"); ok {
		t.Error("a replace of a deleted row created it")
	}
}

// keys are row keys in the order of neither bytes nor insertion, and two
// the Table service orders by UTF-16 code units (U+1F600 before U+FF61).
var keys = []store.Key{
	{PartitionKey: "b", RowKey: "2"}, {PartitionKey: "a", RowKey: "x"}, {PartitionKey: "B", RowKey: "1"},
	{PartitionKey: "a", RowKey: "a'quote"}, {PartitionKey: "a", RowKey: "é"}, {PartitionKey: "a", RowKey: "\uFF61"},
	{PartitionKey: "a", RowKey: "\U0001F600"}, {PartitionKey: "b", RowKey: "10"}, {PartitionKey: "a", RowKey: "A"},
}

// insertKeys inserts a row for each of keys, n its index.
func insertKeys(t *testing.T, s services) {
	t.Helper()
	for i, k := range keys {
		if _, err := s.rows.Insert(bg, s.table, entity(k.PartitionKey, k.RowKey, "row", int64(i))); err != nil {
			t.Fatal(err)
		}
	}
}

// scan reads every page of q and returns the rows' keys, failing when a
// page is larger than q's Top.
func scan(t *testing.T, s services, q store.Query) ([]store.Key, []transform.Row) {
	t.Helper()
	var got []store.Key
	var rows []transform.Row
	err := store.Scan(bg, s.rows, "", s.table, q, store.Cursor{}, func(p store.Page) error {
		if q.Top > 0 && len(p.Rows) > q.Top {
			t.Errorf("a page of %d rows, Top %d", len(p.Rows), q.Top)
		}
		for _, r := range p.Rows {
			got = append(got, store.Key{PartitionKey: r.PartitionKey, RowKey: r.RowKey})
			rows = append(rows, r)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("scan %+v: %v", q, err)
	}
	return got, rows
}

// Rows come in the service's key order, in pages of at most Top with a
// continuation, and Count counts them.
func rowsPagesInKeyOrder(t *testing.T, s services) {
	insertKeys(t, s)
	want := slices.Clone(keys)
	slices.SortFunc(want, func(a, b store.Key) int {
		return transform.CompareKeys(a.PartitionKey, a.RowKey, b.PartitionKey, b.RowKey)
	})
	for _, top := range []int{0, 1, 4} {
		if got, _ := scan(t, s, store.Query{Top: top}); !reflect.DeepEqual(got, want) {
			t.Errorf("Top %d: keys\n%q\nwant\n%q", top, got, want)
		}
	}
	n, err := s.rows.Count(bg, s.table, store.Query{})
	if err != nil || n != int64(len(keys)) {
		t.Errorf("count %d, %v; want %d", n, err, len(keys))
	}
}

// splitTime returns a time that some of rows' Timestamps are at or after
// and others before, on a millisecond: Azurite compares Timestamps to the
// millisecond (the service, and Match, to 100 ns).
func splitTime(t *testing.T, rows []transform.Row) time.Time {
	t.Helper()
	var ts []time.Time
	for _, r := range rows {
		ts = append(ts, r.Timestamp)
	}
	slices.SortFunc(ts, time.Time.Compare)
	for i := len(ts) / 2; i < len(ts); i++ {
		if ms := ts[i].Truncate(time.Millisecond); ts[i-1].Before(ms) {
			return ms
		}
	}
	t.Fatalf("the rows' Timestamps %v are all in the same millisecond as their predecessors", ts)
	return time.Time{}
}

// The service's filter of Since, Key, From, To and After is store.Query's
// Match, whatever the page size.
func rowsQueryFilter(t *testing.T, s services) {
	insertKeys(t, s)
	_, all := scan(t, s, store.Query{})
	since := splitTime(t, all)
	k := func(pk, rk string) *store.Key { return &store.Key{PartitionKey: pk, RowKey: rk} }
	for _, q := range []store.Query{
		{Key: k("a", "é")}, {Key: k("a", "nope")},
		{From: k("a", "")}, {From: k("a", "\uFF61")}, {To: k("b", "")}, {To: k("a", "x")},
		{From: k("a", "a'quote"), To: k("b", "10")}, {After: k("a", "é")}, {After: k("a", "\U0001F600"), To: k("b", "2")},
		{Since: since}, {Since: since, From: k("a", "")}, {After: k("b", "2")},
	} {
		var want []store.Key
		for _, r := range all {
			if q.Match(r.PartitionKey, r.RowKey, r.Timestamp) {
				want = append(want, store.Key{PartitionKey: r.PartitionKey, RowKey: r.RowKey})
			}
		}
		for _, top := range []int{0, 2} {
			q.Top = top
			if got, _ := scan(t, s, q); !reflect.DeepEqual(got, want) {
				t.Errorf("query %s: keys\n%q\nwant\n%q", fakes.JSON(q), got, want)
			}
		}
	}
}

// Select limits the properties a page carries; the keys stay.
func rowsSelect(t *testing.T, s services) {
	insertKeys(t, s)
	_, rows := scan(t, s, store.Query{Select: []string{"PartitionKey", "RowKey", "Name", "Absent"}})
	if len(rows) != len(keys) {
		t.Fatalf("%d rows, want %d", len(rows), len(keys))
	}
	for _, r := range rows {
		if len(r.Props) != 1 || r.Props["Name"].Str != "row" || r.PartitionKey == "" || r.RowKey == "" {
			t.Errorf("row %s/%s: props %v, want Name only", r.PartitionKey, r.RowKey, r.Props)
		}
	}
}

// A table that does not exist is an error, and none of the outcomes a
// caller acts on for a row.
func rowsMissingTable(t *testing.T, s services) {
	_, err := s.rows.ReadPage(bg, s.noTable, store.Query{}, store.Cursor{})
	if err == nil {
		t.Error("reading a missing table: no error")
	}
	// A missing table is no outcome of the row's: Fatal, the command stops.
	_, err = s.rows.Insert(bg, s.noTable, entity("p", "r", "x", 1))
	wantErr(t, "insert into a missing table", err, store.Fatal)
	err = s.rows.Delete(bg, s.noTable, store.Key{PartitionKey: "p", RowKey: "r"}, "*")
	wantErr(t, "delete in a missing table", err, store.Fatal)
}

// UpsertBatch (fixtures load) inserts or replaces the entities of one
// partition, a RowKey with a quote included (sent alone: the batch's
// request cannot carry it), whole: a second batch replaces, not merges.
func rowsUpsertBatch(t *testing.T, s services) {
	rks := []string{"a", "b", "o'brien"}
	batch := func(name string, extra string) [][]byte {
		var out [][]byte
		for i, rk := range rks {
			out = append(out, fmt.Appendf(nil, `{"PartitionKey":"p","RowKey":%q,"Name":%q,"N":%d%s}`, rk, name, i, extra))
		}
		return out
	}
	if err := s.rows.UpsertBatch(bg, s.table, "p", batch("one", `,"Extra":"x"`), rks); err != nil {
		t.Fatalf("first batch: %v", err)
	}
	for _, rk := range rks {
		if row, ok := readRow(t, s, "p", rk); !ok || row.Props["Name"].Str != "one" || row.Props["Extra"].Str != "x" {
			t.Errorf("after the first batch, row %q: %+v %v", rk, row, ok)
		}
	}
	if err := s.rows.UpsertBatch(bg, s.table, "p", batch("two", ""), rks); err != nil {
		t.Fatalf("second batch: %v", err)
	}
	for _, rk := range rks {
		row, ok := readRow(t, s, "p", rk)
		if _, extra := row.Props["Extra"]; !ok || row.Props["Name"].Str != "two" || extra {
			t.Errorf("after the second batch, row %q: %+v %v; want Name two and no Extra (replaced, not merged)", rk, row, ok)
		}
	}
	if err := s.rows.UpsertBatch(bg, s.table, "p", batch("x", ""), rks[:2]); err == nil {
		t.Error("a batch with fewer row keys than entities was accepted")
	}
}

// Upload (fixtures load) writes a blob, replacing what is there; the
// listing and PutIfAbsent see what it wrote.
func blobsUpload(t *testing.T, s services) {
	if err := s.blobWriter.Upload(bg, "e1/logs.json", []byte(`[1]`)); err != nil {
		t.Fatal(err)
	}
	if err := s.blobWriter.Upload(bg, "e1/logs.json", []byte(`[1,2,3]`)); err != nil {
		t.Fatalf("upload over a blob: %v", err)
	}
	var sizes []int64
	if err := s.blobs.List(bg, func(name string, size int64) error { sizes = append(sizes, size); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sizes, []int64{7}) {
		t.Errorf("listed sizes %v, want the second upload's 7 bytes", sizes)
	}
	if created, err := s.blobs.PutIfAbsent(bg, "e1/logs.json", []byte(`[1,2,3]`), "application/json"); err != nil || created {
		t.Errorf("PutIfAbsent of the uploaded content: created %v, %v; want false, nil", created, err)
	}
}

// PutIfAbsent creates once; the same content again is success, other
// content a conflict that leaves the blob as it was.
func blobsPutIfAbsent(t *testing.T, s services) {
	created, err := s.blobs.PutIfAbsent(bg, "e1/result.json", []byte(`{"a":1}`), "application/json")
	if err != nil || !created {
		t.Fatalf("first put: created %v, %v", created, err)
	}
	created, err = s.blobs.PutIfAbsent(bg, "e1/result.json", []byte(`{"a":1}`), "application/json")
	if err != nil || created {
		t.Errorf("same content again: created %v, %v; want false, nil", created, err)
	}
	created, err = s.blobs.PutIfAbsent(bg, "e1/result.json", []byte(`{"a":2}`), "application/json")
	if !errors.Is(err, store.ErrBlobConflict) || created || !strings.Contains(err.Error(), "e1/result.json") {
		t.Errorf("other content: created %v, %v; want a conflict naming the blob", created, err)
	}
	if created, err = s.blobs.PutIfAbsent(bg, "e1/result.json", []byte(`{"a":1}`), "application/json"); err != nil || created {
		t.Errorf("after the conflict the blob is not the first content: created %v, %v", created, err)
	}
}

// List gives every blob with its size, in name order (bytes).
func blobsListInNameOrder(t *testing.T, s services) {
	names := []string{"b/x", "a", "é/result.txt", "A", "a/b", "a-b"}
	for i, n := range names {
		if _, err := s.blobs.PutIfAbsent(bg, n, []byte(strings.Repeat("x", i)), "text/plain"); err != nil {
			t.Fatal(err)
		}
	}
	type blob struct {
		name string
		size int64
	}
	var got []blob
	err := s.blobs.List(bg, func(name string, size int64) error {
		got = append(got, blob{name, size})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []blob
	for i, n := range names {
		want = append(want, blob{n, int64(i)})
	}
	slices.SortFunc(want, func(a, b blob) int { return strings.Compare(a.name, b.name) })
	if !reflect.DeepEqual(got, want) {
		t.Errorf("list %v, want %v", got, want)
	}
}
