// Package store holds what the domain packages (migrate, verify) and the
// Azure adapters (package azure) share: how table rows are selected and
// paged, what a write reports, and the fault vocabulary (FaultKind,
// Fault) that decides what the pipeline does with a row. It is a leaf: it
// imports no adapter and no SDK, so the domain packages never depend on
// package azure, and azure implements these types rather than defining
// them.
package store

import (
	"errors"
	"time"

	"github.com/bifrost/bifrost-migrate/transform"
)

// PageSize is the most rows the Table service returns in one page.
const PageSize = 1000

// Cursor is where the next page of a table query starts: the Table
// service's continuation (NextPartitionKey, NextRowKey). The zero value
// means "from the beginning" when passed in, and "no more pages" when
// returned. It is opaque to callers, who only store it and pass it back.
type Cursor struct {
	NextPartitionKey string
	NextRowKey       string
}

// IsZero reports whether c is the zero Cursor.
func (c Cursor) IsZero() bool { return c == Cursor{} }

// Query selects rows of one table. The zero value selects every row with
// every property.
type Query struct {
	// Since, when not zero, selects the rows whose Timestamp is at or
	// after it (the service filters them).
	Since time.Time
	// Key, when not nil, selects the one row with these keys.
	Key *Key
	// From and To, when not nil, bound the keys (PartitionKey, then
	// RowKey, in the service's order): From inclusive, To exclusive. An
	// empty RowKey bounds by the PartitionKey alone.
	From, To *Key
	// After, when not nil, selects the rows whose keys come strictly after
	// it: where a scan resumes after the last row it committed.
	After *Key
	// Select limits the properties returned. Empty means all.
	Select []string
	// Top is the page size; 0 means PageSize.
	Top int
}

// Key is a row's PartitionKey and RowKey.
type Key struct {
	PartitionKey string
	RowKey       string
}

// Match reports whether q selects a row of timestamp ts and keys pk, rk
// (Since, Key, From, To, After; not Select or Top): the service's filter,
// for sources in memory.
func (q Query) Match(pk, rk string, ts time.Time) bool {
	cmp := func(k *Key) int { return transform.CompareKeys(pk, rk, k.PartitionKey, k.RowKey) }
	switch {
	case !q.Since.IsZero() && ts.Before(q.Since):
		return false
	case q.Key != nil && (pk != q.Key.PartitionKey || rk != q.Key.RowKey):
		return false
	case q.From != nil && cmp(q.From) < 0:
		return false
	case q.To != nil && cmp(q.To) >= 0:
		return false
	case q.After != nil && cmp(q.After) <= 0:
		return false
	}
	return true
}

// Page is one page of rows, in the service's key order.
type Page struct {
	Rows []transform.Row
	// Next is where the following page starts; zero when this page is
	// the last. A page may be empty and still have a Next.
	Next Cursor
}

// QueryParam is one named parameter of a Cosmos DB SQL query ("@scope").
type QueryParam struct {
	Name  string
	Value any
}

// DefaultQueryPageSize is the page size of a doc query given 0. It is
// large on purpose: a real account caps a page at 4 MB of response anyway,
// and the Cosmos DB stand-in evaluates every page by scanning its whole
// container, so small pages make a full read quadratic.
const DefaultQueryPageSize = 10000

// WriteResult is what a successful write reports.
type WriteResult struct {
	// RequestCharge is the sum of the request units of every attempt,
	// including throttled and failed ones.
	RequestCharge float64
	// ETag is the doc's new _etag, when the service returned it.
	ETag string
}

// ErrBlobConflict: a blob that must be created already exists with
// different content (the blob store compares the two itself): a fault of
// kind Exists that no start-over changes, so the row is a dead letter
// (migrate's ruleUploadBlob). The blob stores wrap it in errors that name
// the blob; test with errors.Is.
var ErrBlobConflict error = &Fault{Kind: Exists, Reason: "a different blob already exists"}

// The errors that are no fault of a request. The adapters wrap them in
// errors that say more; test with errors.Is.
var (
	// ErrRetriesExhausted: a retryable fault (FaultKind.Retryable)
	// outlasted the retry timeout (--retry-timeout). The error that wraps
	// it wraps the last attempt's fault too, whose kind it has; the
	// operation may succeed later, so the caller stops resumable rather
	// than dead-lettering.
	ErrRetriesExhausted = errors.New("retries exhausted")
)
