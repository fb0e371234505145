package cmd

import (
	"context"
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/bifrost/bifrost-migrate/azure"
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

// missing checks that the containers entities and executions and the blob
// container exist. It returns the missing ones ("container DB/NAME",
// "blob container NAME"), in that order, and whether the blob container
// is among them; an error when a check itself failed.
func (t target) missing(ctx context.Context) (missing []string, noBlobContainer bool, err error) {
	cosmos := azure.NewProvisionCosmos(t.client)
	for _, name := range []string{transform.ContainerEntities, transform.ContainerExecutions} {
		c, err := cosmos.ReadContainer(ctx, t.database, name)
		if err != nil {
			return missing, false, fmt.Errorf("read container %s/%s: %w", t.database, name, err)
		}
		if c == nil {
			missing = append(missing, fmt.Sprintf("container %s/%s", t.database, name))
		}
	}
	ok, err := azure.NewProvisionBlobs(t.blobs, t.transport).ContainerExists(ctx, t.blobName)
	if err != nil {
		return missing, false, fmt.Errorf("blob container %s: %w", t.blobName, err)
	}
	if !ok {
		missing = append(missing, "blob container "+t.blobName)
		noBlobContainer = true
	}
	return missing, noBlobContainer, nil
}
