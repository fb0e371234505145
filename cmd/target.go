package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// target is where a command works (connect fills it): the accounts, the
// Cosmos DB client, the client of the blob container of execution data,
// and their names. It holds no open connection; a copy is as good as the
// original.
type target struct {
	tables, blobs azure.StorageAccount
	cosmos        azure.CosmosAccount
	client        *azcosmos.Client
	// blobContainer is the client of the container named blobName.
	blobContainer *container.Client
	database      string
	blobName      string
	// azopts are the options of every client: f's transport and retry
	// rule, and the pacer of the Cosmos DB client.
	azopts azure.Options
}

// connectCosmos resolves the Cosmos DB account of f and builds its client,
// paced by pacer when it is not nil.
func connectCosmos(f *Factory, pacer *azure.Pacer) (azure.CosmosAccount, *azcosmos.Client, error) {
	acct, err := f.Cosmos()
	if err != nil {
		return acct, nil, err
	}
	o := f.azureOptions()
	o.Pacer = pacer
	client, err := azure.NewCosmosClient(acct, o)
	return acct, client, err
}

// where describes the targets for the start-up line: every endpoint as it
// will be used, and how each authenticates; never a secret.
func (t target) where() string {
	return describeTables(t.tables) + " → " + describeCosmos(t.cosmos, t.database) + ", " + describeBlobs(t.blobs, t.blobName)
}

// describeTables names the table endpoint of a, its account and how it
// authenticates.
func describeTables(a azure.StorageAccount) string {
	return fmt.Sprintf("tables %s (account %s, %s)", a.TableEndpoint, a.Name, a.Auth())
}

// describeBlobs names the blob container of a as it will be used.
func describeBlobs(a azure.StorageAccount, container string) string {
	return fmt.Sprintf("blobs %s/%s (account %s, %s)", a.BlobEndpoint, container, a.Name, a.Auth())
}

// describeCosmos names database of account a.
func describeCosmos(a azure.CosmosAccount, database string) string {
	return fmt.Sprintf("Cosmos DB %s database %q (%s)", a.Endpoint, database, cosmosAuth(a))
}

// cosmosAuth says how a Cosmos DB account authenticates.
func cosmosAuth(a azure.CosmosAccount) string {
	if a.Key == "" {
		return "Entra ID"
	}
	return "account key"
}

// fingerprint identifies the targets in run's state, without secrets.
func (t target) fingerprint() string {
	return fmt.Sprintf("cosmos=%s;database=%s;tables=%s;blobs=%s/%s", t.cosmos.Endpoint, t.database, t.tables.TableEndpoint, t.blobs.BlobEndpoint, t.blobName)
}

// targetFingerprint is where a command of f works, on database and the
// blob container blobName, as run's state names it (target.fingerprint),
// from the settings alone (no request): "" when they cannot be resolved,
// which connect then reports.
func (f *Factory) targetFingerprint(database, blobName string) string {
	tables, err1 := f.Storage()
	blobs, err2 := f.BlobStorage()
	cosmos, err3 := f.Cosmos()
	if err1 != nil || err2 != nil || err3 != nil {
		return ""
	}
	return target{tables: tables, blobs: blobs, cosmos: cosmos, database: database, blobName: blobName}.fingerprint()
}

// missing checks that the database, its containers entities and
// executions, and (withBlobs) the blob container exist. It returns the
// missing ones in that order (only the database when it is missing: it
// holds the containers), and whether the blob container is among them;
// an error when a check itself failed.
func (t target) missing(ctx context.Context, withBlobs bool) (missing []azure.Resource, noBlobContainer bool, err error) {
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
	if !withBlobs {
		return missing, false, nil
	}
	exists, err := azure.NewProvisionBlobs(t.blobs, t.azopts).ContainerExists(ctx, t.blobName)
	if err != nil {
		return nil, false, err
	}
	if !exists {
		missing = append(missing, azure.Resource{Service: azure.ServiceBlobs, Kind: azure.KindBlobContainer, Name: t.blobName, Endpoint: t.blobs.BlobEndpoint})
		noBlobContainer = true
	}
	return missing, noBlobContainer, nil
}

