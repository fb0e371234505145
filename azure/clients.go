package azure

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// HTTPClient returns the transport for an endpoint. TLS verification is
// skipped only for requests to a loopback address (SPEC §1: the local
// emulators), and only when the configured endpoint is itself on loopback;
// the decision is made per request, so the regional endpoints a Cosmos DB
// account announces are always verified, even when the account was
// reached through a loopback tunnel. base, when not nil, is used as the
// underlying transport (tests pass a recording or fault-injecting one).
func HTTPClient(endpoint string, base http.RoundTripper) policy.Transporter {
	if base != nil {
		return &http.Client{Transport: base}
	}
	if !IsLoopback(endpoint) {
		return &http.Client{Transport: newTransport(nil)}
	}
	return &http.Client{Transport: NewTransport()}
}

// NewTransport returns an HTTP transport that verifies TLS certificates for
// every host but loopback ones (the local emulators' certificates are
// self-signed). Wrapping transports (--verbose) use it underneath.
func NewTransport() http.RoundTripper {
	insecure := newTransport(&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // loopback emulator only
	return loopbackTLS{secure: newTransport(nil), insecure: insecure}
}

func newTransport(cfg *tls.Config) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// As many as the requests in flight a command may keep (its
	// --concurrency default), so a window at its bound reuses its
	// connections instead of opening new ones.
	t.MaxIdleConnsPerHost = 1024
	t.MaxIdleConns = 1024
	t.IdleConnTimeout = 90 * time.Second
	if cfg != nil {
		t.TLSClientConfig = cfg
	}
	return t
}

// loopbackTLS sends requests to loopback hosts through a transport that
// does not verify certificates (the emulators' are self-signed) and every
// other request through one that does.
type loopbackTLS struct{ secure, insecure http.RoundTripper }

func (l loopbackTLS) RoundTrip(req *http.Request) (*http.Response, error) {
	if IsLoopback(req.URL.String()) {
		return l.insecure.RoundTrip(req)
	}
	return l.secure.RoundTrip(req)
}

// Options are what every client this package builds shares: how its
// requests travel, how they are retried, and, for Cosmos DB, how they are
// paced. The zero value is the default: the transport of HTTPClient,
// RetryOptions' defaults and no pacing.
type Options struct {
	// Transport, when not nil, carries every request (tests: recording or
	// fault-injecting transports; --verbose).
	Transport http.RoundTripper
	// Retry is the retry rule of every request (SPEC §11, §14).
	Retry RetryOptions
	// Pacer, when not nil, paces every Cosmos DB request and counts its
	// request units (SPEC §14). Storage requests are not paced.
	Pacer *Pacer
	// Credential authenticates with Microsoft Entra ID the accounts that
	// have no key (and, for storage, no SAS); nil means
	// DefaultAzureCredential, created at the first request that needs it.
	Credential azcore.TokenCredential
}

// storageScope is the Entra ID scope of Table and Blob Storage.
const storageScope = "https://storage.azure.com/.default"

// credential returns o.Credential, or DefaultAzureCredential created when
// first asked for a token.
func (o Options) credential() azcore.TokenCredential {
	if o.Credential != nil {
		return o.Credential
	}
	return &defaultCredential{}
}

// defaultCredential is azidentity's DefaultAzureCredential, created at the
// first GetToken so that building a client never fails for it: a missing
// credential is reported by the first request (the start-up check). It is
// safe for concurrent use.
type defaultCredential struct {
	once sync.Once
	cred azcore.TokenCredential
	err  error
}

func (d *defaultCredential) GetToken(ctx context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	d.once.Do(func() {
		d.cred, d.err = azidentity.NewDefaultAzureCredential(nil)
		if d.err != nil {
			d.err = &CredentialError{Setup: true, Err: d.err}
		}
	})
	if d.err != nil {
		return azcore.AccessToken{}, d.err
	}
	tok, err := d.cred.GetToken(ctx, o)
	if err != nil && !errors.Is(ctx.Err(), context.Canceled) {
		// A cancelled context (SIGINT) is not a missing credential; a
		// deadline met while the chain tries is one.
		return tok, newCredentialError(err)
	}
	return tok, err
}

// newCredentialError describes err, which the default chain returned.
func newCredentialError(err error) *CredentialError {
	e := &CredentialError{Tried: DefaultCredentials(os.Getenv), Err: err}
	var failed *azidentity.AuthenticationFailedError
	if !errors.As(err, &failed) {
		return e
	}
	e.Failed = "failed"
	if r := failed.RawResponse; r != nil && r.Request != nil {
		host := r.Request.URL.Host
		if host == "169.254.169.254" {
			host = "the managed identity endpoint " + host
		}
		e.Failed = fmt.Sprintf("failed: %s answered %s", host, r.Status)
	}
	return e
}

// CredentialError is Microsoft Entra ID sign-in that gave no token: no
// credential of the chain was available (no environment variables, no
// managed identity, no Azure CLI login, …), or the one found refused.
// Err is the Azure SDK's account of each credential's answer, many lines
// long: package cmd prints one sentence and shows Err with --verbose.
type CredentialError struct {
	// Tried names the credentials of the chain, in the order it tries
	// them (DefaultCredentials).
	Tried []string
	// Failed is empty when no credential of the chain was available here
	// (every one was tried); else one was found and failed, which
	// stopped the chain: "failed", or "failed: HOST answered 403
	// Forbidden".
	Failed string
	// Setup is true when the chain could not even be built (an
	// AZURE_TOKEN_CREDENTIALS value the SDK does not know).
	Setup bool
	Err   error
}

