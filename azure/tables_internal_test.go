package azure

import (
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/store"
)

func TestFilter(t *testing.T) {
	since := time.Date(2025, 11, 20, 14, 0, 0, 0, time.FixedZone("x", 3600))
	for _, c := range []struct {
		q    store.Query
		want string
	}{
		{store.Query{}, ""},
		{store.Query{Since: since}, "Timestamp ge datetime'2025-11-20T13:00:00.0000000Z'"},
		{store.Query{Key: &store.Key{PartitionKey: "o'k", RowKey: "user:a'b"}}, "PartitionKey eq 'o''k' and RowKey eq 'user:a''b'"},
		{store.Query{Since: since, Key: &store.Key{PartitionKey: "p", RowKey: "r"}},
			"Timestamp ge datetime'2025-11-20T13:00:00.0000000Z' and PartitionKey eq 'p' and RowKey eq 'r'"},
		{store.Query{From: &store.Key{PartitionKey: "a"}, To: &store.Key{PartitionKey: "b'"}}, "PartitionKey ge 'a' and PartitionKey lt 'b'''"},
		{store.Query{From: &store.Key{PartitionKey: "G", RowKey: "u"}, To: &store.Key{PartitionKey: "G", RowKey: "w"}},
			"(PartitionKey gt 'G' or (PartitionKey eq 'G' and RowKey ge 'u')) and (PartitionKey lt 'G' or (PartitionKey eq 'G' and RowKey lt 'w'))"},
		{store.Query{After: &store.Key{PartitionKey: "p", RowKey: ""}}, "(PartitionKey gt 'p' or (PartitionKey eq 'p' and RowKey gt ''))"},
	} {
		if got := filter(c.q); got != c.want {
			t.Errorf("filter(%+v) = %q, want %q", c.q, got, c.want)
		}
	}
}

// splitValue returns each entity of a page as the bytes the service sent,
// and refuses what is not a page.
func TestSplitValue(t *testing.T) {
	body := []byte(`{"odata.metadata":"x","value":[ {"PartitionKey":"a","RowKey":"1","N":5.0,"S":"\u00e9]}"} ,{"PartitionKey":"b","RowKey":"2","O":{"x":[1,2]}}],"more":true}`)
	raws, err := splitValue(body)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"PartitionKey":"a","RowKey":"1","N":5.0,"S":"\u00e9]}"}`, `{"PartitionKey":"b","RowKey":"2","O":{"x":[1,2]}}`}
	if len(raws) != len(want) {
		t.Fatalf("%d entities, want %d", len(raws), len(want))
	}
	for i := range want {
		if string(raws[i]) != want[i] {
			t.Errorf("entity %d: %s, want %s", i, raws[i], want[i])
		}
	}
	if raws, err := splitValue([]byte(`{"value":[]}`)); err != nil || len(raws) != 0 {
		t.Errorf("empty page: %d entities, %v", len(raws), err)
	}
	for _, bad := range []string{`[]`, `{"value":[{"a":1}`, `{"value":[{"a":1}]} {}`, ``} {
		if _, err := splitValue([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
