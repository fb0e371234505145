// Package azure holds the adapters between bifrost-migrate and the Azure
// services it talks to: connection settings, the faithful Table Storage
// reader, and clients for Cosmos DB and Blob Storage. Nothing else in the
// module parses connection strings or builds SDK clients.
package azure

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Well-known local emulator settings (published by Microsoft; not secrets).
const (
	DevStorageAccount = "devstoreaccount1"
	DevStorageKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	// DevStorageConnection is what UseDevelopmentStorage=true expands to.
	DevStorageConnection = "DefaultEndpointsProtocol=http;AccountName=" + DevStorageAccount +
		";AccountKey=" + DevStorageKey +
		";BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1" +
		";TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;"
	EmulatorCosmosEndpoint = "https://localhost:8081/"
	EmulatorCosmosKey      = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="
	// EmulatorCosmosConnection is the connection string of the Cosmos DB
	// emulator at its default address.
	EmulatorCosmosConnection = "AccountEndpoint=" + EmulatorCosmosEndpoint + ";AccountKey=" + EmulatorCosmosKey + ";"
)

// ErrBadConnection is wrapped by every connection-string parse error. The
// errors say which part is wrong and never include the string itself.
var ErrBadConnection = errors.New("invalid connection string")

// ErrBadEndpoint is wrapped by StorageEndpoints' errors.
var ErrBadEndpoint = errors.New("invalid endpoint")

// StorageAccount is a parsed Azure Storage connection string.
type StorageAccount struct {
	Name string
	Key  string // base64 account key; empty with a SAS
	SAS  string // shared access signature query, without '?'; empty with a key
	// TableEndpoint and BlobEndpoint are service URLs without a trailing '/',
	// e.g. https://acct.table.core.windows.net or
	// http://127.0.0.1:10002/devstoreaccount1.
	TableEndpoint string
	BlobEndpoint  string
}

// String describes the account without any secret.
func (a StorageAccount) String() string {
	return fmt.Sprintf("storage account %q (tables %s, blobs %s)", a.Name, a.TableEndpoint, a.BlobEndpoint)
}

// Auth says how requests to the account authenticate: "shared key",
// "SAS" or "Entra ID" (neither a key nor a SAS: DefaultAzureCredential).
func (a StorageAccount) Auth() string {
	switch {
	case a.Key != "":
		return "shared key"
	case a.SAS != "":
		return "SAS"
	}
	return "Entra ID"
}

// StorageEndpoints returns a storage account reached with Microsoft Entra
// ID (no key, no SAS) at the given table and blob endpoints; either may be
// empty, not both. An empty blob endpoint is derived from an Azure table
// endpoint (https://acct.table.core.windows.net gives
// https://acct.blob.core.windows.net) and stays empty otherwise. The
// account's name is the first label of the host, or, for an
// emulator-style URL (http://127.0.0.1:10002/devstoreaccount1), its path.
// Errors wrap ErrBadEndpoint.
func StorageEndpoints(table, blob string) (StorageAccount, error) {
	a := StorageAccount{TableEndpoint: strings.TrimRight(table, "/"), BlobEndpoint: strings.TrimRight(blob, "/")}
	if a.TableEndpoint == "" && a.BlobEndpoint == "" {
		return StorageAccount{}, fmt.Errorf("%w: no storage endpoint", ErrBadEndpoint)
	}
	for _, ep := range []string{a.TableEndpoint, a.BlobEndpoint} {
		if ep == "" {
			continue
		}
		u, err := url.Parse(ep)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.RawQuery != "" {
			return StorageAccount{}, fmt.Errorf("%w: not an http(s) URL without a query", ErrBadEndpoint)
		}
		if a.Name == "" {
			a.Name = accountName(u)
		}
	}
	if a.BlobEndpoint == "" {
		if u, _ := url.Parse(a.TableEndpoint); strings.Contains(u.Host, ".table.") {
			a.BlobEndpoint = u.Scheme + "://" + strings.Replace(u.Host, ".table.", ".blob.", 1) + u.Path
		}
	}
	return a, nil
}

// accountName is the storage account an endpoint URL names.
func accountName(u *url.URL) string {
	host := u.Hostname()
	if net.ParseIP(host) != nil || strings.EqualFold(host, "localhost") {
		first, _, _ := strings.Cut(strings.Trim(u.Path, "/"), "/")
		return first
	}
	name, _, _ := strings.Cut(host, ".")
	return name
}

