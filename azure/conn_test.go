package azure

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestParseStorageConnection(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     StorageAccount
	}{
		{"development storage", "UseDevelopmentStorage=true", StorageAccount{
			Name: DevStorageAccount, Key: DevStorageKey,
			TableEndpoint: "http://127.0.0.1:10002/devstoreaccount1", BlobEndpoint: "http://127.0.0.1:10000/devstoreaccount1"}},
		{"development storage with proxy", "UseDevelopmentStorage=true;DevelopmentStorageProxyUri=http://10.1.2.3", StorageAccount{
			Name: DevStorageAccount, Key: DevStorageKey,
			TableEndpoint: "http://10.1.2.3:10002/devstoreaccount1", BlobEndpoint: "http://10.1.2.3:10000/devstoreaccount1"}},
		{"account key, derived endpoints", "DefaultEndpointsProtocol=https;AccountName=prod;AccountKey=a2V5a2V5;EndpointSuffix=core.windows.net", StorageAccount{
			Name: "prod", Key: "a2V5a2V5",
			TableEndpoint: "https://prod.table.core.windows.net", BlobEndpoint: "https://prod.blob.core.windows.net"}},
		{"sovereign cloud suffix, no protocol", "AccountName=gov;AccountKey=a2V5;EndpointSuffix=core.usgovcloudapi.net", StorageAccount{
			Name: "gov", Key: "a2V5",
			TableEndpoint: "https://gov.table.core.usgovcloudapi.net", BlobEndpoint: "https://gov.blob.core.usgovcloudapi.net"}},
		{"SAS with explicit endpoints", "TableEndpoint=https://x.table.core.windows.net/;BlobEndpoint=https://x.blob.core.windows.net/;SharedAccessSignature=sv=2020-08-04&sig=abc%3D", StorageAccount{
			Name: "x", SAS: "sv=2020-08-04&sig=abc%3D",
			TableEndpoint: "https://x.table.core.windows.net", BlobEndpoint: "https://x.blob.core.windows.net"}},
		// A SAS for one service names only its endpoint: the other
		// stays empty, for the command to say which setting gives it.
		{"SAS for the tables only", "TableEndpoint=https://x.table.core.windows.net;SharedAccessSignature=sv=2020-08-04&ss=t&sig=abc", StorageAccount{
			Name: "x", SAS: "sv=2020-08-04&ss=t&sig=abc", TableEndpoint: "https://x.table.core.windows.net"}},
		{"SAS for the blobs only, Azurite", "BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;SharedAccessSignature=sv=1&sig=abc", StorageAccount{
			Name: "devstoreaccount1", SAS: "sv=1&sig=abc", BlobEndpoint: "http://127.0.0.1:10000/devstoreaccount1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseStorageConnection(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

const secretKey = "U0VDUkVUS0VZMTIzNDU2Nzg5MA=="

func TestParseConnectionErrorsNeverContainTheString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "invalid connection string: empty"},
		{"AccountName=prod;AccountKey=" + secretKey + ";TableEndpoint=ftp://x", "invalid connection string: TableEndpoint is not an http(s) URL"},
		{"AccountName=prod;SECRETKEY123", "invalid connection string: segment 2 is not Key=Value"},
		{"AccountName=prod;SharedKey=" + secretKey, "invalid connection string: storage connection string has neither AccountKey nor SharedAccessSignature"},
		{"AccountKey=" + secretKey, "invalid connection string: storage connection string has AccountKey but no AccountName"},
		{"SharedAccessSignature=sv=1&sig=" + secretKey, "invalid connection string: storage connection string has no TableEndpoint, BlobEndpoint or AccountName"},
		{"SharedAccessSignature=sv=1&sig=" + secretKey + ";TableEndpoint=x.table.core.windows.net", "invalid connection string: TableEndpoint is not an http(s) URL"},
	} {
		_, err := ParseStorageConnection(tc.in)
		if err == nil || err.Error() != tc.want || !errors.Is(err, ErrBadConnection) {
			t.Errorf("ParseStorageConnection(...) = %v, want %s", err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), secretKey) {
			t.Errorf("error leaks the key: %v", err)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"AccountKey=" + secretKey, "invalid connection string: Cosmos DB connection string has no AccountEndpoint"},
		{"AccountEndpoint=https://x.documents.azure.com:443/", "invalid connection string: Cosmos DB connection string has no AccountKey (use --cosmos-endpoint for Entra ID)"},
		{"AccountEndpoint=x.documents.azure.com;AccountKey=" + secretKey, "invalid connection string: Cosmos DB endpoint is not an http(s) URL"},
	} {
		_, err := ParseCosmosConnection(tc.in)
		if err == nil || err.Error() != tc.want {
			t.Errorf("ParseCosmosConnection(...) = %v, want %s", err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), secretKey) {
			t.Errorf("error leaks the key: %v", err)
		}
	}
	a, err := ParseCosmosConnection("AccountEndpoint=https://x.documents.azure.com:443/;AccountKey=" + secretKey + ";")
	if err != nil || a.Key != secretKey || a.Endpoint != "https://x.documents.azure.com:443/" {
		t.Fatalf("ParseCosmosConnection = %+v, %v", a, err)
	}
	if strings.Contains(a.String(), secretKey) {
		t.Errorf("String() leaks the key: %s", a)
	}
	s, _ := ParseStorageConnection("AccountName=prod;AccountKey=" + secretKey)
	if strings.Contains(s.String(), secretKey) {
		t.Errorf("String() leaks the key: %s", s)
	}
}

func TestIsLoopback(t *testing.T) {
	for ep, want := range map[string]bool{
		"https://localhost:8081/":             true,
		"http://127.0.0.1:10002/acct":         true,
		"http://127.8.9.1:1":                  true,
		"https://[::1]:8081/":                 true,
		"https://acct.documents.azure.com/":   false,
		"https://localhost.evil.example.com/": false,
		"https://10.0.0.1:8081/":              false,
		"::not a url":                         false,
	} {
		if got := IsLoopback(ep); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", ep, got, want)
		}
	}
}

func TestTLSIsSkippedOnlyForLoopbackHosts(t *testing.T) {
	// A self-signed TLS server on loopback stands for the emulator; a
	// request to it through the client for a loopback endpoint succeeds,
	// and the same client keeps verifying every other host.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	c := HTTPClient(srv.URL, nil).(*http.Client)
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatalf("loopback emulator: %v", err)
	}
	resp.Body.Close()
	lt, ok := c.Transport.(loopbackTLS)
	if !ok {
		t.Fatalf("transport for a loopback endpoint is %T", c.Transport)
	}
	if lt.secure.(*http.Transport).TLSClientConfig != nil && lt.secure.(*http.Transport).TLSClientConfig.InsecureSkipVerify {
		t.Error("the transport for other hosts skips verification")
	}
	// A non-loopback endpoint never gets the insecure transport: the same
	// self-signed server reached through it fails verification.
	nc := HTTPClient("https://acct.documents.azure.com/", nil).(*http.Client)
	if _, ok := nc.Transport.(*http.Transport); !ok {
		t.Fatalf("transport for a remote endpoint is %T", nc.Transport)
	}
	if _, err := nc.Get(srv.URL); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("remote-endpoint client accepted a self-signed certificate: %v", err)
	}
}
