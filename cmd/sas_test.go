package cmd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/recorder"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
)

// tablesSAS returns an account SAS of acct for the Table service only,
// valid for an hour, as a query without '?'.
func tablesSAS(t *testing.T, acct azure.StorageAccount) string {
	t.Helper()
	cred, err := aztables.NewSharedKeyCredential(acct.Name, acct.Key)
	if err != nil {
		t.Fatal(err)
	}
	perms := aztables.AccountSASPermissions{Read: true, Write: true, Delete: true, List: true, Add: true, Create: true, Update: true}
	types := aztables.AccountSASResourceTypes{Service: true, Container: true, Object: true}
	q, err := aztables.AccountSASSignatureValues{
		Protocol:      aztables.SASProtocolHTTPSandHTTP,
		StartTime:     time.Now().UTC().Add(-time.Hour),
		ExpiryTime:    time.Now().UTC().Add(time.Hour),
		Permissions:   perms.String(),
		Services:      "t",
		ResourceTypes: types.String(),
	}.Sign(cred)
	if err != nil {
		t.Fatal(err)
	}
	return q.Encode()
}

// TestTablesSASWithASeparateBlobConnection: a SAS connection string for
// the tables alone (TableEndpoint=…;SharedAccessSignature=…, no
// AccountName, so no blob endpoint to derive) works when the blob account
// comes from BIFROST_BLOB_CONNECTION: `run` reads the tables through the
// SAS and the blobs through the blob connection, and verify (with the key)
// finds every row migrated. Without a blob connection the command stops
// before any request, saying which setting to add.
func TestTablesSASWithASeparateBlobConnection(t *testing.T) {
	t.Parallel()
	e := newVerifyEnv(t)
	e.loadFixtures()
	if n := e.dropDeadLetterRows(); n != fixtureDeadLetters {
		t.Fatalf("deleted %d dead-letter rows, want %d", n, fixtureDeadLetters)
	}
	keyEnv := e.env
	sasTables := "TableEndpoint=" + e.acct.TableEndpoint + ";SharedAccessSignature=" + tablesSAS(t, e.acct)
	e.env = map[string]string{
		"CosmosDBConnection":        keyEnv["CosmosDBConnection"],
		"BIFROST_TABLES_CONNECTION": sasTables,
		"BIFROST_BLOB_CONNECTION":   keyEnv["BIFROST_TABLES_CONNECTION"],
	}
	code, _, stderr := e.cli("run", "--database", e.db, "--table-prefix", e.prefix, "--blob-container", e.blobs, "--state-dir", e.stateDir)
	cosmos := testenv.Cosmos(t).Endpoint
	where := "run: tables " + e.acct.TableEndpoint + " (account devstoreaccount1, SAS) → Cosmos DB " + cosmos + ` database "` + e.db + `" (account key), ` +
		"blobs " + e.acct.BlobEndpoint + "/" + e.blobs + " (account devstoreaccount1, shared key)\n"
	if code != ExitOK || !strings.Contains(stderr, where) {
		t.Fatalf("run with a tables-only SAS and a blob connection: exit %d, want 0 and %q in:\n%s", code, where, stderr)
	}
	e.env = keyEnv
	if code, stdout, r := e.verify(); code != ExitOK || !r.OK || r.Totals.Rows == 0 {
		t.Fatalf("verify after the run: exit %d, ok %v, %d rows:\n%s", code, r.OK, r.Totals.Rows, stdout)
	}

	// No blob connection: the tables' SAS names no blob endpoint.
	rec := recorder.New(nil)
	f, out, errOut := newTestFactory(map[string]string{"CosmosDBConnection": keyEnv["CosmosDBConnection"], "BIFROST_TABLES_CONNECTION": sasTables})
	f.Transport = rec
	code = Execute(context.Background(), f, []string{"run", "--database", e.db, "--table-prefix", e.prefix, "--blob-container", e.blobs, "--dry-run"})
	want := "bifrost-migrate: BIFROST_TABLES_CONNECTION has no BlobEndpoint, and blobs use the tables connection unless given their own: " +
		"give the blob account with --blob-connection or BIFROST_BLOB_CONNECTION (or --blob-endpoint), " +
		"or add BlobEndpoint=https://<account>.blob.core.windows.net to BIFROST_TABLES_CONNECTION\nRun 'bifrost-migrate run --help' for usage.\n"
	if code != ExitUsage || errOut.String() != want || out.Len() != 0 {
		t.Errorf("without a blob connection: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and:\n%s", code, out, errOut, want)
	}
	if r := rec.Requests(); len(r) != 0 {
		t.Errorf("requests sent: %v", r)
	}
}

