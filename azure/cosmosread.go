package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/bifrost/bifrost-migrate/store"
)

// DocReader reads docs of the containers of one Cosmos DB database in bulk
// (queries, page by page) and one at a time (point reads). It returns docs
// as their raw JSON, exactly as the service sent them, system properties
// included. It is safe for concurrent use.
type DocReader struct {
	db       *azcosmos.DatabaseClient
	database string
	endpoint string
}

// NewDocReader returns a reader for database. It sends no request.
func NewDocReader(client *azcosmos.Client, database string) (*DocReader, error) {
	db, err := client.NewDatabase(database)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", database, err)
	}
	return &DocReader{db: db, database: database, endpoint: client.Endpoint()}, nil
}

// fail wraps a failed request about container in a *ResourceError; op
// starts its message.
func (r *DocReader) fail(container, op string, err error) error {
	return &ResourceError{
		Resource: Resource{Service: ServiceCosmos, Kind: KindContainer, Name: r.database + "/" + container, Endpoint: r.endpoint},
		Op:       op,
		Err:      withFault(err),
	}
}

// QueryAll runs query over every partition of container (a cross-partition
// query; a query meant for one partition must carry its own WHERE clause on
// scope, since the stand-in ignores the partition key header) and calls fn
// with each doc's raw JSON, page by page, following the continuation until
// the service has no more. pageSize is the most docs per page (the
// x-ms-max-item-count header); 0 means store.DefaultQueryPageSize. Each
// page is read doc by doc as it arrives (querystream.go), so that what it
// holds of a page is about one doc, whatever pageSize: fn gets each doc
// as soon as it is decoded, once, even when a page is read again after a
// failure while its body was read (the docs fn had are not handed on
// again, so a doc that changed between the two reads can be missed or
// come at its newer version: a query of a container that changes is no
// snapshot anyway). Each slice is fn's to keep (it shares no memory with
// other docs). It stops at the first error, from the service or fn (fn's
// is returned as it is); a failed request returns a *ResourceError naming
// the container (a missing database or container: 404).
func (r *DocReader) QueryAll(ctx context.Context, container, query string, params []store.QueryParam, pageSize int, fn func(doc []byte) error) error {
	c, err := r.db.NewContainer(container)
	if err != nil {
		return fmt.Errorf("container %s: %w", container, err)
	}
	if pageSize <= 0 {
		pageSize = store.DefaultQueryPageSize
	}
	opts := &azcosmos.QueryOptions{PageSizeHint: int32(pageSize)}
	for _, p := range params {
		opts.QueryParameters = append(opts.QueryParameters, azcosmos.QueryParameter{Name: p.Name, Value: p.Value})
	}
	sink := &querySink{fn: fn}
	ctx = withQuerySink(ctx, sink)
	pager := c.NewQueryItemsPager(query, azcosmos.NewPartitionKey(), opts)
	for pager.More() {
		sink.newPage()
		page, err := pager.NextPage(ctx)
		switch {
		case sink.err != nil:
			return sink.err
		case err != nil:
			return r.fail(container, "query container "+container, ScrubError(err))
		}
		// Empty, unless the client was built without the policy that
		// reads pages doc by doc (NewCosmosClient adds it).
		for _, item := range page.Items {
			if err := fn(item); err != nil {
				return err
			}
		}
	}
	return nil
}

// Read point-reads the doc id in partition scope of container and returns
// its raw JSON; found is false when it does not exist. It sends the
// cross-partition query header, without which the @vercel/cosmosdb-server
// stand-in answers 500 instead of 404 for a missing doc (the real service
// ignores the header on a point read). A failed request returns a
// *ResourceError naming the container.
func (r *DocReader) Read(ctx context.Context, container, scope, id string) (doc []byte, found bool, err error) {
	c, err := r.db.NewContainer(container)
	if err != nil {
		return nil, false, fmt.Errorf("container %s: %w", container, err)
	}
	ctx = runtime.WithHTTPHeader(ctx, http.Header{"x-ms-documentdb-query-enablecrosspartition": []string{"true"}})
	resp, err := c.ReadItem(ctx, azcosmos.NewPartitionKeyString(scope), id, nil)
	if err != nil {
		var re *azcore.ResponseError
		if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
			return nil, false, nil
		}
		return nil, false, r.fail(container, fmt.Sprintf("read doc %s/%s/%s", container, scope, id), ScrubError(err))
	}
	return resp.Value, true, nil
}
