package azure_test

import (
	"context"
	"encoding/base64"
	"errors"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// newWriterTable creates a fresh table and returns its name, a writer and
// a reader of acct (Azurite unless given).
func newWriterTable(t *testing.T, acct *azure.StorageAccount) (string, *azure.TableWriter, *azure.TableReader) {
	t.Helper()
	a := testenv.Storage(t)
	if acct != nil {
		a = *acct
	}
	w, err := azure.NewTableWriter(a, azure.Options{Retry: azure.RetryOptions{BaseDelay: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	direct, err := azure.NewTableWriter(testenv.Storage(t), azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.Name("writer")
	ctx := context.Background()
	if err := direct.CreateTable(ctx, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = direct.DeleteTable(context.WithoutCancel(ctx), name) })
	return name, w, azure.NewTableReader(testenv.Storage(t), azure.Options{})
}

// readRow reads one row by its keys, as reverse does before it writes.
func readRow(t *testing.T, r *azure.TableReader, table string, key store.Key) (transform.Row, bool) {
	t.Helper()
	page, err := r.ReadPage(context.Background(), table, store.Query{Key: &key}, store.Cursor{})
	if err != nil {
		t.Fatalf("read %q/%q: %v", key.PartitionKey, key.RowKey, err)
	}
	switch len(page.Rows) {
	case 0:
		return transform.Row{}, false
	case 1:
		if row := page.Rows[0]; row.PartitionKey != key.PartitionKey || row.RowKey != key.RowKey {
			t.Fatalf("read %q/%q got %q/%q", key.PartitionKey, key.RowKey, row.PartitionKey, row.RowKey)
		}
		return page.Rows[0], true
	}
	t.Fatalf("read %q/%q: %d rows", key.PartitionKey, key.RowKey, len(page.Rows))
	return transform.Row{}, false
}

func row(key store.Key, props map[string]transform.Value) []byte {
	return transform.EncodeEntity(transform.Row{PartitionKey: key.PartitionKey, RowKey: key.RowKey, Props: props})
}

// isRowError checks that err is a *ResourceError about table that names the
// row and wraps want.
func isRowError(t *testing.T, what string, err error, table string, key store.Key, want store.FaultKind) {
	t.Helper()
	var re *azure.ResourceError
	if store.KindOf(err) != want || !errors.As(err, &re) || re.Kind != azure.KindTable || re.Name != table ||
		!strings.Contains(err.Error(), strconv.Quote(key.RowKey)) || strings.Contains(err.Error(), "\n") {
		t.Errorf("%s: %v, want a one-line *ResourceError about table %s naming %q of kind %s", what, err, table, key.RowKey, want)
	}
}

func TestTableWriterInsertReplaceWithETags(t *testing.T) {
	table, w, r := newWriterTable(t, nil)
	ctx := context.Background()
	key := store.Key{PartitionKey: "GLOBAL", RowKey: "config:a"}
	etag1, err := w.Insert(ctx, table, row(key, map[string]transform.Value{"S": transform.String("one"), "Gone": transform.String("x")}))
	if err != nil || etag1 == "" {
		t.Fatalf("insert: etag %q, %v", etag1, err)
	}
	_, err = w.Insert(ctx, table, row(key, map[string]transform.Value{"S": transform.String("two")}))
	isRowError(t, "insert again", err, table, key, store.Exists)

	read1, ok := readRow(t, r, table, key)
	if !ok || read1.Props["S"].Str != "one" {
		t.Fatalf("after the second insert: %+v", read1)
	}
	if read1.ETag != etag1 {
		t.Errorf("the reader's ETag %q differs from the one insert returned %q", read1.ETag, etag1)
	}
	// The ETag as the reader gives it is the If-Match of a replace.
	etag2, err := w.Replace(ctx, table, row(key, map[string]transform.Value{"S": transform.String("two")}), read1.ETag)
	if err != nil || etag2 == "" || etag2 == etag1 {
		t.Fatalf("replace with the read ETag: %q, %v (first ETag %q)", etag2, err, etag1)
	}
	read2, _ := readRow(t, r, table, key)
	if read2.Props["S"].Str != "two" || len(read2.Props) != 1 || read2.ETag != etag2 {
		t.Errorf("after replace: %v (ETag %q), want only S=two (ETag %q)", read2.Props, read2.ETag, etag2)
	}
	_, err = w.Replace(ctx, table, row(key, map[string]transform.Value{"S": transform.String("stale")}), etag1)
	isRowError(t, "replace with a stale ETag", err, table, key, store.Changed)
	if again, _ := readRow(t, r, table, key); again.Props["S"].Str != "two" {
		t.Errorf("a refused replace wrote %v", again.Props)
	}
	etag3, err := w.Replace(ctx, table, row(key, map[string]transform.Value{"S": transform.String("three")}), "*")
	if err != nil || etag3 == etag2 {
		t.Errorf("replace with *: %q, %v", etag3, err)
	}

	missing := store.Key{PartitionKey: "GLOBAL", RowKey: "config:missing"}
	_, err = w.Replace(ctx, table, row(missing, nil), "*")
	isRowError(t, "replace a missing row", err, table, missing, store.NotFound)
	if _, found := readRow(t, r, table, missing); found {
		t.Error("a replace of a missing row inserted it")
	}
	if _, err := w.Replace(ctx, table, row(missing, nil), ""); !errors.Is(err, azure.ErrNoETag) {
		t.Errorf("replace without an ETag: %v, want ErrNoETag", err)
	}
	if _, found := readRow(t, r, table, missing); found {
		t.Error("a replace without ETag inserted the row")
	}
	// What the caller must not send at all is refused before any request.
	for _, bad := range []string{`{"RowKey":"r"}`, `{"PartitionKey":1,"RowKey":"r"}`, `[]`} {
		if _, err := w.Insert(ctx, table, []byte(bad)); err == nil {
			t.Errorf("insert %s accepted", bad)
		}
	}
	// A missing table is not a missing row.
	_, err = w.Insert(ctx, "nosuchtable"+table[len(table)-6:], row(key, nil))
	var re *azure.ResourceError
	if !errors.As(err, &re) || store.KindOf(err) != store.Fatal || !strings.Contains(err.Error(), "TableNotFound") {
		t.Errorf("insert into a missing table: %v", err)
	}
}

func TestTableWriterDelete(t *testing.T) {
	table, w, r := newWriterTable(t, nil)
	ctx := context.Background()
	key := store.Key{PartitionKey: "p", RowKey: "r"}
	etag1, err := w.Insert(ctx, table, row(key, map[string]transform.Value{"N": {Type: transform.EdmInt32, Int: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	etag2, err := w.Replace(ctx, table, row(key, map[string]transform.Value{"N": {Type: transform.EdmInt32, Int: 2}}), etag1)
	if err != nil {
		t.Fatal(err)
	}
	isRowError(t, "delete with a stale ETag", w.Delete(ctx, table, key, etag1), table, key, store.Changed)
	if _, found := readRow(t, r, table, key); !found {
		t.Fatal("a refused delete deleted the row")
	}
	if err := w.Delete(ctx, table, key, ""); !errors.Is(err, azure.ErrNoETag) {
		t.Errorf("delete without an ETag: %v", err)
	}
	if err := w.Delete(ctx, table, key, etag2); err != nil {
		t.Fatalf("delete with the current ETag: %v", err)
	}
	if _, found := readRow(t, r, table, key); found {
		t.Fatal("the row is still there")
	}
	isRowError(t, "delete a missing row", w.Delete(ctx, table, key, "*"), table, key, store.NotFound)
	if _, err := w.Insert(ctx, table, row(key, nil)); err != nil {
		t.Fatal(err)
	}
	if err := w.Delete(ctx, table, key, "*"); err != nil {
		t.Errorf("delete with *: %v", err)
	}
}

// Keys with quotes, spaces, percent signs and non-ASCII letters are written,
// read by their keys, replaced and deleted one at a time, each touching only
// its own row.
func TestTableWriterKeysWithQuotesSpacesUnicode(t *testing.T) {
	table, w, r := newWriterTable(t, nil)
	ctx := context.Background()
	keys := []store.Key{
		{PartitionKey: "it's", RowKey: "user:o'brien@example.com"},
		{PartitionKey: "it's", RowKey: "user:o''brien@example.com"},
		{PartitionKey: "''", RowKey: "'"},
		{PartitionKey: "a b", RowKey: "form:two words  and ~ tilde"},
		{PartitionKey: "ünï", RowKey: "config:日本語 – ✓"},
		{PartitionKey: "100%", RowKey: "x+y=z&w;k,l:m@n$o!p(q)*"},
	}
	etags := map[store.Key]string{}
	for i, k := range keys {
		etag, err := w.Insert(ctx, table, row(k, map[string]transform.Value{"I": {Type: transform.EdmInt32, Int: int64(i)}}))
		if err != nil {
			t.Fatalf("insert %q/%q: %v", k.PartitionKey, k.RowKey, err)
		}
		etags[k] = etag
	}
	for i, k := range keys {
		got, found := readRow(t, r, table, k)
		if !found || got.Props["I"].Int != int64(i) || got.ETag != etags[k] {
			t.Errorf("%q/%q: found %v, %v ETag %q; want I=%d ETag %q", k.PartitionKey, k.RowKey, found, got.Props, got.ETag, i, etags[k])
			continue
		}
		if _, err := w.Replace(ctx, table, row(k, map[string]transform.Value{"I": {Type: transform.EdmInt32, Int: int64(100 + i)}}), got.ETag); err != nil {
			t.Errorf("replace %q/%q: %v", k.PartitionKey, k.RowKey, err)
		}
	}
	for i, k := range keys {
		got, _ := readRow(t, r, table, k)
		if got.Props["I"].Int != int64(100+i) {
			t.Errorf("%q/%q after replace: %v", k.PartitionKey, k.RowKey, got.Props)
		}
		if i%2 == 0 {
			if err := w.Delete(ctx, table, k, got.ETag); err != nil {
				t.Errorf("delete %q/%q: %v", k.PartitionKey, k.RowKey, err)
			}
		}
	}
	// A control character is refused by the service: a permanent error of
	// the row (reverse dead-letters it), not a failure of the table.
	ctrl := store.Key{PartitionKey: "p", RowKey: "tab\there"}
	_, err := w.Insert(ctx, table, row(ctrl, nil))
	if pe := store.FaultOf(err); pe == nil || pe.Status != http.StatusBadRequest || !strings.Contains(err.Error(), "insert") {
		t.Errorf("a RowKey with a tab: %v, want a Refused fault (400)", err)
	}
	isRowError(t, "a RowKey with a tab", err, table, ctrl, store.Refused)
	left := readAll(t, r, table, store.Query{})
	if len(left) != len(keys)/2 {
		t.Fatalf("%d rows left, want %d", len(left), len(keys)/2)
	}
	for i, k := range keys {
		_, found := readRow(t, r, table, k)
		if found != (i%2 == 1) {
			t.Errorf("%q/%q: found %v after deleting every other row", k.PartitionKey, k.RowKey, found)
		}
	}
}

// Every Edm type and its edge values, written with EncodeEntity by insert
// and by replace, read back exactly by TableReader.
func TestTableWriterRoundTripsEdmTypes(t *testing.T) {
	table, w, r := newWriterTable(t, nil)
	ctx := context.Background()
	dt := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	bin := []byte{0, 1, 2, 0xfe, 0xff}
	props := map[string]transform.Value{
		"S":          transform.String("é – 日本 \u2028 \"quoted\" <tag> & \\"),
		"SEmpty":     transform.String(""),
		"SNumeric":   transform.String("5.0"),
		"BTrue":      {Type: transform.EdmBoolean, Bool: true},
		"BFalse":     {Type: transform.EdmBoolean, Bool: false},
		"I32Max":     {Type: transform.EdmInt32, Int: math.MaxInt32},
		"I32Min":     {Type: transform.EdmInt32, Int: math.MinInt32},
		"I32Zero":    {Type: transform.EdmInt32, Int: 0},
		"I64Small":   {Type: transform.EdmInt64, Int: 7},
		"I64Above53": {Type: transform.EdmInt64, Int: 1<<53 + 1},
		"I64Min":     {Type: transform.EdmInt64, Int: -math.MaxInt64},
		"D5":         {Type: transform.EdmDouble, Double: 5},
		"DTenth":     {Type: transform.EdmDouble, Double: 0.1},
		"DBig":       {Type: transform.EdmDouble, Double: 1e308},
		"DTiny":      {Type: transform.EdmDouble, Double: 5e-324},
		"DNaN":       {Type: transform.EdmDouble, Double: math.NaN()},
		"DInf":       {Type: transform.EdmDouble, Double: math.Inf(1)},
		"DNegInf":    {Type: transform.EdmDouble, Double: math.Inf(-1)},
		"DtMicro":    {Type: transform.EdmDateTime, Time: dt("2025-11-20T14:03:12.3456789Z")},
		"DtMin":      {Type: transform.EdmDateTime, Time: dt("1601-01-01T00:00:00Z")},
		"G":          {Type: transform.EdmGuid, Str: "c9da6455-213d-42c9-9a79-3e9149a57833"},
		"Bin":        {Type: transform.EdmBinary, Bytes: bin},
		"BinEmpty":   {Type: transform.EdmBinary, Bytes: []byte{}},
	}
	check := func(what string, key store.Key, want map[string]transform.Value) {
		t.Helper()
		got, found := readRow(t, r, table, key)
		if !found || got.DecodeError != "" {
			t.Fatalf("%s: found %v, %q", what, found, got.DecodeError)
		}
		if len(got.Props) != len(want) {
			t.Errorf("%s: %d properties %v, want %d", what, len(got.Props), propNames(got), len(want))
		}
		for name, v := range want {
			if g, ok := got.Props[name]; !ok || !sameValue(g, v) {
				t.Errorf("%s: %s = %s, want %s", what, name, describe(g), describe(v))
			}
		}
	}
	key := store.Key{PartitionKey: "p", RowKey: "edm"}
	etag, err := w.Insert(ctx, table, row(key, props))
	if err != nil {
		t.Fatal(err)
	}
	check("insert", key, props)
	// Replace with every value changed, types kept.
	changed := map[string]transform.Value{}
	for name, v := range props {
		switch v.Type {
		case transform.EdmString:
			v.Str += "!"
		case transform.EdmBoolean:
			v.Bool = !v.Bool
		case transform.EdmInt32:
			v.Int = max(v.Int-1, math.MinInt32)
		case transform.EdmInt64:
			v.Int = -v.Int
		case transform.EdmDouble:
			v.Double = -v.Double
		case transform.EdmDateTime:
			v.Time = v.Time.Add(100 * time.Nanosecond)
		case transform.EdmGuid:
			v.Str = "00000000-0000-0000-0000-000000000001"
		case transform.EdmBinary:
			v.Bytes = append([]byte(base64.StdEncoding.EncodeToString(v.Bytes)), 0)
		}
		changed[name] = v
	}
	if _, err := w.Replace(ctx, table, row(key, changed), etag); err != nil {
		t.Fatal(err)
	}
	check("replace", key, changed)
}

// A write whose connection broke after the service made it is retried, and
// the retry finds the write done: Exists for an insert. The caller reads
// the row again and finds its own write.
func TestTableWriterInsertRetriedAfterADropReportsExists(t *testing.T) {
	acct := testenv.Storage(t)
	u, err := url.Parse(acct.TableEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.Start(faultproxy.Config{
		Target: u.Scheme + "://" + u.Host,
		Match:  func(r *http.Request) bool { return r.Method == http.MethodPost },
		DocKey: func(*http.Request, []byte) string { return "|insert" },
		Rules:  []faultproxy.Rule{{Kind: faultproxy.DropAfter, Share: 1, Count: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	proxied := acct
	proxied.TableEndpoint = strings.TrimSuffix(p.URL(), "/") + u.Path
	table, w, r := newWriterTable(t, &proxied)
	key := store.Key{PartitionKey: "p", RowKey: "dropped"}
	_, err = w.Insert(context.Background(), table, row(key, map[string]transform.Value{"S": transform.String("mine")}))
	isRowError(t, "insert retried after a drop", err, table, key, store.Exists)
	if p.Injected(faultproxy.DropAfter) != 1 {
		t.Fatalf("%d drops injected", p.Injected(faultproxy.DropAfter))
	}
	if got, found := readRow(t, r, table, key); !found || got.Props["S"].Str != "mine" {
		t.Errorf("the dropped insert's row: %v %v", found, got.Props)
	}
}
