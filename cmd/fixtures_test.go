package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/recorder"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

func TestFixturesLoadFlags(t *testing.T) {
	f, _, _ := newTestFactory(nil)
	var got *FixturesLoadOptions
	c := NewCmdFixturesLoad(f, func(_ context.Context, o *FixturesLoadOptions) error { got = o; return nil })
	c.SetArgs([]string{"--generate", "200000", "--seed", "9", "--base-time", "2026-11-20T06:00:00+02:00", "--tables", "Entities, Relationships", "--concurrency", "16"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Generate != 200000 || got.Seed != 9 || got.Concurrency != 16 ||
		!got.BaseTime.Equal(time.Date(2026, 11, 20, 4, 0, 0, 0, time.UTC)) ||
		!reflect.DeepEqual(got.Tables, []string{"Entities", "Relationships"}) {
		t.Errorf("options = %+v", got)
	}
}

func TestFixturesLoadUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--generate", "-1"}, "bifrost-migrate: --generate \"-1\": want a whole number, 0 or more\n"},
		{[]string{"--seed", "3"}, "bifrost-migrate: --seed and --base-time need --generate\n"},
		{[]string{"--generate", "5", "--base-time", "yesterday"}, "bifrost-migrate: --base-time \"yesterday\": want an RFC 3339 time such as 2026-11-21T00:00:00Z\n"},
		{[]string{"--tables", "Config,Users"}, "bifrost-migrate: --tables \"Users\": want Config, Entities or Relationships, comma-separated\n"},
	} {
		f, out, errOut := newTestFactory(nil)
		if code := Execute(context.Background(), f, append([]string{"fixtures", "load"}, tc.args...)); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d", tc.args, code, ExitUsage)
		}
		if first, _, _ := strings.Cut(errOut.String(), "Run '"); first != tc.want {
			t.Errorf("%v: stderr %q, want %q", tc.args, errOut.String(), tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("%v: stdout %q, want nothing", tc.args, out.String())
		}
	}
}

