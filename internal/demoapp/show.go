package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/transform"
)

// executionRow is what show reads of an execution's Entities row.
type executionRow struct {
	RowKey      string
	Status      string
	CompletedAt string
	Result      string
}

// show reads the execution o.execution as the Table-based application
// does and returns the line to print.
func show(ctx context.Context, o options, conn string) (string, error) {
	if conn == "" {
		return "", errors.New("BIFROST_TABLES_CONNECTION is not set")
	}
	acct, err := azure.ParseStorageConnection(conn)
	if err != nil {
		return "", fmt.Errorf("BIFROST_TABLES_CONNECTION: %w", err)
	}
	svc, err := azure.NewTablesClient(acct, clientOptions)
	if err != nil {
		return "", err
	}
	row, err := findExecution(ctx, svc.NewClient(o.tablePrefix+transform.TableEntities), o)
	if err != nil {
		return "", err
	}
	listed, err := inRunningIndex(ctx, svc.NewClient(o.tablePrefix+transform.TableRelationships), o.execution)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "application on the tables: execution %s is %s", o.execution, row.Status)
	if row.CompletedAt != "" {
		fmt.Fprintf(&b, ", completed %s", row.CompletedAt)
	}
	if row.Result != "" {
		fmt.Fprintf(&b, ", result %s", row.Result)
	}
	if listed {
		b.WriteString("; listed in the status:Running index")
	} else {
		b.WriteString("; not in the status:Running index")
	}
	return b.String(), nil
}

// quote is an OData string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// findExecution returns the execution's row in partition o.org of
// Entities: an error when there is none or more than one.
func findExecution(ctx context.Context, entities *aztables.Client, o options) (executionRow, error) {
	filter := "PartitionKey eq " + quote(o.org) + " and ExecutionId eq " + quote(o.execution)
	pager := entities.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter})
	var rows []executionRow
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return executionRow{}, fmt.Errorf("reading execution %s from Entities: %w", o.execution, azure.ScrubError(err))
		}
		for _, raw := range page.Entities {
			var r executionRow
			if err := json.Unmarshal(raw, &r); err != nil {
				return executionRow{}, fmt.Errorf("execution %s: its row is not readable: %w", o.execution, err)
			}
			rows = append(rows, r)
		}
	}
	switch len(rows) {
	case 0:
		return executionRow{}, fmt.Errorf("execution %s has no row in Entities (partition %s)", o.execution, o.org)
	case 1:
		return rows[0], nil
	default:
		return executionRow{}, fmt.Errorf("execution %s has %d rows in Entities (partition %s)", o.execution, len(rows), o.org)
	}
}

// inRunningIndex reports whether Relationships holds the execution's
// status:Running index row.
func inRunningIndex(ctx context.Context, rel *aztables.Client, id string) (bool, error) {
	_, err := rel.GetEntity(ctx, "GLOBAL", "status:Running:"+id, nil)
	var re *azcore.ResponseError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &re) && re.StatusCode == http.StatusNotFound:
		return false, nil
	default:
		return false, fmt.Errorf("reading the status:Running index: %w", azure.ScrubError(err))
	}
}
