package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/testenv"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/store"
)

// responseError builds the error azcore returns for a service answer with
// status and error code (sent as x-ms-error-code, as the services do).
func responseError(t *testing.T, method, rawURL string, status int, code, body string) error {
	t.Helper()
	req, err := http.NewRequest(method, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	if code != "" {
		h.Set("x-ms-error-code", code)
	}
	return runtime.NewResponseError(&http.Response{
		StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req,
	})
}

// The endpoints of the table below.
const (
	tablesEP = "https://acct.table.core.windows.net"
	blobsEP  = "https://acct.blob.core.windows.net"
	cosmosEP = "https://acct.documents.azure.com:443/"
)

var (
	configTable     = azure.Resource{Service: azure.ServiceTables, Kind: azure.KindTable, Name: "Config", Endpoint: tablesEP}
	entitiesCont    = azure.Resource{Service: azure.ServiceCosmos, Kind: azure.KindContainer, Name: "bifrost/entities", Endpoint: cosmosEP}
	bifrostDB       = azure.Resource{Service: azure.ServiceCosmos, Kind: azure.KindDatabase, Name: "bifrost", Endpoint: cosmosEP}
	executionBlobs  = azure.Resource{Service: azure.ServiceBlobs, Kind: azure.KindBlobContainer, Name: "execution-data", Endpoint: blobsEP}
	tablesOnClosed  = azure.Resource{Service: azure.ServiceTables, Kind: azure.KindTable, Name: "Config", Endpoint: "http://127.0.0.1:1/devstoreaccount1"}
	executionsContr = azure.Resource{Service: azure.ServiceCosmos, Kind: azure.KindContainer, Name: "bifrost/executions", Endpoint: cosmosEP}
)

// refused is the error net/http returns when nothing listens at u.
func refused(u string) error {
	return &url.Error{Op: "Get", URL: u, Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}}
}