func (e *CredentialError) Error() string {
	return "Microsoft Entra ID sign-in: " + e.Err.Error()
}

func (e *CredentialError) Unwrap() error { return e.Err }

// DefaultCredentials names, in the order it tries them, the credentials
// of the Azure SDK's default chain that AZURE_TOKEN_CREDENTIALS (read
// with getenv) selects: all six when it is not set, "dev" the three
// developer tools, "prod" the three of a deployed service, or one by its
// type name. It returns nil for a value the SDK refuses.
func DefaultCredentials(getenv func(string) string) []string {
	all := []string{"environment variables", "workload identity", "managed identity", "Azure CLI", "Azure Developer CLI", "Azure PowerShell"}
	byName := []string{"environmentcredential", "workloadidentitycredential", "managedidentitycredential",
		"azureclicredential", "azuredeveloperclicredential", "azurepowershellcredential"}
	switch v := getenv("AZURE_TOKEN_CREDENTIALS"); v {
	case "":
		return all
	case "dev":
		return all[3:]
	case "prod":
		return all[:3]
	default:
		if i := slices.Index(byName, strings.ToLower(v)); i >= 0 {
			return all[i : i+1]
		}
	}
	return nil
}

// client returns the azcore options of a client of service at endpoint:
// our transport, and our retry policy in place of azcore's.
func (o Options) client(endpoint, service string) azcore.ClientOptions {
	co := azcore.ClientOptions{
		Transport:       HTTPClient(endpoint, o.Transport),
		Retry:           policy.RetryOptions{MaxRetries: -1},
		PerCallPolicies: []policy.Policy{&retryPolicy{o: o.Retry.withDefaults(), service: service}},
	}
	return co
}

// NewTablesClient returns an aztables service client for writing rows
// (fixtures, tests). Reading goes through TableReader, which decodes
// numbers exactly.
func NewTablesClient(a StorageAccount, o Options) (*aztables.ServiceClient, error) {
	opts := &aztables.ClientOptions{ClientOptions: o.client(a.TableEndpoint, "Table Storage")}
	switch a.Auth() {
	case "SAS":
		return aztables.NewServiceClientWithNoCredential(a.TableEndpoint+"/?"+a.SAS, opts)
	case "Entra ID":
		return aztables.NewServiceClient(a.TableEndpoint+"/", o.credential(), opts)
	}
	cred, err := aztables.NewSharedKeyCredential(a.Name, a.Key)
	if err != nil {
		return nil, fmt.Errorf("%w: AccountKey is not valid base64", ErrBadConnection)
	}
	return aztables.NewServiceClientWithSharedKey(a.TableEndpoint+"/", cred, opts)
}

// NewBlobContainerClient returns a client for one blob container.
func NewBlobContainerClient(a StorageAccount, containerName string, o Options) (*container.Client, error) {
	opts := &container.ClientOptions{ClientOptions: o.client(a.BlobEndpoint, "Blob Storage")}
	u := a.BlobEndpoint + "/" + containerName
	switch a.Auth() {
	case "SAS":
		return container.NewClientWithNoCredential(u+"?"+a.SAS, opts)
	case "Entra ID":
		return container.NewClient(u, o.credential(), opts)
	}
	cred, err := container.NewSharedKeyCredential(a.Name, a.Key)
	if err != nil {
		return nil, fmt.Errorf("%w: AccountKey is not valid base64", ErrBadConnection)
	}
	return container.NewClientWithSharedKeyCredential(u, cred, opts)
}

// NewCosmosClient returns a Cosmos DB client: with the account key when the
// account has one, otherwise with Microsoft Entra ID (DefaultAzureCredential).
// Its requests are retried by o.Retry (CosmosDocs runs its own loop for
// writes) and paced by o.Pacer when set; the answers of DocReader's
// queries are read doc by doc (querystream.go).
func NewCosmosClient(a CosmosAccount, o Options) (*azcosmos.Client, error) {
	opts := &azcosmos.ClientOptions{ClientOptions: o.client(a.Endpoint, "Cosmos DB")}
	if o.Pacer != nil {
		opts.PerRetryPolicies = append(opts.PerRetryPolicies, pacerPolicy{o.Pacer})
	}
	// Last, next to the transport: it reads a query's answer as it
	// arrives (querystream.go), inside each attempt and its pacing.
	opts.PerRetryPolicies = append(opts.PerRetryPolicies, queryStreamPolicy{})
	if a.Key != "" {
		cred, err := azcosmos.NewKeyCredential(a.Key)
		if err != nil {
			return nil, fmt.Errorf("%w: Cosmos DB AccountKey is not valid base64", ErrBadConnection)
		}
		return azcosmos.NewClientWithKey(a.Endpoint, cred, opts)
	}
	return azcosmos.NewClient(a.Endpoint, o.credential(), opts)
}
