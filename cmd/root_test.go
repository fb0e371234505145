package cmd

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/bifrost/bifrost-migrate/internal/testenv"
)

// newTestFactory returns a Factory with buffers, a fixed clock and the
// given environment (nothing from the process's).
func newTestFactory(env map[string]string) (*Factory, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &Factory{
		In:            strings.NewReader(""),
		Out:           &out,
		ErrOut:        &errOut,
		ErrIsTerminal: func() bool { return false },
		Now:           func() time.Time { return time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC) },
		Getenv:        func(k string) string { return env[k] },
	}, &out, &errOut
}

func TestHelpListsTheFiveCommands(t *testing.T) {
	f, out, _ := newTestFactory(nil)
	if code := Execute(context.Background(), f, []string{"--help"}); code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, c := range []string{"init", "run", "verify", "replay", "fixtures"} {
		if !strings.Contains(out.String(), "\n  "+c+" ") {
			t.Errorf("--help does not list %s:\n%s", c, out)
		}
	}
}

// helpExitCodes returns the codes of the "Exit status:" table in help,
// in order, and the table's lines.
func helpExitCodes(t *testing.T, help string) ([]int, string) {
	t.Helper()
	_, table, found := strings.Cut(help, "\nExit status:\n")
	if !found {
		t.Fatalf("no exit-status table in:\n%s", help)
	}
	table, _, _ = strings.Cut(table, "\n\n")
	var codes []int
	for _, line := range strings.Split(table, "\n") {
		var code int
		if _, err := fmt.Sscanf(line, "  %d ", &code); err != nil {
			t.Fatalf("exit-status line %q: %v", line, err)
		}
		codes = append(codes, code)
	}
	return codes, table
}