// testWriters returns writers for tables with a fresh prefix and a fresh
// blob container, deleted when the test ends.
func testWriters(t *testing.T) (func(context.Context) (fixtures.TableWriter, fixtures.BlobWriter, string, error), string) {
	t.Helper()
	acct := testenv.Storage(t)
	tw, err := azure.NewTableWriter(acct, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bw, err := azure.NewBlobWriter(acct, testenv.Name("fx"), azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	prefix := testenv.Name("t")
	t.Cleanup(func() {
		for _, table := range fixtures.Tables() {
			_ = tw.DeleteTable(context.Background(), prefix+table)
		}
		_ = bw.Delete(context.Background())
	})
	return func(context.Context) (fixtures.TableWriter, fixtures.BlobWriter, string, error) {
		return tw, bw, "test storage", nil
	}, prefix
}

func TestFixturesLoadGenerate2000(t *testing.T) {
	writers, prefix := testWriters(t)
	var out, errOut bytes.Buffer
	opts := &FixturesLoadOptions{
		IO:       IO{Out: &out, ErrOut: &errOut, JSON: true, Now: func() time.Time { return time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC) }},
		Generate: 2000, Seed: 5, TablePrefix: prefix, Writers: writers,
	}
	if err := fixturesLoadRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	lines := parseJSONLines(t, out.String())
	last := lines[len(lines)-1]
	var sum fixturesSummary
	if err := json.Unmarshal([]byte(last.Raw), &sum); err != nil {
		t.Fatalf("stdout %q: %v", out.String(), err)
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr %q, want nothing (--output json)", errOut.String())
	}
	if last.Type != "summary" || sum.Source != "generated" || sum.BaseTime != "2026-11-21T00:00:00Z" || sum.Seed == nil || *sum.Seed != 5 ||
		!reflect.DeepEqual(sum.Rows, map[string]int{"Config": 0, "Entities": 2000, "Relationships": 8000}) {
		t.Errorf("summary = %s", out.String())
	}
	reader := azure.NewTableReader(testenv.Storage(t), azure.Options{})
	for table, want := range map[string]int64{"Config": 0, "Entities": 2000, "Relationships": 8000} {
		n, err := reader.Count(context.Background(), prefix+table, store.Query{})
		if err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("%s holds %d rows, want %d", table, n, want)
		}
	}
	kinds := map[string]int{}
	err := store.Scan(context.Background(), reader, prefix, "Relationships", store.Query{Select: []string{"PartitionKey", "RowKey"}}, store.Cursor{},
		func(p store.Page) error {
			for _, r := range p.Rows {
				kinds[transform.Kind(r.RowKey)]++
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range fixtures.IndexKinds() {
		if kinds[k] != 2000 {
			t.Errorf("%d %s rows, want 2000", kinds[k], k)
		}
	}
}

func TestFixturesLoadCommandEndToEnd(t *testing.T) {
	conn := testenv.StorageConnection(t)
	prefix := testenv.Name("t")
	acct := testenv.Storage(t)
	tw, err := azure.NewTableWriter(acct, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, table := range fixtures.Tables() {
			_ = tw.DeleteTable(context.Background(), prefix+table)
		}
	})
	f, out, errOut := newTestFactory(map[string]string{"BIFROST_TABLES_CONNECTION": conn})
	code := Execute(context.Background(), f, []string{"fixtures", "load", "--table-prefix", prefix})
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "TABLE                         ROWS\n" +
		fmt.Sprintf("%-24s %9d\n%-24s %9d\n%-24s %9d\n", prefix+"Config", 34, prefix+"Entities", 33, prefix+"Relationships", 73) +
		"blobs in execution-data          9\n" +
		"140 rows and 9 blobs (11324 bytes) in 0s (0 rows/s)\n"
	if out.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
	if strings.Contains(errOut.String(), acct.Key) || strings.Contains(errOut.String(), conn) {
		t.Errorf("stderr shows the account key: %s", errOut)
	}
}

// `fixtures load --generate` creates all three tables, Config empty, so
// that `run` works right after it (before, Config was missing and run
// failed with the service's 404 TableNotFound).
func TestFixturesLoadGenerateCreatesEveryTableForRun(t *testing.T) {
	e := newRunEnv(t)
	f, out, errOut := newTestFactory(e.env)
	if code := Execute(context.Background(), f, []string{"--quiet", "fixtures", "load", "--generate", "20", "--table-prefix", e.prefix}); code != ExitOK {
		t.Fatalf("fixtures load: exit %d: %s", code, errOut)
	}
	want := "TABLE                         ROWS\n" +
		fmt.Sprintf("%-24s %9d\n%-24s %9d\n%-24s %9d\n", e.prefix+"Config", 0, e.prefix+"Entities", 20, e.prefix+"Relationships", 80)
	if !strings.HasPrefix(out.String(), want) {
		t.Errorf("stdout:\n%s\nwant it to start with:\n%s", out, want)
	}
	reader := azure.NewTableReader(testenv.Storage(t), azure.Options{})
	for _, table := range fixtures.Tables() {
		if ok, err := reader.Exists(context.Background(), e.prefix+table); err != nil || !ok {
			t.Errorf("table %s exists = %v (err %v), want created", e.prefix+table, ok, err)
		}
	}
	code, stdout, stderr := e.cli("--quiet", "--output", "json", "run", "--dry-run")
	if code != ExitOK {
		t.Fatalf("run --dry-run after fixtures load --generate: exit %d\n%s%s", code, stdout, stderr)
	}
	rows := map[string]int64{}
	for _, ts := range summaryOf(t, stdout).Tables {
		if !ts.Done {
			t.Errorf("run --dry-run: table %s not done", ts.Table)
		}
		rows[ts.Table] = ts.Rows
	}
	if want := map[string]int64{"Config": 0, "Entities": 20, "Relationships": 80}; !reflect.DeepEqual(rows, want) {
		t.Errorf("run --dry-run read %v, want %v", rows, want)
	}
}

// TestFixturesLoadRefusesOtherAccounts checks that fixtures load writes
// only into the emulator's devstoreaccount1 unless --account repeats the
// account's name: a refusal exits 2 with the exact message and sends no
// request at all; an allowed account is written to (here a transport
// that answers every request 403 records that requests were sent).
func TestFixturesLoadRefusesOtherAccounts(t *testing.T) {
	const key = "TEVBS0tFWS1kby1ub3QtcHJpbnQtbWUtMTIzNDU2Nzg5MA=="
	prod := "DefaultEndpointsProtocol=https;AccountName=prodacct;AccountKey=" + key + ";EndpointSuffix=core.windows.net"
	prodLoopback := "DefaultEndpointsProtocol=http;AccountName=prodacct;AccountKey=" + key + ";TableEndpoint=http://127.0.0.1:1/prodacct;BlobEndpoint=http://127.0.0.1:1/prodacct"
	blobAcct := "AccountName=prodblob;AccountKey=" + key
	sas := "SharedAccessSignature=sv=2024&sig=SIGNATURE123456;TableEndpoint=https://sasacct.table.core.windows.net;BlobEndpoint=https://sasacct.blob.core.windows.net"
	disguised := "AccountName=devstoreaccount1;SharedAccessSignature=sv=2024&sig=SIGNATURE123456;TableEndpoint=https://prodacct.table.core.windows.net;BlobEndpoint=https://prodacct.blob.core.windows.net"
	const refused = "bifrost-migrate: fixtures load would write sample data into storage account \"prodacct\"; it only writes into the emulator's devstoreaccount1 unless you repeat the account's name with --account prodacct\n"
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		// want is the exact error, or "" when the load must go ahead.
		want string
	}{
		{"tables connection", map[string]string{"BIFROST_TABLES_CONNECTION": prod}, nil, refused},
		{"tables on a loopback port", map[string]string{"BIFROST_TABLES_CONNECTION": prodLoopback}, nil, refused},
		{"--tables-connection", nil, []string{"--tables-connection", prod}, refused},
		{"AzureWebJobsStorage", map[string]string{"AzureWebJobsStorage": prod}, nil, refused},
		{"generate", map[string]string{"AzureWebJobsStorage": prod}, []string{"--generate", "10"}, refused},
		{"blob connection only", map[string]string{"BIFROST_BLOB_CONNECTION": blobAcct}, nil,
			"bifrost-migrate: fixtures load would write sample data into storage account \"prodblob\" (blobs); it only writes into the emulator's devstoreaccount1 unless you repeat the account's name with --account prodblob\n"},
		{"tables and blobs in two accounts", map[string]string{"BIFROST_TABLES_CONNECTION": prod, "BIFROST_BLOB_CONNECTION": blobAcct}, nil,
			"bifrost-migrate: fixtures load would write sample data into storage accounts \"prodacct\" (tables) and \"prodblob\" (blobs); it only writes into the emulator's devstoreaccount1 unless you repeat each account's name with --account prodacct --account prodblob\n"},
		{"SAS without AccountName", map[string]string{"BIFROST_TABLES_CONNECTION": sas}, nil,
			"bifrost-migrate: fixtures load would write sample data into storage account \"sasacct\"; it only writes into the emulator's devstoreaccount1 unless you repeat the account's name with --account sasacct\n"},
		{"AccountName devstoreaccount1 on another account's endpoints", map[string]string{"BIFROST_TABLES_CONNECTION": disguised}, nil, refused},
		{"--account of another account", map[string]string{"BIFROST_TABLES_CONNECTION": prod}, []string{"--account", "otheracct"},
			"bifrost-migrate: --account names \"otheracct\", but fixtures load would write sample data into storage account \"prodacct\"; repeat that account's name with --account prodacct\n"},
		{"--account naming one of two", map[string]string{"BIFROST_TABLES_CONNECTION": prod, "BIFROST_BLOB_CONNECTION": blobAcct}, []string{"--account", "prodacct"},
			"bifrost-migrate: --account names \"prodacct\", but fixtures load would write sample data into storage accounts \"prodacct\" (tables) and \"prodblob\" (blobs); repeat each account's name with --account prodacct --account prodblob\n"},
		{"--account against the emulator", nil, []string{"--account", "prodacct"},
			"bifrost-migrate: --account names \"prodacct\", but fixtures load would write sample data into the emulator's devstoreaccount1, which needs no --account\n"},
		{"--account repeats the name", map[string]string{"BIFROST_TABLES_CONNECTION": prod}, []string{"--account", "prodacct"}, ""},
		{"--account through AzureWebJobsStorage", map[string]string{"AzureWebJobsStorage": prod}, []string{"--account", "prodacct"}, ""},
		{"--account for both accounts", map[string]string{"BIFROST_TABLES_CONNECTION": prod, "BIFROST_BLOB_CONNECTION": blobAcct}, []string{"--account", "prodacct", "--account", "prodblob"}, ""},
		{"the emulator", nil, nil, ""},
		{"UseDevelopmentStorage=true", map[string]string{"AzureWebJobsStorage": "UseDevelopmentStorage=true"}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, out, errOut := newTestFactory(tc.env)
			rec := recorder.New(roundTripFunc(func(r *http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: http.StatusForbidden, Status: "403 Forbidden", Header: http.Header{}, Body: http.NoBody, Request: r}, nil
			}))
			f.Transport = rec
			code := Execute(context.Background(), f, append([]string{"--quiet", "fixtures", "load"}, tc.args...))
			for _, secret := range []string{key, "SIGNATURE123456"} {
				if strings.Contains(out.String()+errOut.String(), secret) {
					t.Errorf("output shows a secret:\n%s%s", out, errOut)
				}
			}
			if tc.want == "" {
				// Allowed: the load goes ahead and fails on the 403.
				if code != ExitFatal || len(rec.Requests()) == 0 {
					t.Errorf("exit %d after %d request(s), want the load to send requests and fail with exit 1; stderr:\n%s", code, len(rec.Requests()), errOut)
				}
				return
			}
			if code != ExitUsage {
				t.Errorf("exit %d, want %d", code, ExitUsage)
			}
			if first, _, _ := strings.Cut(errOut.String(), "Run '"); first != tc.want {
				t.Errorf("stderr:\n%s\nwant:\n%s", errOut, tc.want)
			}
			if n := len(rec.Requests()); n != 0 {
				t.Errorf("%d request(s) sent before the refusal: %v", n, rec.Requests())
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q, want nothing", out)
			}
		})
	}
}
