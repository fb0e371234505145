package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// MaxBatch is the most actions one entity-group transaction may hold.
const MaxBatch = 100

// TableWriter writes raw entities (the Table service's annotated JSON, as
// transform.EncodeEntity produces) into Table Storage. It is used by the
// fixtures loader and tests; the migration itself only reads tables. It is
// safe for concurrent use.
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
		Err:      ScrubError(err),
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