// The start-up check of an endpoint takes at most startupBudget, its
// retries' waits included, and each attempt at most probeTimeout: a
// command that cannot use a service fails well within 30 s (SPEC §1,
// §14), and a busy one is waited for a while (docs/engine.md, "Faults").
const (
	startupBudget = 20 * time.Second
	probeTimeout  = 10 * time.Second
)

// probe is the start-up check of one service: a request (the Cosmos DB
// client reads the account first) that proves the endpoint answers and
// accepts our credentials, retried by the first-contact rule
// (azure.FirstContact).
type probe struct {
	service  string // "Table Storage", "Blob Storage", "Cosmos DB"
	endpoint string // the URL the command will use
	settings string // where the endpoint comes from, for the message
	check    func(ctx context.Context) error
}

// Where each service's endpoint is configured, for the messages.
const (
	tablesSettings = "--tables-connection, BIFROST_TABLES_CONNECTION or AzureWebJobsStorage"
	blobSettings   = "--blob-connection or BIFROST_BLOB_CONNECTION (default: the tables connection)"
	cosmosSettings = "--cosmos-connection or CosmosDBConnection, or --cosmos-endpoint"
)

// tablesProbe reads table (its first row, keys only): any answer but a
// refusal will do, a missing table included.
func tablesProbe(acct azure.StorageAccount, o azure.Options, table string) probe {
	r := azure.NewTableReader(acct, o)
	return probe{"Table Storage", acct.TableEndpoint, tablesSettings, func(ctx context.Context) error {
		_, err := r.Exists(ctx, table)
		return err
	}}
}

// blobsProbe reads the properties of blob container name (missing is fine).
func blobsProbe(acct azure.StorageAccount, o azure.Options, name string) probe {
	b := azure.NewProvisionBlobs(acct, o)
	return probe{"Blob Storage", acct.BlobEndpoint, blobSettings, func(ctx context.Context) error {
		_, err := b.ContainerExists(ctx, name)
		return err
	}}
}

// cosmosProbe reads database (missing is fine).
func cosmosProbe(acct azure.CosmosAccount, client *azcosmos.Client, database string) probe {
	c := azure.NewProvisionCosmos(client)
	return probe{"Cosmos DB", acct.Endpoint, cosmosSettings, func(ctx context.Context) error {
		_, err := c.DatabaseExists(ctx, database)
		return err
	}}
}

// changeFeedProbe reads the feed ranges of the container entities
// through r (a missing database or container is fine): the account
// answers, accepts our credentials and serves the change feed.
func changeFeedProbe(acct azure.CosmosAccount, r *azure.DocReader) probe {
	return probe{"Cosmos DB", acct.Endpoint, cosmosSettings, func(ctx context.Context) error {
		return r.CheckChangeFeed(ctx, transform.ContainerEntities)
	}}
}

// firstTable is the first of the selected tables in read order (all
// three when none is selected): the one the tables check reads.
func firstTable(selected []string) string {
	if len(selected) > 0 {
		return selected[0]
	}
	return transform.TableConfig
}

