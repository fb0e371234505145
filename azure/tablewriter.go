package azure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/bifrost/bifrost-migrate/store"
)

// MaxBatch is the most actions one entity-group transaction may hold.
const MaxBatch = 100

// TableWriter writes raw entities (the Table service's annotated JSON, as
// transform.EncodeEntity produces) into Table Storage: in batches with
// insert-or-replace (the fixtures loader, tests), and one row at a time
// with optimistic concurrency (Insert, Replace, Delete: reverse). run,
// verify and replay only read tables. Every request is retried by the
// Options' RetryOptions. It is safe for concurrent use.
type TableWriter struct {
	svc      *aztables.ServiceClient
	endpoint string
}

// fail wraps a failed request about table in a *ResourceError whose
// message starts with op.
func (w *TableWriter) fail(table, op string, err error) error {
	return &ResourceError{
		Resource: Resource{Service: ServiceTables, Kind: KindTable, Name: table, Endpoint: w.endpoint},
		Op:       op,
		Err:      withFault(ScrubError(err)),
	}
}

// NewTableWriter returns a writer for the account's table endpoint; o is as
// for NewTablesClient.
func NewTableWriter(a StorageAccount, o Options) (*TableWriter, error) {
	svc, err := NewTablesClient(a, o)
	if err != nil {
		return nil, err
	}
	return &TableWriter{svc: svc, endpoint: a.TableEndpoint}, nil
}

// CreateTable creates table unless it exists. Errors are *ResourceError
// naming the table.
func (w *TableWriter) CreateTable(ctx context.Context, table string) error {
	_, err := w.svc.CreateTable(ctx, table, nil)
	var re *azcore.ResponseError
	if err != nil && errors.As(err, &re) && (re.StatusCode == http.StatusConflict || re.ErrorCode == string(aztables.TableAlreadyExists)) {
		return nil
	}
	if err != nil {
		return w.fail(table, "create table "+table, err)
	}
	return nil
}

// UpsertBatch writes entities, which must all have PartitionKey
// partitionKey and distinct RowKeys, with insert-or-replace semantics, so
// writing the same rows again is idempotent. Up to MaxBatch entities go in
// one entity-group transaction (atomic). Entities whose keys contain an
// apostrophe are written one at a time instead: aztables v1.4.1 does not
// double the quote in the key literal of a transaction's request URL (its
// single-entity calls do), so the service would reject the batch.
//
// On error the batch may be partly written only when it held such
// one-at-a-time entities; errors name the table, the PartitionKey and the
// RowKey range and never contain credentials.
func (w *TableWriter) UpsertBatch(ctx context.Context, table, partitionKey string, entities [][]byte, rowKeys []string) error {
	if len(entities) == 0 {
		return nil
	}
	if len(entities) > MaxBatch {
		return fmt.Errorf("table %s PartitionKey %q: batch of %d entities exceeds %d", table, partitionKey, len(entities), MaxBatch)
	}
	if len(rowKeys) != len(entities) {
		return fmt.Errorf("table %s PartitionKey %q: %d entities but %d row keys", table, partitionKey, len(entities), len(rowKeys))
	}
	client := w.svc.NewClient(table)
	quoted := strings.Contains(partitionKey, "'")
	actions := make([]aztables.TransactionAction, 0, len(entities))
	for i, e := range entities {
		if quoted || strings.Contains(rowKeys[i], "'") {
			_, err := client.UpsertEntity(ctx, e, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace})
			if err != nil {
				return w.fail(table, fmt.Sprintf("table %s PartitionKey %q RowKey %q: upsert", table, partitionKey, rowKeys[i]), err)
			}
			continue
		}
		actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: e})
	}
	if len(actions) == 0 {
		return nil
	}
	if _, err := client.SubmitTransaction(ctx, actions, nil); err != nil {
		return w.fail(table, fmt.Sprintf("table %s PartitionKey %q RowKeys %q…%q: transaction of %d",
			table, partitionKey, rowKeys[0], rowKeys[len(rowKeys)-1], len(actions)), err)
	}
	return nil
}

// DeleteTable deletes table; a missing table is not an error. Tests use it
// to clean up.
func (w *TableWriter) DeleteTable(ctx context.Context, table string) error {
	_, err := w.svc.DeleteTable(ctx, table, nil)
	var re *azcore.ResponseError
	if err != nil && errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete table %s: %w", table, ScrubError(err))
	}
	return nil
}

// ErrNoETag is returned by Replace and Delete given an empty ETag: an
// unconditional write must say so with "*".
var ErrNoETag = errors.New(`no ETag to match (use "*" to match any)`)