// TestStorageSettingsSayWhatToAdd: the accounts a tables and a blob
// setting give, and the exact error when one lacks the endpoint its
// service needs, naming the setting and what to add.
func TestStorageSettingsSayWhatToAdd(t *testing.T) {
	const (
		sasTables = "TableEndpoint=https://acct.table.core.windows.net;SharedAccessSignature=sv=1&ss=t&sig=SIGNATURE123456"
		sasBlobs  = "BlobEndpoint=https://acct.blob.core.windows.net;SharedAccessSignature=sv=1&ss=b&sig=SIGNATURE123456"
		keyBlobs  = "AccountName=blobacct;AccountKey=a2V5a2V5"
	)
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		// tables and blobs are the endpoints wanted, or err the error.
		tables, blobs, err string
	}{
		{name: "tables SAS, blob connection", env: map[string]string{"BIFROST_TABLES_CONNECTION": sasTables, "BIFROST_BLOB_CONNECTION": keyBlobs},
			tables: "https://acct.table.core.windows.net", blobs: "https://blobacct.blob.core.windows.net"},
		{name: "tables SAS flag, blob SAS flag", args: []string{"--tables-connection", sasTables, "--blob-connection", sasBlobs},
			tables: "https://acct.table.core.windows.net", blobs: "https://acct.blob.core.windows.net"},
		{name: "tables SAS, blob endpoint", env: map[string]string{"AzureWebJobsStorage": sasTables, "BIFROST_BLOB_ENDPOINT": "https://other.blob.core.windows.net"},
			tables: "https://acct.table.core.windows.net", blobs: "https://other.blob.core.windows.net"},
		{name: "tables SAS alone", args: []string{"--tables-connection", sasTables},
			err: "--tables-connection has no BlobEndpoint, and blobs use the tables connection unless given their own: give the blob account with " +
				"--blob-connection or BIFROST_BLOB_CONNECTION (or --blob-endpoint), or add BlobEndpoint=https://<account>.blob.core.windows.net to --tables-connection"},
		{name: "tables SAS for the blobs", env: map[string]string{"AzureWebJobsStorage": sasBlobs, "BIFROST_BLOB_CONNECTION": keyBlobs},
			err: "AzureWebJobsStorage has no TableEndpoint, nor an AccountName to derive it from: add TableEndpoint=https://<account>.table.core.windows.net to it"},
		{name: "blob SAS for the tables", env: map[string]string{"BIFROST_BLOB_CONNECTION": sasTables},
			err: "BIFROST_BLOB_CONNECTION has no BlobEndpoint, nor an AccountName to derive it from: add BlobEndpoint=https://<account>.blob.core.windows.net to it"},
		{name: "tables endpoint of another cloud", args: []string{"--tables-endpoint", "http://127.0.0.1:10002/devstoreaccount1"},
			err: "the blob endpoint of the tables account http://127.0.0.1:10002/devstoreaccount1 cannot be derived: give --blob-endpoint or --blob-connection"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _, _ := newTestFactory(tc.env)
			root := NewRootCmd(f)
			if err := root.PersistentFlags().Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			tables, err1 := f.Storage()
			blobs, err2 := f.BlobStorage()
			if err := firstError(err1, err2); tc.err != "" || err != nil {
				if err == nil || err.Error() != tc.err || exitCode(err, false) != ExitUsage {
					t.Fatalf("error %v, want (exit 2) %q", err, tc.err)
				}
				return
			}
			if tables.TableEndpoint != tc.tables || blobs.BlobEndpoint != tc.blobs {
				t.Errorf("tables %q, blobs %q; want %q, %q", tables.TableEndpoint, blobs.BlobEndpoint, tc.tables, tc.blobs)
			}
		})
	}
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
