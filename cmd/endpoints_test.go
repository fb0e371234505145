package cmd

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
)

// closedPort returns 127.0.0.1:PORT where nothing listens.
func closedPort(t *testing.T) string { return testenv.ClosedPort(t) }

// storageAt is a connection string of the emulator's account with its
// table and blob endpoints at the given host:ports.
func storageAt(tables, blobs string) string {
	return "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + azure.DevStorageKey +
		";TableEndpoint=http://" + tables + "/devstoreaccount1;BlobEndpoint=http://" + blobs + "/devstoreaccount1;"
}

// Every command checks each endpoint it needs before any work and, when
// one cannot be reached, exits 1 within 30 s naming it (host:port) and the
// cause. The commands' retry budget (10 minutes by default) must not apply
// to a service that is not there at all, nor the start-up check's own
// (FaultKind.RetryableAtFirstContact): a refused connection is not tried
// again.
func TestCommandsFailFastOnClosedPorts(t *testing.T) {
	tables, blobs, cosmos := closedPort(t), closedPort(t), closedPort(t)
	env := map[string]string{
		"BIFROST_TABLES_CONNECTION": storageAt(tables, blobs),
		"CosmosDBConnection":        "AccountEndpoint=http://" + cosmos + "/;AccountKey=" + azure.EmulatorCosmosKey + ";",
	}
	for _, c := range []struct {
		args []string
		want []string // endpoints named
	}{
		{[]string{"init"}, []string{cosmos}},
		{[]string{"run", "--state-dir", t.TempDir()}, []string{tables, blobs, cosmos}},
		{[]string{"run", "--dry-run"}, []string{tables, blobs, cosmos}},
		{[]string{"verify"}, []string{tables, blobs, cosmos}},
		{[]string{"replay", "--since", "2025-11-20T14:00:00Z", "--state-dir", t.TempDir()}, []string{tables, blobs, cosmos}},
	} {
		t.Run(c.args[0], func(t *testing.T) {
			f, out, errOut := newTestFactory(env)
			start := time.Now()
			code := Execute(context.Background(), f, c.args)
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("took %v, want < 30 s", d)
			}
			if code != ExitFatal {
				t.Errorf("exit %d, want 1", code)
			}
			for _, ep := range c.want {
				if !strings.Contains(errOut.String(), " at "+ep+": connection refused; check ") {
					t.Errorf("stderr does not name %s and its cause:\n%s", ep, errOut)
				}
			}
			if strings.Contains(errOut.String(), "trying again") {
				t.Errorf("a closed port was tried again (only a busy endpoint is):\n%s", errOut)
			}
			if strings.Contains(out.String(), "OK") {
				t.Errorf("stdout claims success:\n%s", out)
			}
		})
	}
}

// One endpoint down among working ones: only it is named (verify used to
// wait forever on a closed Blob Storage port).
func TestCommandsNameTheOneEndpointDown(t *testing.T) {
	storage := testenv.Storage(t)
	cosmos := testenv.Cosmos(t)
	hp := func(u string) string { return hostPort(u) }
	down := closedPort(t)
	cases := []struct {
		name, tables, blobs, cosmos, want, settings string
	}{
		{"tables", down, hp(storage.BlobEndpoint), cosmos.Endpoint, down, tablesSettings},
		{"blobs", hp(storage.TableEndpoint), down, cosmos.Endpoint, down, blobSettings},
		{"cosmos", hp(storage.TableEndpoint), hp(storage.BlobEndpoint), "http://" + down + "/", down, cosmosSettings},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{
				"BIFROST_TABLES_CONNECTION": storageAt(c.tables, c.blobs),
				"CosmosDBConnection":        "AccountEndpoint=" + c.cosmos + ";AccountKey=" + cosmos.Key + ";",
			}
			f, _, errOut := newTestFactory(env)
			start := time.Now()
			code := Execute(context.Background(), f, []string{"verify", "--database", testenv.Name("down")})
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("took %v, want < 30 s", d)
			}
			service := map[string]string{"tables": "Table Storage", "blobs": "Blob Storage", "cosmos": "Cosmos DB"}[c.name]
			want := "bifrost-migrate: cannot use " + service + " at " + c.want + ": connection refused; check " + c.settings + "\n"
			if code != ExitFatal || errOut.String() != want {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and exactly:\n%s", code, errOut, want)
			}
		})
	}
}