// TestErrSentences is the error-to-sentence mapping of cmd/errors.go:
// each service error becomes one sentence that says what to do, without
// the service's raw answer; an error it does not know passes through.
func TestErrSentences(t *testing.T) {
	// in is a failed request about r, as the adapters wrap it: with its
	// fault (azure.FaultOf).
	in := func(r azure.Resource, op string, err error) error {
		return &azure.ResourceError{Resource: r, Op: op, Err: azure.FaultOf(err)}
	}
	for _, tc := range []struct {
		name      string
		err       error
		want      string
		transient bool
	}{
		{
			name: "404 TableNotFound",
			err: fmt.Errorf("read Config: %w", in(configTable, "table Config",
				responseError(t, "GET", tablesEP+"/Config()", 404, "TableNotFound", `{"odata.error":{"code":"TableNotFound"}}`))),
			want: "source table Config does not exist in " + tablesEP + "; check the tables connection, or choose tables with --tables",
		},
		{
			name: "404 on a Cosmos DB container",
			err: in(entitiesCont, "query container entities",
				responseError(t, "POST", cosmosEP+"dbs/bifrost/colls/entities/docs", 404, "NotFound", `{"code":"NotFound","message":"Resource Not Found"}`)),
			want: "container bifrost/entities does not exist in Cosmos DB " + cosmosEP + "; run `bifrost-migrate init` first",
		},
		{
			name: "404 on a Cosmos DB database",
			err:  in(bifrostDB, "", responseError(t, "GET", cosmosEP+"dbs/bifrost", 404, "NotFound", "")),
			want: "database bifrost does not exist in Cosmos DB " + cosmosEP + "; run `bifrost-migrate init` first",
		},
		{
			name: "404 ContainerNotFound in Blob Storage",
			err: in(executionBlobs, "list blob container execution-data",
				responseError(t, "GET", blobsEP+"/execution-data?restype=container&comp=list", 404, "ContainerNotFound", "<?xml version=\"1.0\"?><Error><Code>ContainerNotFound</Code></Error>")),
			want: "blob container execution-data does not exist in " + blobsEP + "; run `bifrost-migrate init` first",
		},
		{
			name: "missing database and blob container found before starting",
			err:  &notProvisionedError{Missing: []azure.Resource{bifrostDB, executionBlobs}},
			want: "database bifrost does not exist in Cosmos DB " + cosmosEP + ", and blob container execution-data does not exist in " + blobsEP +
				"; run `bifrost-migrate init` first",
		},
		{
			name: "missing containers found before starting",
			err:  &notProvisionedError{Missing: []azure.Resource{entitiesCont, executionsContr}},
			want: "container bifrost/entities and container bifrost/executions do not exist in Cosmos DB " + cosmosEP + "; run `bifrost-migrate init` first",
		},
		{
			name: "401 from Cosmos DB",
			err:  in(entitiesCont, "", responseError(t, "POST", cosmosEP+"dbs/bifrost/colls/entities/docs", 401, "Unauthorized", "")),
			want: "Cosmos DB " + cosmosEP + " refused access to container bifrost/entities (401 Unauthorized, Unauthorized): " +
				`give the identity a Cosmos DB data-plane role such as "Cosmos DB Built-in Data Contributor", or use the account's current key in the Cosmos DB connection`,
		},
		{
			name: "403 from Cosmos DB on a write (an Auth fault)",
			err: fmt.Errorf("Entities GLOBAL/user:a: write entities/user-a: %w", in(entitiesCont, "",
				&store.Fault{Kind: store.Auth, Status: 403, Reason: "cosmos upsert: access denied: 403 Forbidden",
					Err: responseError(t, "POST", cosmosEP+"dbs/bifrost/colls/entities/docs", 403, "Forbidden", "")})),
			want: "Cosmos DB " + cosmosEP + " refused access to container bifrost/entities (403 Forbidden, Forbidden): " +
				`give the identity a Cosmos DB data-plane role such as "Cosmos DB Built-in Data Contributor", or use the account's current key in the Cosmos DB connection`,
		},
		{
			name: "403 from Table Storage",
			err:  in(configTable, "table Config", responseError(t, "GET", tablesEP+"/Config()", 403, "AuthorizationPermissionMismatch", "")),
			want: "Table Storage " + tablesEP + " refused access to table Config (403 Forbidden, AuthorizationPermissionMismatch): " +
				`give the identity the role "Storage Table Data Reader" ("Storage Table Data Contributor" to write), or use a valid account key or SAS in the tables connection`,
		},
		{
			name: "403 from Blob Storage",
			err: in(executionBlobs, "upload blob execution-data/x/result.json",
				responseError(t, "PUT", blobsEP+"/execution-data/x/result.json", 403, "AuthorizationFailure", "")),
			want: "Blob Storage " + blobsEP + " refused access to blob container execution-data (403 Forbidden, AuthorizationFailure): " +
				`give the identity the role "Storage Blob Data Contributor", or use a valid account key or SAS in the blob connection (by default the tables connection)`,
		},
		{
			name: "429 that outlasted the retries",
			err: in(entitiesCont, "", fmt.Errorf("cosmos upsert entities/x: %w after 30 attempts in 5m0s: %w", store.ErrRetriesExhausted,
				responseError(t, "POST", cosmosEP+"dbs/bifrost/colls/entities/docs", 429, "TooManyRequests", ""))),
			want: "Cosmos DB " + cosmosEP + " kept answering 429 Too Many Requests for container bifrost/entities after every retry: " +
				"the account's request units are exhausted; cap what this command uses with --max-ru, or let it wait longer with --retry-timeout",
			transient: true,
		},
		{
			name: "503 that outlasted the retries",
			err: in(entitiesCont, "", fmt.Errorf("cosmos upsert entities/x: %w after 30 attempts in 5m0s: %w", store.ErrRetriesExhausted,
				responseError(t, "POST", cosmosEP+"dbs/bifrost/colls/entities/docs", 503, "", ""))),
			want: "Cosmos DB " + cosmosEP + " kept failing for container bifrost/entities after every retry (last: 503 Service Unavailable): " +
				"the service is unavailable or overloaded; try again later, or let the command wait longer with --retry-timeout",
			transient: true,
		},
		{
			name: "connection refused",
			err:  fmt.Errorf("read Config: %w", in(tablesOnClosed, "table Config", refused("http://127.0.0.1:1/devstoreaccount1/Config()"))),
			want: "cannot reach Table Storage at http://127.0.0.1:1/devstoreaccount1 (connect: connection refused): " +
				"check the tables connection and that this machine can reach the endpoint",
			// Unreachable is retryable (docs/engine.md, "Faults"): the
			// start-up checks send once, so a wrong endpoint fails at once
			// with this sentence; during the work a refusal is retried.
			transient: true,
		},
		{
			name: "another answer of a known resource",
			err:  in(configTable, "table Config", responseError(t, "GET", tablesEP+"/Config()", 400, "InvalidInput", "<dump>")),
			want: "Table Storage " + tablesEP + " answered 400 Bad Request, InvalidInput for table Config (run with --verbose for its whole answer)",
		},
		{
			name: "an unknown error passes through",
			err:  fmt.Errorf("state saved: %w", errors.New("disk full")),
			want: "state saved: disk full",
		},
		{
			name: "state directory in use",
			err:  &migrate.StateDirBusyError{Dir: ".bifrost-migrate", PID: 12345, Command: "run", Since: time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)},
			want: "state directory .bifrost-migrate is in use by bifrost-migrate run (PID 12345, since 2026-11-23T14:00:00Z); wait for it to finish or stop it first",
		},
		{
			name: "state directory in use by a holder that recorded nothing",
			err:  &migrate.StateDirBusyError{Dir: "/var/lib/state"},
			want: "state directory /var/lib/state is in use by another process, which has not recorded itself in /var/lib/state/lock; wait for it to finish or stop it first",
		},
		{
			name: "a typed error of the tool passes through",
			err:  &migrate.FingerprintError{Dir: ".bifrost-migrate", Saved: "a", Wanted: "b"},
			want: (&migrate.FingerprintError{Dir: ".bifrost-migrate", Saved: "a", Wanted: "b"}).Error(),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _, _ := newTestFactory(nil)
			got := errorText(f, tc.err, ExitFatal)
			if want := "bifrost-migrate: " + tc.want + "\n"; got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
			if strings.Contains(got, "RESPONSE") || strings.Contains(got, "<") {
				t.Errorf("raw service answer in %q", got)
			}
			if transient(tc.err) != tc.transient {
				t.Errorf("transient = %v, want %v", !tc.transient, tc.transient)
			}
			// --verbose adds the raw error on the line before the
			// sentence, when it says more than the sentence.
			f.Global.Verbose = true
			got = errorText(f, tc.err, ExitFatal)
			raw := tc.err.Error()
			want := "bifrost-migrate: " + tc.want + "\n"
			if raw != tc.want {
				want = "bifrost-migrate: (--verbose) " + strings.TrimRight(raw, "\n") + "\n" + want
			}
			if got != want {
				t.Errorf("--verbose: got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestErrStateDirBusyExitsOne: a refused run or replay exits 1 even when
// a signal arrived meanwhile (it never started, so there is nothing to
// resume).
func TestErrStateDirBusyExitsOne(t *testing.T) {
	err := &migrate.StateDirBusyError{Dir: "s", PID: 1, Command: "replay", Since: time.Unix(0, 0)}
	for _, interrupted := range []bool{false, true} {
		if got := exitCode(err, interrupted); got != ExitFatal {
			t.Errorf("interrupted %v: exit %d, want %d", interrupted, got, ExitFatal)
		}
	}
}

// TestErrVerboseDetailIsScrubbed: the raw detail --verbose adds carries
// no secret of the settings.
func TestErrVerboseDetailIsScrubbed(t *testing.T) {
	const key = "c2VjcmV0LWFjY291bnQta2V5LW5vdC10by1wcmludA=="
	f, _, _ := newTestFactory(map[string]string{
		"BIFROST_TABLES_CONNECTION": "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + key + ";",
	})
	f.Global.Verbose = true
	err := &azure.ResourceError{Resource: configTable, Op: "table Config",
		Err: azure.FaultOf(responseError(t, "GET", tablesEP+"/Config()", 403, "AuthenticationFailed", "key "+key+" refused"))}
	got := errorText(f, err, ExitFatal)
	if strings.Contains(got, key) || !strings.Contains(got, "(--verbose) table Config: GET") || !strings.Contains(got, "key *** refused") {
		t.Errorf("verbose output:\n%s", got)
	}
	if last := got[strings.LastIndex(strings.TrimSuffix(got, "\n"), "\n")+1:]; !strings.HasPrefix(last, "bifrost-migrate: Table Storage "+tablesEP+" refused access") {
		t.Errorf("the last line is not the sentence: %q", last)
	}
}

// TestErrUnreachableDuringTheWork: a table endpoint that refuses
// connections during the work (not at first contact) is retried until
// --retry-timeout, and the sentence says it kept failing, what the last
// attempt got, and that running again may finish: not "cannot reach",
// which is for a request sent once. No SAS reaches it.
func TestErrUnreachableDuringTheWork(t *testing.T) {
	closed := testenv.ClosedPort(t)
	acct := azure.StorageAccount{Name: "acct", SAS: "sv=1&ss=t&sig=SIGNATURE-do-not-print", TableEndpoint: "http://" + closed + "/acct"}
	r := azure.NewTableReader(acct, azure.Options{Retry: azure.RetryOptions{Timeout: 200 * time.Millisecond, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond}})
	_, err := r.ReadPage(context.Background(), "Config", store.Query{}, store.Cursor{})
	f, _, _ := newTestFactory(nil)
	want := "bifrost-migrate: Table Storage http://" + closed + "/acct kept failing for table Config after every retry (last: connect: connection refused): " +
		"the service is unavailable or overloaded; try again later, or let the command wait longer with --retry-timeout\n"
	if got := errorText(f, err, exitCode(err, false)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if !transient(err) {
		t.Error("not transient: the last line would not say that running again may finish")
	}
	f.Global.Verbose = true
	if got := errorText(f, err, ExitFatal); strings.Contains(got, "SIGNATURE") {
		t.Errorf("the SAS in %q", got)
	}
}

// TestErrInterruptedKeepsTheCommandsMessage: an interrupted command's own
// message (state saved, how to resume) is kept, even when the error that
// stopped it came from a service call.
func TestErrInterruptedKeepsTheCommandsMessage(t *testing.T) {
	f, _, _ := newTestFactory(nil)
	err := interrupted("state saved in s; run again to resume",
		&azure.ResourceError{Resource: configTable, Op: "table Config", Err: &url.Error{Op: "Get", URL: tablesEP, Err: context.Canceled}})
	// The request cut short is not named: "context canceled" and the
	// request's Go form tell an operator nothing.
	want := "bifrost-migrate: interrupted: state saved in s; run again to resume\n"
	if got := errorText(f, err, ExitInterrupted); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	// Another error during the interruption is kept.
	other := interrupted("state saved in s; run again to resume", errors.New("write failed"))
	if got, want := errorText(f, other, ExitInterrupted), "bifrost-migrate: interrupted: state saved in s; run again to resume (write failed)\n"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	// A cancellation with nothing else to say.
	if got, want := errorText(f, context.Canceled, ExitInterrupted), "bifrost-migrate: interrupted: stopped before it finished; run the same command again\n"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if transient(err) {
		t.Error("a cancelled context counted as transient")
	}
}

// TestErrInputErrorHasNoFlagsHint: bad input in a file exits 2 like a
// usage error, but without the hint about --help, which is about flags;
// a usage error keeps it, wrapped or not.
func TestErrInputErrorHasNoFlagsHint(t *testing.T) {
	f, _, _ := newTestFactory(nil)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{InputError(errors.New("layout.json: bad")), "bifrost-migrate: layout.json: bad\n"},
		{fmt.Errorf("init: %w", InputError(errors.New("layout.json: bad"))), "bifrost-migrate: init: layout.json: bad\n"},
		{UsageError(errors.New("--output must be text or json")), "bifrost-migrate: --output must be text or json\nRun 'bifrost-migrate --help' for usage.\n"},
	} {
		code := exitCode(tc.err, false)
		if got := errorText(f, tc.err, code); code != ExitUsage || got != tc.want {
			t.Errorf("%v: exit %d, %q; want exit 2, %q", tc.err, code, got, tc.want)
		}
	}
}

// TestErrNoDecoderMessages: an answer the tool cannot read becomes a
// sentence that names the service and what to check; the Go decoder's
// message (Go types, struct fields) shows only with --verbose.
func TestErrNoDecoderMessages(t *testing.T) {
	var typ *json.UnmarshalTypeError
	decodeErr := json.Unmarshal([]byte(`{"PartitionKeyRanges":[1]}`), &struct{ PartitionKeyRanges []string }{})
	if !errors.As(decodeErr, &typ) {
		t.Fatalf("not a type error: %v", decodeErr)
	}
	feed := fmt.Errorf("read the changes of container entities: %w", &azure.ResourceError{Resource: entitiesCont,
		Op: "read the feed ranges of container entities", Err: fmt.Errorf("%w: the account does not serve the change feed", azure.ErrNoChangeFeed)})
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"no change feed", feed, "Cosmos DB " + cosmosEP + " does not serve the change feed as Azure Cosmos DB does (the local stand-in has none), " +
			"and reverse and verify --since read it: point the Cosmos DB connection at Azure Cosmos DB or its emulator"},
		{"decoder", &azure.ResourceError{Resource: entitiesCont, Op: "query", Err: decodeErr},
			"Cosmos DB " + cosmosEP + " answered about container bifrost/entities in a form that is not the service's: check that the Cosmos DB connection points at the service (run with --verbose for the details)"},
		{"decoder, no resource", fmt.Errorf("read: %w", decodeErr),
			"a service answered in a form that is not the service's: check that the Cosmos DB connection points at the service (run with --verbose for the details)"},
	} {
		if got := explain(tc.err); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
		f, _, _ := newTestFactory(nil)
		if text := errorText(f, tc.err, ExitFatal); strings.Contains(text, "Go struct") || strings.Contains(text, "json:") || strings.Count(text, "\n") != 1 {
			t.Errorf("%s: stderr %q, want one line without the decoder's message", tc.name, text)
		}
	}
}
