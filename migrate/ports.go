// Package migrate is the run/replay pipeline: it reads Table Storage page by
// page, transforms every row (package transform), uploads the blobs a doc
// needs, writes docs through a bounded pool, checkpoints, and records dead
// letters (SPEC §5, §8, §11, §13). It never imports cobra or terminal code:
// it reports through Progress, and the command decides how to show it.
//
// The services sit behind the small interfaces in this file, in the
// vocabulary of package store; package azure implements them for the real
// services and emulators, and migrate never imports it.
package migrate

import (
	"context"

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
// transient failures themselves (SPEC §11: 429 honouring
// x-ms-retry-after-ms beyond the SDK's limits, 408, 449, 5xx and connection
// errors, with capped exponential backoff and jitter) and return a
// *store.PermanentError for anything that retrying cannot fix (other 4xx). They
// are safe for concurrent use.
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