func TestHostPort(t *testing.T) {
	for in, want := range map[string]string{
		"https://acct.table.core.windows.net":     "acct.table.core.windows.net:443",
		"http://127.0.0.1:10002/devstoreaccount1": "127.0.0.1:10002",
		"http://example.test/x":                   "example.test:80",
		"https://[::1]:8081/":                     "[::1]:8081",
	} {
		if got := hostPort(in); got != want {
			t.Errorf("hostPort(%q) = %q, want %q", in, got, want)
		}
	}
}

// The start-up line names every endpoint as it will be used: here the
// blobs come from BIFROST_BLOB_CONNECTION, spelled differently from the
// tables account's own blob endpoint, and the line says so.
func TestStartUpLineNamesTheEndpointsUsed(t *testing.T) {
	storage := testenv.Storage(t)
	cosmos := testenv.Cosmos(t)
	blobs := strings.Replace(storage.BlobEndpoint, "127.0.0.1", "localhost", 1)
	db := testenv.Name("startup")
	env := map[string]string{
		"BIFROST_TABLES_CONNECTION": testenv.StorageConnection(t),
		"BIFROST_BLOB_CONNECTION":   "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + azure.DevStorageKey + ";BlobEndpoint=" + blobs + ";",
		"CosmosDBConnection":        testenv.CosmosConnection(t),
	}
	f, _, errOut := newTestFactory(env)
	Execute(context.Background(), f, []string{"run", "--dry-run", "--database", db, "--table-prefix", testenv.Name("none")})
	want := "run: tables " + storage.TableEndpoint + " (account devstoreaccount1, shared key) → Cosmos DB " + cosmos.Endpoint +
		` database "` + db + `" (account key), blobs ` + blobs + "/execution-data (account devstoreaccount1, shared key)\n"
	if first, _, _ := strings.Cut(errOut.String(), "\n"); first+"\n" != want {
		t.Errorf("start-up line:\n%s\nwant:\n%s", first, want)
	}
}

// Storage given by endpoints alone (--tables-endpoint, --blob-endpoint) is
// reached with Entra ID: the start-up checks carry the credential's bearer
// token, and a refusal names each endpoint and says the credentials were
// refused.
func TestStorageEndpointsUseEntraID(t *testing.T) {
	cosmos := testenv.Cosmos(t)
	var mu sync.Mutex
	var auths []string
	f, _, errOut := newTestFactory(map[string]string{"CosmosDBConnection": testenv.CosmosConnection(t)})
	f.Credential = tokenStandIn{}
	f.Transport = roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if strings.HasPrefix(cosmos.Endpoint, req.URL.Scheme+"://"+req.URL.Host) {
			return http.DefaultTransport.RoundTrip(req)
		}
		mu.Lock()
		auths = append(auths, req.Header.Get("Authorization"))
		mu.Unlock()
		return &http.Response{StatusCode: http.StatusForbidden, Status: "403 Forbidden", Header: http.Header{}, Body: http.NoBody, Request: req}, nil
	})
	code := Execute(context.Background(), f, []string{"verify", "--database", testenv.Name("entra"),
		"--tables-endpoint", "https://prodtables.table.core.windows.net", "--blob-endpoint", "https://prodblobs.blob.core.windows.net"})
	want := "bifrost-migrate: cannot use Table Storage at prodtables.table.core.windows.net:443: the credentials were refused (403 Forbidden); check " + tablesSettings + "\n" +
		"cannot use Blob Storage at prodblobs.blob.core.windows.net:443: the credentials were refused (403 Forbidden); check " + blobSettings + "\n"
	if code != ExitFatal || errOut.String() != want {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and:\n%s", code, errOut, want)
	}
	if len(auths) != 2 {
		t.Fatalf("%d storage requests, want 2 (one check each)", len(auths))
	}
	for _, a := range auths {
		if a != "Bearer stand-in-token" {
			t.Errorf("storage request authorized with %q, want the stand-in's bearer token", a)
		}
	}
}

// tokenStandIn is a token credential that hands out a fixed token.
type tokenStandIn struct{}

func (tokenStandIn) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: "stand-in-token", ExpiresOn: time.Now().Add(time.Hour)}, nil
}
