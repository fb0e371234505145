// Package migrate is the engine of run, replay and reverse (SPEC §5, §8,
// §11, §13, §15): one shape — source → decide → write → record → commit
// (engine.go, docs/engine.md) — of which the three commands are
// configurations. It never imports cobra or terminal code: it reports
// through Progress, and the command decides how to show it.
//
// The services sit behind the small interfaces in this file, in the
// vocabulary of package store; package azure implements them for the real
// services and emulators, and migrate never imports it.
package migrate

import (
	"context"
	"time"

	"github.com/bifrost/bifrost-migrate/store"
)

// RowSource reads table pages. *azure.TableReader implements it.
type RowSource interface {
	// ReadPage reads one page of table from `from` (zero: the beginning).
	ReadPage(ctx context.Context, table string, q store.Query, from store.Cursor) (store.Page, error)
	// Count counts the rows q selects, reading keys only.
	Count(ctx context.Context, table string, q store.Query) (int64, error)
}

// DocWriter writes docs to Cosmos DB containers. Implementations retry
// the retryable faults themselves (store.FaultKind.Retryable; SPEC §11:
// 429 honouring x-ms-retry-after-ms beyond the SDK's limits, 408, 449,
// 5xx and connection errors, with capped exponential backoff and jitter)
// and return errors that carry their fault (store.KindOf): Refused for
// what retrying cannot fix (other 4xx). They are safe for concurrent use.
type DocWriter interface {
	// Upsert creates or replaces the doc (JSON bytes) with the given id in
	// partition scope of container. Repeating it is harmless.
	Upsert(ctx context.Context, container, scope, id string, doc []byte) (store.WriteResult, error)
}

// BlobStore is container execution-data. Implementations are safe for
// concurrent use.
type BlobStore interface {
	// List calls fn for every blob in the container, in name order.
	List(ctx context.Context, fn func(name string, size int64) error) error
	// PutIfAbsent uploads data as blob name, create-only (If-None-Match: *).
	// An existing blob with the same MD5 is success (created false); an
	// existing blob with different content returns an error wrapping
	// store.ErrBlobConflict.
	PutIfAbsent(ctx context.Context, name string, data []byte, contentType string) (created bool, err error)
}

// DocStore is what replay and reverse need of Cosmos DB: point reads and
// conditional writes (SPEC §13, §15). *azure.CosmosDocs implements it.
// Implementations retry the retryable faults themselves, return errors
// that carry their fault (store.KindOf), and are safe for concurrent use.
type DocStore interface {
	// Read point-reads a doc; found is false (and err nil) when it does
	// not exist. etag is its _etag.
	Read(ctx context.Context, container, scope, id string) (doc []byte, etag string, found bool, charge float64, err error)
	// Create creates the doc; an existing doc gives an error of kind
	// store.Exists.
	Create(ctx context.Context, container, scope, id string, doc []byte) (store.WriteResult, error)
	// Replace replaces the doc if its _etag is ifMatch: otherwise the
	// error is of kind store.Changed, or store.NotFound when it is gone.
	Replace(ctx context.Context, container, scope, id string, doc []byte, ifMatch string) (store.WriteResult, error)
	// Delete deletes the doc if its _etag is ifMatch, with the errors of
	// Replace.
	Delete(ctx context.Context, container, scope, id, ifMatch string) (store.WriteResult, error)
}

// DocQuerier lists the docs of a container in bulk (the prunes).
// *azure.DocReader implements it; it is safe for concurrent use.
type DocQuerier interface {
	// QueryAll runs query over every partition of container and calls fn
	// with each doc's raw JSON, page by page.
	QueryAll(ctx context.Context, container, query string, params []store.QueryParam, pageSize int, fn func(doc []byte) error) error
}

// ChangeFeed reads what changed in the containers of Cosmos DB.
// *azure.DocReader implements it; it is safe for concurrent use.
type ChangeFeed interface {
	// Changes calls fn with the latest version of each doc of container
	// changed after position from, pageSize docs at most per request, and
	// returns the position after them. Deletes are not changes it
	// reports; a doc can come twice.
	Changes(ctx context.Context, container, from string, pageSize int, fn func(doc []byte) error) (next string, err error)
}

// ChangePosition returns the position of the change feed at t (every doc
// whose _ts ≥ t rounded down to the second). It is set by cmd to
// azure.ChangeFeedSince, which migrate does not import.
type ChangePosition func(t time.Time) string

// RowStore is what reverse needs of Table Storage: pages and single rows
// (store.PageReader) and conditional writes of the Table service's
// annotated JSON (transform.EncodeEntity). *azure.TableWriter with an
// *azure.TableReader implements it; it is safe for concurrent use.
type RowStore interface {
	store.PageReader
	// Insert creates the row; one that exists gives an error of kind
	// store.Exists. It returns the row's ETag.
	Insert(ctx context.Context, table string, entity []byte) (etag string, err error)
	// Replace replaces the row whose ETag is ifMatch: otherwise the error
	// is of kind store.Changed, or store.NotFound when it is gone. It
	// returns the row's new ETag.
	Replace(ctx context.Context, table string, entity []byte, ifMatch string) (etag string, err error)
	// Delete deletes the row whose ETag is ifMatch, with the errors of
	// Replace.
	Delete(ctx context.Context, table string, key store.Key, ifMatch string) error
}
