package cmd

import (
	"context"
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/transform"
)

// target is what run, replay and verify read from and write to: the three
// accounts, a Cosmos DB client and the client of the blob container of
// execution data. It holds no open connection; a copy is as good as the
// original.
type target struct {
	tables, blobs azure.StorageAccount
	cosmos        azure.CosmosAccount
	client        *azcosmos.Client
	// blobContainer is the client of the container named blobName.
	blobContainer *container.Client
	database      string
	blobName      string
	transport     http.RoundTripper // f.Transport: nil, or the tests' own
}

// connectTarget resolves the accounts of f (tables, blobs, then Cosmos DB)
// and builds the clients for database and the blob container blobName. It
// sends no request. It returns the first error: a usage error for a bad
// connection setting, else the client constructor's.
func connectTarget(f *Factory, database, blobName string) (target, error) {
	t := target{database: database, blobName: blobName, transport: f.Transport}
	var err error
	if t.tables, err = f.Storage(); err != nil {
		return t, err
	}
	if t.blobs, err = f.BlobStorage(); err != nil {
		return t, err
	}
	if t.cosmos, t.client, err = connectCosmos(f); err != nil {
		return t, err
	}
	if t.blobContainer, err = azure.NewBlobContainerClient(t.blobs, blobName, f.Transport); err != nil {
		return t, err
	}
	return t, nil
}

// connectCosmos resolves the Cosmos DB account of f and builds its client.
func connectCosmos(f *Factory) (azure.CosmosAccount, *azcosmos.Client, error) {
	acct, err := f.Cosmos()
	if err != nil {
		return acct, nil, err
	}
	client, err := azure.NewCosmosClient(acct, f.Transport)
	return acct, client, err
}

// where describes the targets for status output, without secrets.
func (t target) where() string {
	return fmt.Sprintf("tables %s → database %q in %s, blob container %q", t.tables, t.database, t.cosmos, t.blobName)
}

// fingerprint identifies the targets in run's state, without secrets.
func (t target) fingerprint() string {
	return fmt.Sprintf("cosmos=%s;database=%s;tables=%s;blobs=%s/%s", t.cosmos.Endpoint, t.database, t.tables.TableEndpoint, t.blobs.BlobEndpoint, t.blobName)
}

// missing checks that the database, its containers entities and
// executions, and the blob container exist. It returns the missing ones in
// that order (only the database when it is missing: it holds the
// containers), and whether the blob container is among them; an error
// when a check itself failed.
func (t target) missing(ctx context.Context) (missing []azure.Resource, noBlobContainer bool, err error) {
	cosmos := azure.NewProvisionCosmos(t.client)
	ok, err := cosmos.DatabaseExists(ctx, t.database)
	if err != nil {
		return nil, false, err
	}
	if !ok {
		missing = append(missing, azure.Resource{Service: azure.ServiceCosmos, Kind: azure.KindDatabase, Name: t.database, Endpoint: t.cosmos.Endpoint})
	}
	for _, name := range []string{transform.ContainerEntities, transform.ContainerExecutions} {
		if !ok {
			break
		}
		c, err := cosmos.ReadContainer(ctx, t.database, name)
		if err != nil {
			return nil, false, err
		}
		if c == nil {
			missing = append(missing, azure.Resource{Service: azure.ServiceCosmos, Kind: azure.KindContainer, Name: t.database + "/" + name, Endpoint: t.cosmos.Endpoint})
		}
	}
	exists, err := azure.NewProvisionBlobs(t.blobs, t.transport).ContainerExists(ctx, t.blobName)
	if err != nil {
		return nil, false, err
	}
	if !exists {
		missing = append(missing, azure.Resource{Service: azure.ServiceBlobs, Kind: azure.KindBlobContainer, Name: t.blobName, Endpoint: t.blobs.BlobEndpoint})
		noBlobContainer = true
	}
	return missing, noBlobContainer, nil
}

// pageReader is what probeTables needs of a table reader.
type pageReader interface {
	ReadPage(ctx context.Context, table string, q azure.Query, from azure.Continuation) (azure.Page, error)
}

// probeTables reads the first key of each table (read as prefix+table;
// none given means all three), so that a missing table, or access the
// account refuses, stops the command before it does any work. It returns
// the reader's error, which names the table (*azure.ResourceError).
func probeTables(ctx context.Context, r pageReader, prefix string, tables []string) error {
	if len(tables) == 0 {
		tables = fixtures.Tables()
	}
	for _, table := range tables {
		q := azure.Query{Top: 1, Select: []string{"PartitionKey", "RowKey"}}
		if _, err := r.ReadPage(ctx, prefix+table, q, azure.Continuation{}); err != nil {
			return err
		}
	}
	return nil
}