// checkEndpoints runs the probes at once before a command does any
// work, each retried by the first-contact rule within startupBudget
// (saying on o, when not nil, what it waits for). It returns nil, or an
// error naming every endpoint that could not be reached, refused the
// credentials or kept failing, with the cause and what to check.
func checkEndpoints(ctx context.Context, o *ui.Output, probes ...probe) error {
	errs := make([]error, len(probes))
	deadline := time.Now().Add(startupBudget)
	var wg sync.WaitGroup
	for i, p := range probes {
		wg.Go(func() {
			pctx, cancel := context.WithDeadline(azure.AtFirstContact(ctx, p.firstContact(deadline, o)), deadline)
			defer cancel()
			err := p.check(pctx)
			if err == nil || ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			errs[i] = p.failed(err)
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var failed endpointErrors
	for _, err := range errs {
		if ee, ok := err.(*EndpointError); ok {
			failed = append(failed, ee)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return failed
}

// endpointErrors are the endpoints a start-up check found unusable: one
// line each. They are already the sentence an operator reads.
type endpointErrors []*EndpointError

func (e endpointErrors) Error() string {
	// The endpoints that got no Entra ID token share one line, at the
	// place of the first: the cause and the remedy are the same.
	var (
		lines   []string
		noToken []string
		cred    *azure.CredentialError
		at      int
	)
	for _, ee := range e {
		var ce *azure.CredentialError
		if errors.As(ee.Err, &ce) {
			if cred == nil {
				cred, at = ce, len(lines)
				lines = append(lines, "")
			}
			noToken = append(noToken, ee.Service+" at "+ee.Endpoint)
			continue
		}
		lines = append(lines, ee.Error())
	}
	if cred != nil {
		lines[at] = noTokenSentence(noToken, cred)
	}
	return strings.Join(lines, "\n")
}

func (e endpointErrors) Unwrap() []error {
	errs := make([]error, len(e))
	for i, ee := range e {
		errs[i] = ee
	}
	return errs
}

// EndpointError is a service that a command could not use at its start:
// unreachable, refusing the credentials, failing the TLS handshake, or
// failing for the whole start-up check. Its message names the endpoint
// (host:port), the cause and what to do; it never holds a secret.
type EndpointError struct {
	Service  string
	Endpoint string // host:port
	Cause    string
	// Remedy is what to do: "check" and the settings, and for some
	// causes what of them.
	Remedy string
	Err    error
}

func (e *EndpointError) Error() string {
	var ce *azure.CredentialError
	if errors.As(e.Err, &ce) {
		return noTokenSentence([]string{e.Service + " at " + e.Endpoint}, ce)
	}
	return fmt.Sprintf("cannot use %s at %s: %s; %s", e.Service, e.Endpoint, e.Cause, e.Remedy)
}

func (e *EndpointError) Unwrap() error { return e.Err }

// hostPort is the host:port of an endpoint URL, the port made explicit.
func hostPort(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return endpoint
	}
	if u.Port() != "" {
		return u.Host
	}
	port := "443"
	if u.Scheme == "http" {
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// probeCause says in a few words why a probe failed.
func probeCause(err error) string {
	var cred *azure.CredentialError
	f := azure.FaultOf(err)
	t := azure.TransportOf(err)
	switch {
	case errors.As(err, &cred):
		return "no Microsoft Entra ID token"
	case f.TLS == store.TLSUntrusted:
		return "its TLS certificate is not trusted here"
	case f.TLS == store.TLSNotSpoken:
		return "it does not speak TLS, and the endpoint says https"
	case f.TLS == store.TLSRefused:
		return "it refused the TLS handshake"
	case f.Kind == store.Auth && f.Status > 0:
		return fmt.Sprintf("the credentials were refused (%d %s)", f.Status, http.StatusText(f.Status))
	case f.Kind.RetryableAtFirstContact():
		return fmt.Sprintf("it did not succeed within the start-up check's %s (last attempt: %s)", roughDuration(startupBudget), attemptWords(f))
	case f.Status > 0:
		return fmt.Sprintf("it answered %d %s", f.Status, http.StatusText(f.Status))
	case errors.Is(err, azure.ErrNoChangeFeed):
		return "it does not serve the change feed as Azure Cosmos DB does (the local stand-in has none), and reverse and verify --since read it; use Azure Cosmos DB or its emulator"
	case azure.Unreadable(err):
		return "it answered in a form that is not the service's"
	case t.Failure == azure.NoSuchHost:
		return "no such host " + t.Host
	case t.Failure == azure.ConnRefused:
		return "connection refused"
	}
	return azure.ScrubError(err).Error()
}

// probeTables reads the first key of each table (read as prefix+table;
// none given means all three), so that a missing table, or access the
// account refuses, stops the command before it does any work. It returns
// the reader's error, which names the table (*azure.ResourceError).
func probeTables(ctx context.Context, r store.PageReader, prefix string, tables []string) error {
	if len(tables) == 0 {
		tables = transform.Tables()
	}
	for _, table := range tables {
		q := store.Query{Top: 1, Select: []string{"PartitionKey", "RowKey"}}
		if _, err := r.ReadPage(ctx, prefix+table, q, store.Cursor{}); err != nil {
			return err
		}
	}
	return nil
}
