package azure_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/store"
)

// fakeCredential is a token credential stand-in: it hands out a fixed
// token and records the scopes asked for.
type fakeCredential struct {
	mu     sync.Mutex
	scopes []string
}

func (c *fakeCredential) GetToken(_ context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scopes = append(c.scopes, o.Scopes...)
	return azcore.AccessToken{Token: "stand-in-token", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// authRecorder answers every request like an empty Storage service and
// records its Authorization header.
type authRecorder struct {
	mu    sync.Mutex
	auths []string
}

func (r *authRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.auths = append(r.auths, req.Method+" "+req.URL.Host+req.URL.Path+" "+req.Header.Get("Authorization"))
	r.mu.Unlock()
	body := `{"value":[]}`
	ct := "application/json"
	if strings.Contains(req.URL.Host, ".blob.") {
		body = `<?xml version="1.0" encoding="utf-8"?><EnumerationResults><Blobs></Blobs><NextMarker/></EnumerationResults>`
		ct = "application/xml"
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// An account given by its endpoints alone (no key, no SAS) is reached with
// Microsoft Entra ID: every request carries the credential's bearer token
// for Storage, and none a shared-key signature.
func TestStorageWithEntraID(t *testing.T) {
	acct, err := azure.StorageEndpoints("https://prodacct.table.core.windows.net", "")
	if err != nil {
		t.Fatal(err)
	}
	if acct.Name != "prodacct" || acct.BlobEndpoint != "https://prodacct.blob.core.windows.net" || acct.Auth() != "Entra ID" {
		t.Fatalf("account %+v (auth %s)", acct, acct.Auth())
	}
	cred, rec := &fakeCredential{}, &authRecorder{}
	o := azure.Options{Transport: rec, Credential: cred}
	ctx := context.Background()
	if _, err := azure.NewTableReader(acct, o).ReadPage(ctx, "Entities", store.Query{}, store.Cursor{}); err != nil {
		t.Fatalf("table page: %v", err)
	}
	c, err := azure.NewBlobContainerClient(acct, "execution-data", o)
	if err != nil {
		t.Fatal(err)
	}
	if err := azure.NewBlobStore(c).List(ctx, func(string, int64) error { return nil }); err != nil {
		t.Fatalf("blob listing: %v", err)
	}
	svc, err := azure.NewTablesClient(acct, o)
	if err != nil {
		t.Fatal(err)
	}
	// The stand-in's answer is no entity; only the request's header matters.
	_, _ = svc.NewClient("Config").GetEntity(ctx, "GLOBAL", "x", nil)
	if len(rec.auths) < 3 {
		t.Fatalf("%d requests recorded: %v", len(rec.auths), rec.auths)
	}
	for _, a := range rec.auths {
		if !strings.HasSuffix(a, " Bearer stand-in-token") || strings.Contains(a, "SharedKey") {
			t.Errorf("request %q: want the bearer token and no shared key", a)
		}
	}
	for _, s := range cred.scopes {
		if s != "https://storage.azure.com/.default" {
			t.Errorf("token asked for scope %q", s)
		}
	}
}

func TestStorageEndpoints(t *testing.T) {
	for _, c := range []struct {
		table, blob, name, wantBlob, err string
	}{
		{"https://a.table.core.windows.net/", "", "a", "https://a.blob.core.windows.net", ""},
		{"https://a.table.core.chinacloudapi.cn", "https://b.blob.core.chinacloudapi.cn", "a", "https://b.blob.core.chinacloudapi.cn", ""},
		{"http://127.0.0.1:10002/devstoreaccount1", "", "devstoreaccount1", "", ""},
		{"", "https://b.blob.core.windows.net", "b", "https://b.blob.core.windows.net", ""},
		{"https://a.table.core.windows.net/?sv=1&sig=x", "", "", "", "invalid endpoint: not an http(s) URL without a query"},
		{"ftp://a", "", "", "", "invalid endpoint: not an http(s) URL without a query"},
		{"", "https://b.blob.core.windows.net/?sv=1", "", "", "invalid endpoint: not an http(s) URL without a query"},
		{"", "", "", "", "invalid endpoint: no storage endpoint"},
	} {
		a, err := azure.StorageEndpoints(c.table, c.blob)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("StorageEndpoints(%q, %q): err %v, want %q", c.table, c.blob, err, c.err)
			}
			continue
		}
		if err != nil || a.Name != c.name || a.BlobEndpoint != c.wantBlob {
			t.Errorf("StorageEndpoints(%q, %q) = %+v, %v; want name %q, blobs %q", c.table, c.blob, a, err, c.name, c.wantBlob)
		}
	}
}
