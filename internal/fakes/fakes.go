// Package fakes holds one in-memory fake per service the tool talks to —
// Cosmos DB docs (Docs, with its DocReader), Table Storage (Tables) and
// Blob Storage (Blobs) — for the unit tests of migrate and verify, and the
// few helpers those tests share.
//
// Each fake implements the methods of the azure adapter it stands for
// (azure.CosmosDocs and azure.DocReader, azure.TableReader with
// azure.TableWriter, azure.BlobStore), with the same outcomes: ETags that
// change on every write, and every answer a fault of the kind the adapter
// gives (store.KindOf): If-Match answered 412 (store.Changed), a create of
// what exists 409 (store.Exists), a conditional write of what is gone 404
// (store.NotFound), a doc or row the service would refuse 400
// (store.Refused). The conformance
// suite (conformance_test.go) runs the same cases against the fakes and
// against the adapters on the emulators, so a fake cannot drift from the
// service unnoticed.
//
// Beyond the adapters' methods, a fake has what tests need and a service
// does not give: seeding (Put, Add), snapshots of what is stored, a count
// of writes, and a BeforeWrite hook for fault injection and for a
// concurrent writer. All fakes are safe for concurrent use.
package fakes

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/bifrost/bifrost-migrate/store"
)

// Op is a write a fake is about to serve, as its BeforeWrite hook sees it.
type Op struct {
	// Name is the method: "upsert", "create", "replace" or "delete" for
	// docs; "insert", "replace", "delete" or "upsert" (one row of
	// UpsertBatch) for rows.
	Name string
	// Container is the doc's container, or the row's table.
	Container string
	// Partition is the doc's scope, or the row's PartitionKey.
	Partition string
	// ID is the doc's id, or the row's RowKey.
	ID string
}

// BeforeWrite is a fake's fault-injection hook. It runs on the caller's
// goroutine before each write, without the fake's lock, so it may block
// (until ctx ends), call the fake (a concurrent writer changing the doc
// first) or fail the write: a non-nil error is what the write returns,
// and nothing is written.
type BeforeWrite func(ctx context.Context, op Op) error

// start is where a fake's own clock starts.
var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// clock is a fake's time: Now when set, otherwise a clock that starts at
// 2026-01-01T00:00:00Z and moves one second at each reading, so that every
// write has a time of its own and tests are repeatable.
type clock struct {
	mu    sync.Mutex
	ticks int
}

func (c *clock) now(now func() time.Time) time.Time {
	if now != nil {
		return now().UTC()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ticks++
	return start.Add(time.Duration(c.ticks) * time.Second)
}

// fault is the answer a fake gives as the adapter would: a fault of kind,
// with the service's status, whose text is format's.
func fault(kind store.FaultKind, status int, format string, args ...any) error {
	return &store.Fault{Kind: kind, Status: status, Reason: fmt.Sprintf(format, args...)}
}

// JSON is v as compact JSON, for test messages; a value that cannot be
// encoded gives the encoder's error text instead.
func JSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