// Each command's --help lists exactly the exit codes it can return.
func TestHelpListsEachCommandsExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []int
	}{
		{nil, []int{0, 1, 2, 3, 4, 130}},
		{[]string{"init"}, []int{0, 1, 2, 130}},
		{[]string{"run"}, []int{0, 1, 2, 3, 130}},
		{[]string{"verify"}, []int{0, 1, 2, 3, 130}},
		{[]string{"replay"}, []int{0, 1, 2, 3, 4, 130}},
		{[]string{"fixtures"}, []int{0, 2}},
		{[]string{"fixtures", "load"}, []int{0, 1, 2, 130}},
	} {
		f, out, errOut := newTestFactory(nil)
		if code := Execute(context.Background(), f, append(tc.args, "--help")); code != 0 {
			t.Fatalf("%v --help: exit %d: %s", tc.args, code, errOut)
		}
		if got, table := helpExitCodes(t, out.String()); !slices.Equal(got, tc.want) {
			t.Errorf("%v --help lists exit codes %v, want %v:\n%s", tc.args, got, tc.want, table)
		}
	}
	// Every command declares its codes: none falls back to the root's
	// table.
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if _, ok := exitStatuses(c.CommandPath()); !ok && c.Name() != "help" {
			t.Errorf("%q declares no exit codes in exitStatuses", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	f, _, _ := newTestFactory(nil)
	walk(NewRootCmd(f))
}

func TestExitStatusHelp(t *testing.T) {
	got := exitStatusHelp([]exitStatus{{0, "success"}, {130, "interrupted"}})
	if want := "\nExit status:\n  0    success\n  130  interrupted"; got != want {
		t.Errorf("exitStatusHelp = %q, want %q", got, want)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, `bifrost-migrate: unknown command "bogus" for "bifrost-migrate"`},
		{[]string{"run", "--no-such-flag"}, "bifrost-migrate: unknown flag --no-such-flag"},
		{[]string{"verify", "extra"}, `bifrost-migrate: unknown command "extra" for "bifrost-migrate verify"`},
		{[]string{"fixtures", "bogus"}, `bifrost-migrate: unknown command "bogus" for "bifrost-migrate fixtures"`},
		{[]string{"--output", "yaml", "run"}, `bifrost-migrate: --output "yaml": want text or json`},
	} {
		f, _, errOut := newTestFactory(nil)
		if code := Execute(context.Background(), f, tc.args); code != ExitUsage {
			t.Errorf("%v: exit %d, want 2 (%s)", tc.args, code, errOut)
		}
		if got := strings.SplitN(errOut.String(), "\n", 2)[0]; got != tc.want {
			t.Errorf("%v: stderr %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestExitCodeMapping(t *testing.T) {
	for _, tc := range []struct {
		err         error
		interrupted bool
		want        int
	}{
		{nil, false, 0},
		{context.Canceled, true, 130},
		{PartialError(context.Canceled), true, 3},
		{ConflictError(nil), false, 4},
		{UsageError(nil), false, 2},
		{InputError(errBoom), false, 2},
		{errBoom, false, 1},
	} {
		if got := exitCode(tc.err, tc.interrupted); got != tc.want {
			t.Errorf("exitCode(%v, %v) = %d, want %d", tc.err, tc.interrupted, got, tc.want)
		}
	}
}

type boom struct{}

func (boom) Error() string { return "boom" }

var errBoom error = boom{}

const leakKey = "TEVBS0tFWS1kby1ub3QtcHJpbnQtbWUtMTIzNDU2Nzg5MA=="

// TestSecretsNeverReachOutput runs commands with connection strings that
// are malformed or point nowhere and checks that neither the connection
// string nor the key appears in anything printed.
func TestSecretsNeverReachOutput(t *testing.T) {
	storageBad := "AccountName=prod;AccountKey=" + leakKey + ";TableEndpoint=ftp://nowhere"
	storageDown := "DefaultEndpointsProtocol=http;AccountName=prod;AccountKey=" + leakKey + ";TableEndpoint=http://127.0.0.1:1/prod;BlobEndpoint=http://127.0.0.1:1/prod"
	cosmosBad := "AccountEndpoint=not-a-url;AccountKey=" + leakKey
	cosmosDown := "AccountEndpoint=http://127.0.0.1:1/;AccountKey=" + leakKey
	for _, tc := range []struct {
		name     string
		args     []string
		env      map[string]string
		wantCode int
		wantErr  string
	}{
		{"bad tables flag", []string{"fixtures", "load", "--tables-connection", storageBad}, nil, ExitUsage,
			"bifrost-migrate: --tables-connection: invalid connection string: TableEndpoint is not an http(s) URL"},
		{"bad tables env", []string{"fixtures", "load"}, map[string]string{"BIFROST_TABLES_CONNECTION": storageBad}, ExitUsage,
			"bifrost-migrate: BIFROST_TABLES_CONNECTION: invalid connection string: TableEndpoint is not an http(s) URL"},
		{"tables down", []string{"fixtures", "load", "--tables-connection", storageDown, "--account", "prod"}, nil, ExitFatal, ""},
		{"bad cosmos", []string{"init", "--cosmos-connection", cosmosBad}, nil, ExitUsage,
			"bifrost-migrate: --cosmos-connection: invalid connection string: Cosmos DB endpoint is not an http(s) URL"},
		{"cosmos down", []string{"init", "--verbose"}, map[string]string{"CosmosDBConnection": cosmosDown, "BIFROST_TABLES_CONNECTION": storageDown}, ExitFatal, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, out, errOut := newTestFactory(tc.env)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			code := Execute(ctx, f, tc.args)
			all := out.String() + errOut.String()
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d; output:\n%s", code, tc.wantCode, all)
			}
			if tc.wantErr != "" && !strings.Contains(errOut.String(), tc.wantErr+"\n") {
				t.Errorf("stderr:\n%s\nwant line %q", errOut, tc.wantErr)
			}
			if errOut.Len() == 0 {
				t.Errorf("no error printed")
			}
			for _, secret := range []string{leakKey, "AccountKey=", storageBad, storageDown, cosmosDown} {
				if strings.Contains(all, secret) {
					t.Errorf("output contains a secret (%.12s…):\n%s", secret, all)
				}
			}
		})
	}
}

func TestRedactScrubsKeysOfEverySetting(t *testing.T) {
	f, _, _ := newTestFactory(map[string]string{
		"CosmosDBConnection":  "AccountEndpoint=https://a/;AccountKey=" + leakKey,
		"AzureWebJobsStorage": "AccountName=a;SharedAccessSignature=sv=1&sig=SIGNATURE123456",
	})
	got := f.Redact("x " + leakKey + " y sv=1&sig=SIGNATURE123456 z")
	if got != "x *** y *** z" {
		t.Errorf("Redact = %q", got)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestVerboseAgainstTheEmulator(t *testing.T) {
	env := map[string]string{
		"CosmosDBConnection":        testenv.CosmosConnection(t),
		"BIFROST_TABLES_CONNECTION": testenv.StorageConnection(t),
	}
	db := testenv.Name("verbose")
	f, _, errOut := newTestFactory(env)
	if code := Execute(context.Background(), f, []string{"init", "--dry-run", "--verbose", "--database", db}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	cosmos := testenv.Cosmos(t)
	want := "http: GET " + strings.TrimSuffix(cosmos.Endpoint, "/") + "/dbs/" + db + " → 404 Not Found"
	if !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, errOut)
	}
	if strings.Contains(errOut.String(), cosmos.Key) || strings.Contains(errOut.String(), "AccountKey") {
		t.Errorf("stderr contains the key:\n%s", errOut)
	}
}
