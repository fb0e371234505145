package verify

import (
	"context"

	"github.com/bifrost/bifrost-migrate/store"
)

// RowSource reads table pages. *azure.TableReader implements it.
type RowSource interface {
	// ReadPage reads one page of table from `from` (zero: the beginning);
	// a table that does not exist is an error.
	ReadPage(ctx context.Context, table string, q store.Query, from store.Cursor) (store.Page, error)
}

// DocSource reads docs of the Cosmos DB database. *azure.DocReader
// implements it. Implementations are safe for concurrent use.
type DocSource interface {
	// QueryAll runs query over every partition of container and calls fn
	// with each doc's raw JSON, page by page (pageSize docs at most).
	QueryAll(ctx context.Context, container, query string, params []store.QueryParam, pageSize int, fn func(doc []byte) error) error
	// Read point-reads one doc; found is false when it does not exist.
	Read(ctx context.Context, container, scope, id string) (doc []byte, found bool, err error)
}

// BlobLister lists container execution-data. Implementations are safe for
// concurrent use.
type BlobLister interface {
	// List calls fn for every blob in the container, in name order.
	List(ctx context.Context, fn func(name string, size int64) error) error
}

// Progress hears what verify is doing. Calls may come from several
// goroutines at once; implementations must be safe for concurrent use.
type Progress interface {
	// Step is called when a phase starts or ends, with a short message
	// such as "listing blobs" (never a secret or a property value).
	Step(msg string)
}

type noProgress struct{}

func (noProgress) Step(string) {}
