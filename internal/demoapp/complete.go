package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/transform"
)

// What complete writes: the execution ran for duration, and its result is
// resultText (Python's json.dumps form, as the application writes it;
// resultSize is its length, as the plan's doc schema says).
const (
	duration   = 20*time.Minute + 250*time.Millisecond
	resultText = `{"mailboxes": 3}`
)

// appTime is how the application writes a time in a doc.
const appTime = "2006-01-02T15:04:05.0000000Z"

// complete completes the Running execution o.execution in Cosmos DB and
// returns the line to print.
func complete(ctx context.Context, o options, conn string) (string, error) {
	if conn == "" {
		return "", errors.New("CosmosDBConnection is not set")
	}
	acct, err := azure.ParseCosmosConnection(conn)
	if err != nil {
		return "", fmt.Errorf("CosmosDBConnection: %w", err)
	}
	client, err := azure.NewCosmosClient(acct, clientOptions)
	if err != nil {
		return "", err
	}
	defer client.Close()
	c, err := client.NewContainer(o.database, transform.ContainerExecutions)
	if err != nil {
		return "", err
	}
	scope := "org-" + o.org
	pk := azcosmos.NewPartitionKeyString(scope)
	// Without the cross-partition header the stand-in answers a missing
	// doc with 500 instead of 404 (as azure.DocReader.Read says); the
	// service ignores it on a point read.
	hdr := runtime.WithHTTPHeader(ctx, http.Header{"x-ms-documentdb-query-enablecrosspartition": []string{"true"}})
	read, err := c.ReadItem(hdr, pk, o.execution, nil)
	if err != nil {
		var re *azcore.ResponseError
		if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
			return "", fmt.Errorf("execution %s is not in Cosmos DB (database %s, container %s, scope %s)", o.execution, o.database, transform.ContainerExecutions, scope)
		}
		return "", fmt.Errorf("reading execution %s: %w", o.execution, azure.ScrubError(err))
	}
	doc, err := completed(read.Value)
	if err != nil {
		return "", fmt.Errorf("execution %s: %w", o.execution, err)
	}
	etag := read.ETag
	if _, err := c.ReplaceItem(ctx, pk, o.execution, doc, &azcosmos.ItemOptions{IfMatchEtag: &etag}); err != nil {
		return "", fmt.Errorf("writing execution %s: %w", o.execution, azure.ScrubError(err))
	}
	return fmt.Sprintf("application on Cosmos DB: execution %s completed (Running → Success)", o.execution), nil
}

// completed returns the doc of a Running execution, completed; an error
// when it is not Running or its startedAt is not a time.
func completed(raw []byte) ([]byte, error) {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep every number the doc holds as it is
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("the doc is not JSON: %w", err)
	}
	if doc["status"] != "Running" {
		return nil, fmt.Errorf("it is %v, not Running: nothing written", doc["status"])
	}
	s, _ := doc["startedAt"].(string)
	started, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, fmt.Errorf("startedAt %q is not a time", s)
	}
	for _, p := range []string{"_rid", "_self", "_etag", "_attachments", "_ts"} {
		delete(doc, p) // the service's; it sets them again
	}
	var result any
	if err := json.Unmarshal([]byte(resultText), &result); err != nil {
		return nil, err
	}
	doc["status"] = "Success"
	doc["completedAt"] = started.Add(duration).UTC().Format(appTime)
	doc["durationMs"] = duration.Milliseconds()
	doc["result"] = result
	doc["resultType"] = "json"
	doc["resultSize"] = len(resultText)
	return json.Marshal(doc)
}
