package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
)

// The sentences for Microsoft Entra ID sign-in that gave no token: one
// line, naming the services, what was tried and what to do.
func TestNoTokenSentence(t *testing.T) {
	all := azure.DefaultCredentials(func(string) string { return "" })
	const (
		chain = "environment variables, workload identity, managed identity, Azure CLI, Azure Developer CLI and Azure PowerShell"
		tail  = "; or use a connection string with a key (run with --verbose for each credential's answer)"
	)
	for _, c := range []struct {
		where []string
		cred  azure.CredentialError
		want  string
	}{
		{[]string{"Cosmos DB at a.documents.azure.com:443"}, azure.CredentialError{Tried: all},
			"no Microsoft Entra ID token for Cosmos DB at a.documents.azure.com:443: tried " + chain + ", and none is set up here; " +
				"sign in with `az login`, run where a managed identity is assigned (AZURE_CLIENT_ID names a user-assigned one), " +
				"or set AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET" + tail},
		{[]string{"Table Storage at t:443", "Cosmos DB at c:443"}, azure.CredentialError{Tried: all[3:]},
			"no Microsoft Entra ID token for Table Storage at t:443 and Cosmos DB at c:443: tried Azure CLI, Azure Developer CLI and Azure PowerShell, and none is set up here; " +
				"sign in with `az login`, run where a managed identity is assigned (AZURE_CLIENT_ID names a user-assigned one), " +
				"or set AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET" + tail},
		{[]string{"Cosmos DB at c:443"}, azure.CredentialError{Tried: all, Failed: "failed: the managed identity endpoint 169.254.169.254 answered 403 Forbidden"},
			"no Microsoft Entra ID token for Cosmos DB at c:443: of " + chain + ", tried in that order, one was found and failed: " +
				"the managed identity endpoint 169.254.169.254 answered 403 Forbidden; check its settings (a managed identity assigned to where this runs, " +
				"AZURE_CLIENT_ID naming a user-assigned one; or AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET), sign in with `az login`, " +
				"or use a connection string with a key (run with --verbose for each credential's answer)"},
		{[]string{"Cosmos DB at c:443"}, azure.CredentialError{Setup: true},
			"cannot sign in to Microsoft Entra ID for Cosmos DB at c:443: the Azure SDK refused its settings " +
				"(AZURE_TOKEN_CREDENTIALS must be dev, prod or one credential's name; run with --verbose for its message)"},
	} {
		if got := noTokenSentence(c.where, &c.cred); got != c.want {
			t.Errorf("got\n%s\nwant\n%s", got, c.want)
		}
	}
}

func TestDefaultCredentials(t *testing.T) {
	for v, want := range map[string]string{
		"":                          "environment variables, workload identity, managed identity, Azure CLI, Azure Developer CLI and Azure PowerShell",
		"dev":                       "Azure CLI, Azure Developer CLI and Azure PowerShell",
		"prod":                      "environment variables, workload identity and managed identity",
		"ManagedIdentityCredential": "managed identity",
		"azureclicredential":        "Azure CLI",
		"bogus":                     "",
	} {
		if got := joinAnd(azure.DefaultCredentials(func(string) string { return v })); got != want {
			t.Errorf("AZURE_TOKEN_CREDENTIALS=%q: %q, want %q", v, got, want)
		}
	}
}