// Insert inserts entity, the Table service's annotated JSON of one row with
// its PartitionKey and RowKey (as transform.EncodeEntity writes it), into
// table and returns the row's new ETag (the format TableReader gives in
// transform.Row.ETag, usable as If-Match). It never overwrites: when the
// row exists (409 EntityAlreadyExists) the error's kind is store.Exists.
//
// Errors: an entity without string keys is refused before any request. A
// failed request returns a *ResourceError naming the table, whose message
// names the keys, never credentials or property values; its fault
// (store.KindOf) is Exists as said, Auth (401, 403), Refused for an
// entity the service refuses (another 4xx, such as 400 or 413: a value or
// key it does not accept, a row too large), or a retryable kind with
// store.ErrRetriesExhausted when throttling or transient failures (429,
// 408, 5xx, dropped connections) outlasted the retry timeout; a missing
// table (404 TableNotFound) is Fatal.
//
// A write whose connection broke after the service applied it is retried,
// and the retry then reports the write as if someone else had made it
// (here Exists; Changed for Replace; NotFound for Delete): callers that
// get one of these read the row again and decide again, as they would
// for a concurrent writer.
func (w *TableWriter) Insert(ctx context.Context, table string, entity []byte) (etag string, err error) {
	key, err := entityKey(table, entity)
	if err != nil {
		return "", err
	}
	resp, err := w.svc.NewClient(table).AddEntity(ctx, entity, nil)
	if err != nil {
		return "", w.rowError(table, key, "insert", err)
	}
	return string(resp.ETag), nil
}

// Replace replaces the row with entity's keys by entity (every property:
// the ones entity lacks are removed) if the row's ETag is still ifMatch,
// and returns its new ETag. ifMatch is an ETag as TableReader or a write
// returned it, or "*" for whatever the row holds; an empty one is refused
// (ErrNoETag), since the service would insert the row when missing. A row
// changed since (412) returns an error of kind store.Changed, a missing
// row (404 ResourceNotFound) one of kind store.NotFound. Other errors are
// as for Insert.
func (w *TableWriter) Replace(ctx context.Context, table string, entity []byte, ifMatch string) (etag string, err error) {
	key, err := entityKey(table, entity)
	if err != nil {
		return "", err
	}
	if ifMatch == "" {
		return "", fmt.Errorf("table %s PartitionKey %q RowKey %q: replace: %w", table, key.PartitionKey, key.RowKey, ErrNoETag)
	}
	e := azcore.ETag(ifMatch)
	resp, err := w.svc.NewClient(table).UpdateEntity(ctx, entity, &aztables.UpdateEntityOptions{IfMatch: &e, UpdateMode: aztables.UpdateModeReplace})
	if err != nil {
		return "", w.rowError(table, key, "replace", err)
	}
	return string(resp.ETag), nil
}

// Delete deletes the row with key from table if its ETag is still ifMatch
// ("*": whatever it holds; empty: ErrNoETag). Errors are as for Replace:
// of kind store.Changed when the row changed, store.NotFound when it does
// not exist.
func (w *TableWriter) Delete(ctx context.Context, table string, key store.Key, ifMatch string) error {
	if ifMatch == "" {
		return fmt.Errorf("table %s PartitionKey %q RowKey %q: delete: %w", table, key.PartitionKey, key.RowKey, ErrNoETag)
	}
	e := azcore.ETag(ifMatch)
	if _, err := w.svc.NewClient(table).DeleteEntity(ctx, key.PartitionKey, key.RowKey, &aztables.DeleteEntityOptions{IfMatch: &e}); err != nil {
		return w.rowError(table, key, "delete", err)
	}
	return nil
}

// entityKey returns the keys of an annotated JSON entity.
func entityKey(table string, entity []byte) (store.Key, error) {
	var k struct {
		PartitionKey *string
		RowKey       *string
	}
	if err := json.Unmarshal(entity, &k); err != nil {
		return store.Key{}, fmt.Errorf("table %s: the entity is not a JSON object with string keys: %w", table, err)
	}
	if k.PartitionKey == nil || k.RowKey == nil {
		return store.Key{}, fmt.Errorf("table %s: the entity has no PartitionKey or no RowKey", table)
	}
	return store.Key{PartitionKey: *k.PartitionKey, RowKey: *k.RowKey}, nil
}

// rowError is the error of a failed write of the row key: a *ResourceError
// whose fault (store.KindOf) is the outcome a caller acts on (see Insert).
func (w *TableWriter) rowError(table string, key store.Key, op string, err error) error {
	where := fmt.Sprintf("table %s PartitionKey %q RowKey %q: %s", table, key.PartitionKey, key.RowKey, op)
	f := FaultOf(err)
	if errors.Is(err, store.ErrRetriesExhausted) || f.Status == 0 {
		return w.fail(table, where, err)
	}
	var what string
	switch f.Kind {
	case store.Exists:
		what = "the row already exists"
	case store.Changed:
		what = "the row changed since it was read (ETag mismatch)"
	case store.NotFound:
		what = "the row does not exist"
	case store.Auth:
		what = "access denied"
	case store.Refused:
		what = "the service refuses the entity"
	default:
		return w.fail(table, where, err)
	}
	f.Reason = fmt.Sprintf("%d %s", f.Status, http.StatusText(f.Status))
	if code := ErrorCode(err); code != "" {
		f.Reason += " (" + code + ")"
	}
	f.Reason += ": " + what
	return &ResourceError{
		Resource: Resource{Service: ServiceTables, Kind: KindTable, Name: table, Endpoint: w.endpoint},
		Op:       where,
		Err:      f,
	}
}
