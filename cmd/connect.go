package cmd

import (
	"context"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/ui"
)

// need is a service a command uses, and how; a command's needs are the
// sum of them.
type need uint16

const (
	// tablesRead: the tables, read (a TableReader).
	tablesRead need = 1 << iota
	// tablesWrite: the tables, written (a TableWriter; a TableReader too).
	tablesWrite
	// blobsRead: the blob container of execution data through a
	// BlobStore (listed, and written create-only).
	blobsRead
	// blobsCreate: the blob container through a BlobWriter, which creates
	// it when missing (fixtures load).
	blobsCreate
	// cosmosRead: the docs, read (a DocReader: queries, read-many).
	cosmosRead
	// cosmosWrite: the docs, written with optimistic concurrency
	// (CosmosDocs).
	cosmosWrite
	// changeFeed: the change feed of the containers (a DocReader).
	changeFeed

	anyTables = tablesRead | tablesWrite
	anyBlobs  = blobsRead | blobsCreate
	anyCosmos = cosmosRead | cosmosWrite | changeFeed
)

// needs are what a command connects to and what it calls things there.
type needs struct {
	uses need
	// database is the Cosmos DB database; blobContainer the container of
	// execution data.
	database, blobContainer string
	// probeTable is the table (prefixed) the start-up check of Table
	// Storage reads.
	probeTable string
	// pacer, when not nil, paces every Cosmos DB request.
	pacer *azure.Pacer
	// refuse, when not nil, is given the storage accounts before any
	// request is sent; its error stops the command (fixtures load refuses
	// accounts other than the emulator's).
	refuse func(tables, blobs azure.StorageAccount) error
	// provisions: the command creates init's resources (init), so what
	// of them is missing is not looked up.
	provisions bool
	// out, when not nil, hears a start-up check that waits for a busy
	// endpoint (a status line).
	out *ui.Output
}

func (n needs) has(u need) bool { return n.uses&u != 0 }

// conn is a command's connection to what it needs, once every endpoint
// answered its start-up check: the accounts (target), a client for each
// need (nil for what it does not need), and, with a Cosmos DB need, the
// resources of `bifrost-migrate init` that do not exist.
type conn struct {
	target
	rowReader  *azure.TableReader
	rowWriter  *azure.TableWriter
	blobStore  *azure.BlobStore
	blobWriter *azure.BlobWriter
	docs       *azure.CosmosDocs
	docReader  *azure.DocReader
	// missing are the database, its containers and the blob container
	// that do not exist (target.missing); noBlobContainer says the blob
	// container is among them.
	missing         []azure.Resource
	noBlobContainer bool
}

// connect is how every command but init reaches its accounts: it
// resolves the accounts of f that n uses (tables, blobs, then Cosmos DB;
// no request sent), lets n.refuse see them, checks each endpoint
// (checkEndpoints: a busy one is waited for a while), builds the clients
// of n's needs and, with a Cosmos DB need, finds what of init's
// resources is missing. It returns the first
// error: a usage error for a bad setting (--database is checked with the
// flags, before any command runs),
// the endpoints that failed their check, or a client constructor's or
// the check's error.
func connect(ctx context.Context, f *Factory, n needs) (conn, error) {
	c, err := resolve(f, n)
	if err != nil {
		return c, err
	}
	if err := checkEndpoints(ctx, n.out, c.probes(n)...); err != nil {
		return c, err
	}
	if err := c.build(n); err != nil {
		return c, err
	}
	if n.has(anyCosmos) && !n.provisions {
		c.missing, c.noBlobContainer, err = c.target.missing(ctx, n.has(anyBlobs))
	}
	return c, err
}

// resolve parses the settings of the accounts n uses and builds the
// Cosmos DB client and its reader; it sends no request.
func resolve(f *Factory, n needs) (conn, error) {
	c := conn{target: target{database: n.database, blobName: n.blobContainer, azopts: f.azureOptions()}}
	c.azopts.Pacer = n.pacer
	var err error
	if n.has(anyTables) {
		if c.tables, err = f.Storage(); err != nil {
			return c, err
		}
	}
	if n.has(anyBlobs) {
		if c.blobs, err = f.BlobStorage(); err != nil {
			return c, err
		}
	}
	if n.refuse != nil {
		if err := n.refuse(c.tables, c.blobs); err != nil {
			return c, err
		}
	}
	if !n.has(anyCosmos) {
		return c, nil
	}
	if c.cosmos, c.client, err = connectCosmos(f, n.pacer); err != nil {
		return c, err
	}
	if n.has(cosmosRead | changeFeed) {
		c.docReader, err = azure.NewDocReader(c.client, n.database)
	}
	return c, err
}

// probes are the start-up checks of the services n uses.
func (c conn) probes(n needs) []probe {
	var ps []probe
	if n.has(anyTables) {
		ps = append(ps, tablesProbe(c.tables, c.azopts, n.probeTable))
	}
	if n.has(anyBlobs) {
		ps = append(ps, blobsProbe(c.blobs, c.azopts, n.blobContainer))
	}
	switch {
	case n.has(changeFeed):
		// It proves what the Cosmos DB check does, and that the account
		// serves the change feed, which the local stand-in does not.
		ps = append(ps, changeFeedProbe(c.cosmos, c.docReader))
	case n.has(anyCosmos):
		ps = append(ps, cosmosProbe(c.cosmos, c.client, n.database))
	}
	return ps
}

// build makes the client of each of n's needs.
func (c *conn) build(n needs) error {
	var err error
	if n.has(anyTables) {
		c.rowReader = azure.NewTableReader(c.tables, c.azopts)
	}
	if n.has(tablesWrite) {
		if c.rowWriter, err = azure.NewTableWriter(c.tables, c.azopts); err != nil {
			return err
		}
	}
	if n.has(blobsRead) {
		if c.blobContainer, err = azure.NewBlobContainerClient(c.blobs, n.blobContainer, c.azopts); err != nil {
			return err
		}
		c.blobStore = azure.NewBlobStore(c.blobContainer)
	}
	if n.has(blobsCreate) {
		if c.blobWriter, err = azure.NewBlobWriter(c.blobs, n.blobContainer, c.azopts); err != nil {
			return err
		}
	}
	if n.has(cosmosWrite) {
		c.docs = azure.NewCosmosDocs(c.client, n.database, &c.azopts.Retry)
	}
	return nil
}