// ParseStorageConnection parses an Azure Storage connection string, expanding
// UseDevelopmentStorage=true to the Azurite settings. An endpoint the
// string neither gives nor can derive (no AccountName: a SAS for one
// service, TableEndpoint=…;SharedAccessSignature=…) stays empty, and the
// account's Name is then the one its endpoint names; a string that gives
// neither endpoint nor an AccountName is an error. Errors wrap
// ErrBadConnection and never contain the connection string.
func ParseStorageConnection(s string) (StorageAccount, error) {
	kv, err := parseKV(s)
	if err != nil {
		return StorageAccount{}, err
	}
	if strings.EqualFold(kv["usedevelopmentstorage"], "true") {
		dev, _ := parseKV(DevStorageConnection)
		if proxy := kv["developmentstorageproxyuri"]; proxy != "" {
			proxy = strings.TrimRight(proxy, "/")
			dev["blobendpoint"] = proxy + ":10000/" + DevStorageAccount
			dev["tableendpoint"] = proxy + ":10002/" + DevStorageAccount
		}
		kv = dev
	}
	a := StorageAccount{
		Name:          kv["accountname"],
		Key:           kv["accountkey"],
		SAS:           strings.TrimPrefix(kv["sharedaccesssignature"], "?"),
		TableEndpoint: strings.TrimRight(kv["tableendpoint"], "/"),
		BlobEndpoint:  strings.TrimRight(kv["blobendpoint"], "/"),
	}
	if a.Key == "" && a.SAS == "" {
		return StorageAccount{}, fmt.Errorf("%w: storage connection string has neither AccountKey nor SharedAccessSignature", ErrBadConnection)
	}
	if a.Name == "" && a.Key != "" {
		return StorageAccount{}, fmt.Errorf("%w: storage connection string has AccountKey but no AccountName", ErrBadConnection)
	}
	proto := kv["defaultendpointsprotocol"]
	if proto == "" {
		proto = "https"
	}
	suffix := kv["endpointsuffix"]
	if suffix == "" {
		suffix = "core.windows.net"
	}
	if a.Name != "" {
		if a.TableEndpoint == "" {
			a.TableEndpoint = fmt.Sprintf("%s://%s.table.%s", proto, a.Name, suffix)
		}
		if a.BlobEndpoint == "" {
			a.BlobEndpoint = fmt.Sprintf("%s://%s.blob.%s", proto, a.Name, suffix)
		}
	}
	if a.TableEndpoint == "" && a.BlobEndpoint == "" {
		return StorageAccount{}, fmt.Errorf("%w: storage connection string has no TableEndpoint, BlobEndpoint or AccountName", ErrBadConnection)
	}
	for _, e := range []struct{ name, ep string }{{"TableEndpoint", a.TableEndpoint}, {"BlobEndpoint", a.BlobEndpoint}} {
		if e.ep == "" {
			continue
		}
		u, err := url.Parse(e.ep)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return StorageAccount{}, fmt.Errorf("%w: %s is not an http(s) URL", ErrBadConnection, e.name)
		}
		if a.Name == "" {
			a.Name = accountName(u)
		}
	}
	return a, nil
}

// CosmosAccount is a parsed Cosmos DB connection string or endpoint.
type CosmosAccount struct {
	Endpoint string // e.g. https://acct.documents.azure.com:443/
	Key      string // empty: authenticate with Microsoft Entra ID
}

// String describes the account without any secret.
func (a CosmosAccount) String() string {
	auth := "account key"
	if a.Key == "" {
		auth = "Entra ID"
	}
	return fmt.Sprintf("Cosmos DB %s (%s)", a.Endpoint, auth)
}

// ParseCosmosConnection parses "AccountEndpoint=...;AccountKey=...;". Errors
// wrap ErrBadConnection and never contain the connection string.
func ParseCosmosConnection(s string) (CosmosAccount, error) {
	kv, err := parseKV(s)
	if err != nil {
		return CosmosAccount{}, err
	}
	a := CosmosAccount{Endpoint: kv["accountendpoint"], Key: kv["accountkey"]}
	if a.Endpoint == "" {
		return CosmosAccount{}, fmt.Errorf("%w: Cosmos DB connection string has no AccountEndpoint", ErrBadConnection)
	}
	if a.Key == "" {
		return CosmosAccount{}, fmt.Errorf("%w: Cosmos DB connection string has no AccountKey (use --cosmos-endpoint for Entra ID)", ErrBadConnection)
	}
	if err := checkEndpoint(a.Endpoint); err != nil {
		return CosmosAccount{}, err
	}
	return a, nil
}

// CosmosEndpoint returns an account that authenticates with Entra ID.
func CosmosEndpoint(endpoint string) (CosmosAccount, error) {
	if err := checkEndpoint(endpoint); err != nil {
		return CosmosAccount{}, err
	}
	return CosmosAccount{Endpoint: endpoint}, nil
}

func checkEndpoint(ep string) error {
	u, err := url.Parse(ep)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("%w: Cosmos DB endpoint is not an http(s) URL", ErrBadConnection)
	}
	return nil
}

// IsLoopback reports whether the URL's host is a loopback address or
// "localhost". Only such emulator endpoints get TLS verification skipped.
func IsLoopback(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// parseKV splits "Key=Value;Key2=Value2;" into lower-cased keys. Values may
// contain '=' (base64 keys, SAS tokens).
func parseKV(s string) (map[string]string, error) {
	kv := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%w: empty", ErrBadConnection)
	}
	for i, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%w: segment %d is not Key=Value", ErrBadConnection, i+1)
		}
		kv[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	return kv, nil
}