// The endpoints that got no token share one line, at the place of the
// first; another failure keeps its own.
func TestEndpointErrorsShareTheNoTokenLine(t *testing.T) {
	cred := &azure.CredentialError{Tried: []string{"Azure CLI"}, Err: errors.New("AzureCLICredential: az not found")}
	eps := endpointErrors{
		{Service: "Table Storage", Endpoint: "t:443", Err: cred},
		{Service: "Blob Storage", Endpoint: "127.0.0.1:10000", Cause: "connection refused", Remedy: "check " + blobSettings, Err: errors.New("refused")},
		{Service: "Cosmos DB", Endpoint: "c:443", Err: cred},
	}
	want := noTokenSentence([]string{"Table Storage at t:443", "Cosmos DB at c:443"}, cred) + "\n" +
		"cannot use Blob Storage at 127.0.0.1:10000: connection refused; check " + blobSettings
	if got := eps.Error(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// With an endpoint and no credential available, a command prints exactly
// one line on stderr, naming what was tried and what to do, and exits 1
// well within 30 s; --verbose adds the Azure SDK's account before it.
// The binary runs without the Azure CLI and its kin on PATH and without
// AZURE_* settings; the managed identity is either one that refuses
// (IDENTITY_ENDPOINT, as App Service sets it, at a local server), or
// none (AZURE_TOKEN_CREDENTIALS=dev leaves it out), or this machine's own
// (none on the machines this runs on: it fails on its own).
func TestNoEntraIDCredentialIsOneLine(t *testing.T) {
	t.Parallel()
	bin := testenv.Build(t)
	// A managed identity endpoint that refuses every token, as App
	// Service's does for an identity it does not have.
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error":"denied"}`, http.StatusForbidden)
	}))
	defer refusing.Close()
	refusingHost := strings.TrimPrefix(refusing.URL, "http://")

	var base []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "AZURE_"), strings.HasPrefix(name, "IDENTITY_"), strings.HasPrefix(name, "MSI_"),
			strings.HasPrefix(name, "BIFROST_"), name == "CosmosDBConnection", name == "AzureWebJobsStorage", name == "PATH", name == "HOME":
			continue
		}
		base = append(base, kv)
	}
	base = append(base, "PATH="+t.TempDir(), "HOME="+t.TempDir())
	const (
		cosmos = "https://bifrost-none.documents.azure.com:443/"
		tables = "https://bifrostnone.table.core.windows.net"
		where  = "Table Storage at bifrostnone.table.core.windows.net:443, Blob Storage at bifrostnone.blob.core.windows.net:443 and Cosmos DB at bifrost-none.documents.azure.com:443"
		chain  = "environment variables, workload identity, managed identity, Azure CLI, Azure Developer CLI and Azure PowerShell"
	)
	verify := []string{"verify", "--cosmos-endpoint", cosmos, "--tables-endpoint", tables}
	for _, c := range []struct {
		name string
		env  []string
		args []string
		// want is the whole line; prefix, when want is empty, its start.
		want, prefix string
	}{
		{"no credential is set up", []string{"AZURE_TOKEN_CREDENTIALS=dev"}, verify,
			"bifrost-migrate: " + noTokenSentence([]string{where}, &azure.CredentialError{Tried: []string{"Azure CLI", "Azure Developer CLI", "Azure PowerShell"}}), ""},
		{"the managed identity refuses", []string{"IDENTITY_ENDPOINT=" + refusing.URL + "/msi/token", "IDENTITY_HEADER=x"}, verify,
			"bifrost-migrate: " + noTokenSentence([]string{where}, &azure.CredentialError{Tried: azure.DefaultCredentials(func(string) string { return "" }),
				Failed: "failed: " + refusingHost + " answered 403 Forbidden"}), ""},
		{"this machine", nil, []string{"init", "--cosmos-endpoint", cosmos},
			"", "bifrost-migrate: no Microsoft Entra ID token for Cosmos DB at bifrost-none.documents.azure.com:443: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, verbose := range []bool{false, true} {
				args := c.args
				if verbose {
					args = append([]string{"--verbose"}, args...)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, bin, args...)
				cmd.Env = append(append([]string{}, base...), c.env...)
				var out, errOut bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errOut
				start := time.Now()
				_ = cmd.Run()
				took := time.Since(start)
				if ctx.Err() != nil {
					t.Fatalf("%v: still running after 60 s; stderr:\n%s", args, errOut.String())
				}
				if took > 30*time.Second {
					t.Errorf("%v: took %s, want within 30 s", args, took.Round(time.Second))
				}
				if code := cmd.ProcessState.ExitCode(); code != ExitFatal {
					t.Errorf("%v: exit %d, want 1", args, code)
				}
				lines := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n")
				last := lines[len(lines)-1]
				if c.name == "this machine" && !strings.HasPrefix(last, c.prefix) && strings.Contains(last, "no such host") {
					t.Skip("this machine has a Microsoft Entra ID credential: the request went out")
				}
				switch {
				case !verbose && len(lines) != 1:
					t.Errorf("%v: %d lines on stderr, want 1:\n%s", args, len(lines), errOut.String())
				case verbose && (len(lines) < 2 || !strings.HasPrefix(lines[0], "bifrost-migrate: (--verbose) ")):
					t.Errorf("%v: want the SDK's account before the sentence:\n%s", args, errOut.String())
				}
				if c.want != "" && last != c.want || c.want == "" && (!strings.HasPrefix(last, c.prefix) || !strings.Contains(last, "`az login`")) {
					t.Errorf("%v: stderr ends\n%s\nwant\n%s%s", args, last, c.want, c.prefix)
				}
				if out.Len() != 0 {
					t.Errorf("%v: stdout %q", args, out.String())
				}
			}
		})
	}
}

// A token that fails later, on a request of the run rather than at the
// start-up check, gets the same sentence, naming the service.
func TestExplainNoToken(t *testing.T) {
	cred := &azure.CredentialError{Tried: []string{"managed identity"}, Err: errors.New("ManagedIdentityCredential: no response")}
	err := fmt.Errorf("page 3: %w", &azure.ResourceError{
		Resource: azure.Resource{Service: azure.ServiceCosmos, Kind: azure.KindContainer, Name: "bifrost/entities", Endpoint: "https://c.documents.azure.com:443/"},
		Err:      cred,
	})
	if got, want := explain(err), noTokenSentence([]string{"Cosmos DB at c.documents.azure.com:443"}, cred); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	f, _, _ := newTestFactory(nil)
	f.Global.Verbose = true
	if got, want := errorText(f, err, ExitFatal), "bifrost-migrate: (--verbose) ManagedIdentityCredential: no response\nbifrost-migrate: "+noTokenSentence([]string{"Cosmos DB at c.documents.azure.com:443"}, cred)+"\n"; got != want {
		t.Errorf("--verbose:\n%s\nwant\n%s", got, want)
	}
}
