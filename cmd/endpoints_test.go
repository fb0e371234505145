package cmd

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
)

// closedPort returns 127.0.0.1:PORT where nothing listens (a port that was
// free a moment ago).
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// storageAt is a connection string of the emulator's account with its
// table and blob endpoints at the given host:ports.
func storageAt(tables, blobs string) string {
	return "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + azure.DevStorageKey +
		";TableEndpoint=http://" + tables + "/devstoreaccount1;BlobEndpoint=http://" + blobs + "/devstoreaccount1;"
}

// Every command checks each endpoint it needs before any work and, when
// one cannot be reached, exits 1 within 30 s naming it (host:port) and the
// cause. The commands' retry budget (10 minutes by default) must not apply
// to a service that is not there at all.
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
