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
