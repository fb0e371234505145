package azure_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// newTable creates a fresh table in Azurite, writes the given raw annotated
// JSON entities to it, and returns its name and a reader.
func newTable(t *testing.T, entities ...string) (string, *azure.TableReader) {
	t.Helper()
	acct := testenv.Storage(t)
	svc, err := azure.NewTablesClient(acct, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.Name("reader")
	ctx := context.Background()
	if _, err := svc.CreateTable(ctx, name, nil); err != nil {
		t.Fatalf("create table: %v", err)
	}
	t.Cleanup(func() { _, _ = svc.DeleteTable(context.WithoutCancel(ctx), name, nil) })
	c := svc.NewClient(name)
	for _, e := range entities {
		if _, err := c.AddEntity(ctx, []byte(e), nil); err != nil {
			t.Fatalf("add entity %.80s: %v", e, err)
		}
	}
	return name, azure.NewTableReader(acct, azure.Options{})
}

func readAll(t *testing.T, r *azure.TableReader, table string, q store.Query) []transform.Row {
	t.Helper()
	var rows []transform.Row
	err := store.Scan(context.Background(), r, "", table, q, store.Cursor{}, func(p store.Page) error {
		rows = append(rows, p.Rows...)
		return nil
	})
	if err != nil {
		t.Fatalf("scan %s: %v", table, err)
	}
	return rows
}

func TestReaderDecodesEveryEdmTypeExactly(t *testing.T) {
	big := bytes.Repeat([]byte{0xAB, 0x00, 0xFF, 0x10}, 64*1024/4) // 64 KiB
	// Table Storage limits a string property to 64 KiB of UTF-16: 32,768 chars.
	longString := strings.Repeat("x", 32*1024-3) + "end"
	entity := fmt.Sprintf(`{"PartitionKey":"p","RowKey":"edm",
		"D5@odata.type":"Edm.Double","D5":5.0,
		"DNegZero@odata.type":"Edm.Double","DNegZero":-0.0,
		"DNaN@odata.type":"Edm.Double","DNaN":"NaN",
		"DInf@odata.type":"Edm.Double","DInf":"Infinity",
		"DNegInf@odata.type":"Edm.Double","DNegInf":"-Infinity",
		"DBig@odata.type":"Edm.Double","DBig":1e308,
		"DPlain":2.5,
		"I64Max@odata.type":"Edm.Int64","I64Max":"9223372036854775807",
		"I64Min@odata.type":"Edm.Int64","I64Min":"-9223372036854775807",
		"I64Above53@odata.type":"Edm.Int64","I64Above53":"9007199254740993",
		"I32Max":2147483647,
		"I32Min":-2147483648,
		"I32Annotated@odata.type":"Edm.Int32","I32Annotated":7,
		"DtMin@odata.type":"Edm.DateTime","DtMin":"1601-01-01T00:00:00.0000000Z",
		"DtMax@odata.type":"Edm.DateTime","DtMax":"9999-12-31T23:59:59.9999999Z",
		"BinEmpty@odata.type":"Edm.Binary","BinEmpty":"",
		"Bin64K@odata.type":"Edm.Binary","Bin64K":%q,
		"G@odata.type":"Edm.Guid","G":"c9da6455-213d-42c9-9a79-3e9149a57833",
		"S":%q,
		"SEmpty":"",
		"BTrue":true,
		"BFalse":false}`, base64.StdEncoding.EncodeToString(big), longString)
	table, r := newTable(t, entity)
	rows := readAll(t, r, table, store.Query{})
	if len(rows) != 1 {
		t.Fatalf("got %d rows, want 1", len(rows))
	}
	row := rows[0]
	if row.PartitionKey != "p" || row.RowKey != "edm" || row.Table != table {
		t.Errorf("keys = %q/%q/%q", row.Table, row.PartitionKey, row.RowKey)
	}
	if row.Timestamp.IsZero() || row.ETag == "" {
		t.Errorf("system properties missing: Timestamp %v, ETag %q", row.Timestamp, row.ETag)
	}
	for _, name := range []string{"PartitionKey", "RowKey", "Timestamp", "odata.etag"} {
		if _, ok := row.Props[name]; ok {
			t.Errorf("system property %s is in Props", name)
		}
	}
	dt := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	want := map[string]transform.Value{
		"D5": {Type: transform.EdmDouble, Double: 5.0},
		// Azurite (JavaScript) stores -0.0 as 0.0; the decoder keeps the
		// sign when the service sends it (transform.TestDecodeEntity).
		"DNegZero":     {Type: transform.EdmDouble, Double: 0},
		"DNaN":         {Type: transform.EdmDouble, Double: math.NaN()},
		"DInf":         {Type: transform.EdmDouble, Double: math.Inf(1)},
		"DNegInf":      {Type: transform.EdmDouble, Double: math.Inf(-1)},
		"DBig":         {Type: transform.EdmDouble, Double: 1e308},
		"DPlain":       {Type: transform.EdmDouble, Double: 2.5},
		"I64Max":       {Type: transform.EdmInt64, Int: math.MaxInt64},
		"I64Min":       {Type: transform.EdmInt64, Int: -math.MaxInt64},
		"I64Above53":   {Type: transform.EdmInt64, Int: 1<<53 + 1},
		"I32Max":       {Type: transform.EdmInt32, Int: math.MaxInt32},
		"I32Min":       {Type: transform.EdmInt32, Int: math.MinInt32},
		"I32Annotated": {Type: transform.EdmInt32, Int: 7},
		"DtMin":        {Type: transform.EdmDateTime, Time: dt("1601-01-01T00:00:00Z")},
		"DtMax":        {Type: transform.EdmDateTime, Time: dt("9999-12-31T23:59:59.9999999Z")},
		"BinEmpty":     {Type: transform.EdmBinary, Bytes: []byte{}},
		"Bin64K":       {Type: transform.EdmBinary, Bytes: big},
		"G":            {Type: transform.EdmGuid, Str: "c9da6455-213d-42c9-9a79-3e9149a57833"},
		"S":            {Type: transform.EdmString, Str: longString},
		"SEmpty":       {Type: transform.EdmString, Str: ""},
		"BTrue":        {Type: transform.EdmBoolean, Bool: true},
		"BFalse":       {Type: transform.EdmBoolean, Bool: false},
	}
	if len(row.Props) != len(want) {
		t.Errorf("got %d properties, want %d: %v", len(row.Props), len(want), propNames(row))
	}
	for name, w := range want {
		got, ok := row.Props[name]
		if !ok {
			t.Errorf("%s: missing", name)
			continue
		}
		if !sameValue(got, w) {
			t.Errorf("%s = %s, want %s", name, describe(got), describe(w))
		}
	}
	// 7 fractional digits survive.
	if got := row.Props["DtMax"].Time.Nanosecond(); got != 999999900 {
		t.Errorf("DtMax nanoseconds = %d, want 999999900", got)
	}
}

func TestReaderKeysAndContinuation(t *testing.T) {
	keys := []string{"a'quote", "b%percent", "c+plus", "d:colon", "e-ünïcödé-日本", "f'%+:ü", "g plain"}
	var ents []string
	for i, k := range keys {
		pk := "pk" + string(rune('A'+i%3)) + "'%"
		ents = append(ents, fmt.Sprintf(`{"PartitionKey":%q,"RowKey":%q,"N":%d}`, pk, k, i))
	}
	table, r := newTable(t, ents...)
	// Top=2 forces continuations whose NextPartitionKey/NextRowKey carry the
	// special characters.
	var got []string
	pages := 0
	err := store.Scan(context.Background(), r, "", table, store.Query{Top: 2}, store.Cursor{}, func(p store.Page) error {
		pages++
		if len(p.Rows) > 2 {
			t.Errorf("page of %d rows with Top=2", len(p.Rows))
		}
		for _, row := range p.Rows {
			got = append(got, row.PartitionKey+"|"+row.RowKey)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, pk := range []string{"pkA'%", "pkB'%", "pkC'%"} {
		for i, k := range keys {
			if "pk"+string(rune('A'+i%3))+"'%" == pk {
				want = append(want, pk+"|"+k)
			}
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows in order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if pages < 4 {
		t.Errorf("%d pages for %d rows with Top=2", pages, len(keys))
	}
	// Resuming from a continuation taken mid-table returns exactly the rest.
	first, err := r.ReadPage(context.Background(), table, store.Query{Top: 3}, store.Cursor{})
	if err != nil {
		t.Fatal(err)
	}
	if first.Next.IsZero() {
		t.Fatal("no continuation after 3 of 7 rows")
	}
	rest := 0
	err = store.Scan(context.Background(), r, "", table, store.Query{}, first.Next, func(p store.Page) error {
		rest += len(p.Rows)
		return nil
	})
	if err != nil || rest != len(keys)-3 {
		t.Errorf("resume: %d rows, err %v; want %d", rest, err, len(keys)-3)
	}
}

func TestReaderFilterAndKeysOnlyCount(t *testing.T) {
	table, r := newTable(t,
		`{"PartitionKey":"p","RowKey":"1","Big":"`+strings.Repeat("y", 1000)+`"}`,
		`{"PartitionKey":"p","RowKey":"2"}`,
		`{"PartitionKey":"q","RowKey":"3"}`)
	ctx := context.Background()
	n, err := r.Count(ctx, table, store.Query{})
	if err != nil || n != 3 {
		t.Fatalf("Count = %d, %v; want 3", n, err)
	}
	keysOnly := readAll(t, r, table, store.Query{Select: []string{"PartitionKey", "RowKey"}})
	for _, row := range keysOnly {
		if _, ok := row.Props["Big"]; ok {
			t.Errorf("keys-only read returned property Big")
		}
	}
	rows := readAll(t, r, table, store.Query{Key: &store.Key{PartitionKey: "q", RowKey: "3"}})
	if len(rows) != 1 || rows[0].RowKey != "3" {
		t.Errorf("the row q/3: %d rows", len(rows))
	}
	if rows := readAll(t, r, table, store.Query{Key: &store.Key{PartitionKey: "q", RowKey: "1"}}); len(rows) != 0 {
		t.Errorf("the row q/1 (none): %d rows", len(rows))
	}
	// Every row was written before now, none after.
	future := time.Now().Add(time.Hour)
	if n, err := r.Count(ctx, table, store.Query{Since: future}); err != nil || n != 0 {
		t.Errorf("Count(Timestamp ge future) = %d, %v; want 0", n, err)
	}
	past := time.Now().Add(-time.Hour)
	if n, err := r.Count(ctx, table, store.Query{Since: past}); err != nil || n != 3 {
		t.Errorf("Count(Timestamp ge past) = %d, %v; want 3", n, err)
	}
}

// TestReaderKeyBoundsAsMatch: the key bounds the reader sends (From, To,
// After) select on the Table service what store.Query.Match selects in
// memory, and ScanRanges reads every row once, in key order, whatever
// the splits.
func TestReaderKeyBoundsAsMatch(t *testing.T) {
	var entities []string
	var all []transform.Row
	// No empty keys: Azurite's continuations cannot name them.
	for _, pk := range []string{"-", "0a", "GLOBAL", "c1", "org-x"} {
		for _, rk := range []string{"-", "a", "m", "m0", "user:x", "z"} {
			entities = append(entities, fmt.Sprintf(`{"PartitionKey":%q,"RowKey":%q}`, pk, rk))
			all = append(all, transform.Row{PartitionKey: pk, RowKey: rk})
		}
	}
	table, r := newTable(t, entities...)
	k := func(pk, rk string) *store.Key { return &store.Key{PartitionKey: pk, RowKey: rk} }
	for _, q := range []store.Query{
		{From: k("0a", "")}, {From: k("GLOBAL", "m")}, {To: k("c1", "")}, {To: k("GLOBAL", "m0")},
		{After: k("GLOBAL", "m")}, {After: k("-", "-")}, {After: k("org-x", "z")},
		{From: k("0a", "m"), To: k("GLOBAL", "user:x"), After: k("0a", "z")},
	} {
		var want []string
		for _, row := range all {
			if q.Match(row.PartitionKey, row.RowKey, time.Now()) {
				want = append(want, row.PartitionKey+"|"+row.RowKey)
			}
		}
		var got []string
		for _, row := range readAll(t, r, table, q) {
			got = append(got, row.PartitionKey+"|"+row.RowKey)
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%+v:\n got %v\nwant %v", q, got, want)
		}
	}
	splits := []store.Key{{PartitionKey: "1"}, {PartitionKey: "GLOBAL", RowKey: "n"}, {PartitionKey: "d"}}
	var got []string
	err := store.ScanRanges(context.Background(), r, "", table, store.Query{Top: 2}, splits, func(p store.Page) error {
		for _, row := range p.Rows {
			got = append(got, row.PartitionKey+"|"+row.RowKey)
		}
		return nil
	})
	if err != nil || len(got) != len(all) {
		t.Fatalf("ScanRanges: %v, %d rows of %d", err, len(got), len(all))
	}
	for i, row := range all {
		if got[i] != row.PartitionKey+"|"+row.RowKey {
			t.Fatalf("ScanRanges: row %d is %s, want %s|%s", i, got[i], row.PartitionKey, row.RowKey)
		}
	}
}

func TestReaderMissingTable(t *testing.T) {
	acct := testenv.Storage(t)
	r := azure.NewTableReader(acct, azure.Options{})
	name := testenv.Name("missing")
	ok, err := r.Exists(context.Background(), name)
	if err != nil || ok {
		t.Fatalf("Exists(missing) = %v, %v", ok, err)
	}
	// Reading it fails with the service's 404 TableNotFound, wrapped with
	// the table and the endpoint, so that the command can name both.
	_, err = r.ReadPage(context.Background(), name, store.Query{}, store.Cursor{})
	var re *azcore.ResponseError
	var res *azure.ResourceError
	if !errors.As(err, &re) || re.StatusCode != http.StatusNotFound || re.ErrorCode != "TableNotFound" || !errors.As(err, &res) ||
		res.Resource != (azure.Resource{Service: azure.ServiceTables, Kind: azure.KindTable, Name: name, Endpoint: acct.TableEndpoint}) {
		t.Errorf("ReadPage(missing) = %v, want a 404 TableNotFound naming table %s in %s", err, name, acct.TableEndpoint)
	}
}

// TestScanFollowsEmptyPages checks that an empty page which still carries a
// continuation does not end the scan. Azurite does not produce such pages
// (the real service does, e.g. at partition-server boundaries with a
// filter), so a local server replays the service's wire format here.
func TestScanFollowsEmptyPages(t *testing.T) {
	var calls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		calls = append(calls, q.Get("NextPartitionKey")+"/"+q.Get("NextRowKey"))
		w.Header().Set("Content-Type", "application/json;odata=minimalmetadata")
		switch q.Get("NextPartitionKey") {
		case "":
			w.Header().Set("x-ms-continuation-NextPartitionKey", "1!8!cDI-")
			w.Header().Set("x-ms-continuation-NextRowKey", "1!4!cjI-")
			fmt.Fprint(w, `{"value":[{"PartitionKey":"p1","RowKey":"r1","Timestamp":"2025-01-01T00:00:00.0000000Z"}]}`)
		case "1!8!cDI-":
			w.Header().Set("x-ms-continuation-NextPartitionKey", "1!8!cDM-")
			fmt.Fprint(w, `{"value":[]}`)
		default:
			fmt.Fprint(w, `{"value":[{"PartitionKey":"p3","RowKey":"r3","Timestamp":"2025-01-01T00:00:00.0000000Z"}]}`)
		}
	}))
	defer srv.Close()
	r := azure.NewTableReader(azure.StorageAccount{Name: "acct", Key: "a2V5", TableEndpoint: srv.URL + "/acct"}, azure.Options{})
	var got []string
	pages := 0
	err := store.Scan(context.Background(), r, "", "T", store.Query{}, store.Cursor{}, func(p store.Page) error {
		pages++
		for _, row := range p.Rows {
			got = append(got, row.PartitionKey)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "p1,p3" || pages != 3 {
		t.Errorf("rows %v in %d pages; want p1,p3 in 3", got, pages)
	}
	if strings.Join(calls, " ") != "/ 1!8!cDI-/1!4!cjI- 1!8!cDM-/" {
		t.Errorf("continuations sent: %q", calls)
	}
}

func propNames(r transform.Row) []string {
	var out []string
	for k := range r.Props {
		out = append(out, k)
	}
	return out
}

func sameValue(a, b transform.Value) bool {
	if a.Type != b.Type || a.Str != b.Str || a.Bool != b.Bool || a.Int != b.Int || !a.Time.Equal(b.Time) || !bytes.Equal(a.Bytes, b.Bytes) {
		return false
	}
	if (a.Bytes == nil) != (b.Bytes == nil) {
		return false
	}
	if math.IsNaN(b.Double) {
		return math.IsNaN(a.Double)
	}
	return a.Double == b.Double && math.Signbit(a.Double) == math.Signbit(b.Double)
}

func describe(v transform.Value) string {
	s := fmt.Sprintf("%s str=%.20q bool=%v int=%d double=%v time=%s bytes=%d", v.Type, v.Str, v.Bool, v.Int, v.Double, v.Time.Format(time.RFC3339Nano), len(v.Bytes))
	return s
}

// A row whose value does not match its annotation (which the service never
// sends, but a faulty writer could) comes back with its keys and a
// DecodeError, so it is dead-lettered; the rest of the page is read.
func TestReadPageKeepsUndecodableRowsForDeadLetters(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		fmt.Fprint(w, `{"value":[`+
			`{"PartitionKey":"p","RowKey":"bad","Timestamp":"2025-01-01T00:00:00.0000000Z","N@odata.type":"Edm.Int64","N":"x1"},`+
			`{"PartitionKey":"p","RowKey":"good","Timestamp":"2025-01-01T00:00:00.0000000Z","N":1}]}`)
	}))
	defer srv.Close()
	r := azure.NewTableReader(azure.StorageAccount{Name: "acct", Key: "a2V5", TableEndpoint: srv.URL + "/acct"}, azure.Options{})
	page, err := r.ReadPage(context.Background(), "T", store.Query{}, store.Cursor{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Rows) != 2 {
		t.Fatalf("%d rows, want 2", len(page.Rows))
	}
	bad, good := page.Rows[0], page.Rows[1]
	if bad.RowKey != "bad" || bad.PartitionKey != "p" || bad.Table != "T" ||
		bad.DecodeError != `decode entity "bad": property N: Edm.Int64 value is not an integer in range` {
		t.Errorf("bad row: %+v", bad)
	}
	if good.DecodeError != "" || good.Props["N"].Int != 1 {
		t.Errorf("good row: %+v", good)
	}
}

// TestReaderPointReadIsTheQuerysRow: a lookup by keys alone is a point
// read; it gives the row a filter query gives — keys with quotes, spaces,
// percent signs, plus signs and non-ASCII, every property and Edm type,
// the ETag and Timestamp — and nothing for a missing row; a missing table
// is the same error as a query's.
func TestReaderPointReadIsTheQuerysRow(t *testing.T) {
	var keys []store.Key
	for _, k := range [][2]string{{"GLOBAL", "user:o'brien@x"}, {"org 1", "a b+c%20d"}, {"zoë", "élan:100%"}, {"p", "r"}} {
		keys = append(keys, store.Key{PartitionKey: k[0], RowKey: k[1]})
	}
	var entities []string
	for i, k := range keys {
		entities = append(entities, fmt.Sprintf(`{"PartitionKey":%q,"RowKey":%q,"N":%d,"D@odata.type":"Edm.Double","D":0.1,`+
			`"L@odata.type":"Edm.Int64","L":"9007199254740993","S":"x'y"}`, k.PartitionKey, k.RowKey, i))
	}
	table, r := newTable(t, entities...)
	ctx := context.Background()
	for _, k := range keys {
		got, found, err := store.Lookup(ctx, r, "", table, k)
		if err != nil || !found {
			t.Fatalf("lookup %+v: found %v, %v", k, found, err)
		}
		want := readAll(t, r, table, store.Query{From: &k, To: &store.Key{PartitionKey: k.PartitionKey, RowKey: k.RowKey + "\x00"}})
		if len(want) != 1 {
			t.Fatalf("query %+v: %d rows", k, len(want))
		}
		if d := transform.DiffRows(got, want[0]); len(d) > 0 || got.ETag != want[0].ETag || !got.Timestamp.Equal(want[0].Timestamp) ||
			got.PartitionKey != k.PartitionKey || got.RowKey != k.RowKey {
			t.Errorf("lookup %+v: %+v, want %+v (differ: %v)", k, got, want[0], d)
		}
		sel, found, err := store.Lookup(ctx, r, "", table, k, "S")
		if err != nil || !found || len(sel.Props) != 1 || sel.Props["S"].Str != "x'y" {
			t.Errorf("lookup %+v of S: %+v %v %v", k, sel.Props, found, err)
		}
	}
	if _, found, err := store.Lookup(ctx, r, "", table, store.Key{PartitionKey: "p", RowKey: "missing"}); found || err != nil {
		t.Errorf("missing row: found %v, %v", found, err)
	}
	_, _, err := store.Lookup(ctx, r, "", table+"gone", store.Key{PartitionKey: "p", RowKey: "r"})
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusNotFound || re.ErrorCode != "TableNotFound" {
		t.Errorf("missing table: %v, want a 404 TableNotFound", err)
	}
}
