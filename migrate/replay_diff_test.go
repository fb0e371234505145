package migrate

import (
	"encoding/json"
	"testing"

	"github.com/bifrost/bifrost-migrate/transform"
)

// TestDiffDocs checks what a conflict adds to transform.DiffDocs (tested
// there): the system properties, _lsn, ttl and _migration are not listed,
// and the sides are the tables' and Cosmos DB's.
func TestDiffDocs(t *testing.T) {
	tables, err := transform.DecodeDoc([]byte(`{"id":"a","ttl":10,"_migration":{"hash":"h1"},"name":"Ann","value":"s3cret"}`))
	if err != nil {
		t.Fatal(err)
	}
	cosmos, err := transform.DecodeDoc([]byte(`{"id":"a","ttl":99,"_migration":{"hash":"h2"},"name":"Bob","extra":1,` +
		`"_rid":"x","_self":"y","_etag":"z","_ts":1,"_attachments":"a/","_lsn":7,"value":"other"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(diffDocs(transform.TableEntities, tables, cosmos))
	if err != nil {
		t.Fatal(err)
	}
	const want = `[{"path":"extra","cosmos":1},{"path":"name","tables":"Ann","cosmos":"Bob"},{"path":"value","tables":"***","cosmos":"***"}]`
	if string(b) != want {
		t.Errorf("got %s\nwant %s", b, want)
	}
	if d := diffDocs(transform.TableEntities, tables, tables); d != nil {
		t.Errorf("same doc: %v, want nil", d)
	}
}
