package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/transform"
)

const (
	org  = "2f1a9c4e-8b3d-4e6f-a1c2-5d7e9f0b3a68"
	exec = "0c537813-4b06-5b2c-8e7c-f7706176ae40"
)

// demoapp runs a command with the environment env and returns its exit
// status, stdout and stderr.
func demoapp(env map[string]string, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr, func(k string) string { return env[k] })
	return code, stdout.String(), stderr.String()
}

func TestUsage(t *testing.T) {
	want := "demoapp: " + usage + "\n"
	for _, args := range [][]string{nil, {"delete"}, {"complete", exec}, {"show", "--org", org}, {"show", "--org", org, exec, "more"}} {
		if code, stdout, stderr := demoapp(nil, args...); code != 2 || stdout != "" || stderr != want {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2, nothing, %q", args, code, stdout, stderr, want)
		}
	}
	for cmd, want := range map[string]string{"complete": "CosmosDBConnection is not set", "show": "BIFROST_TABLES_CONNECTION is not set"} {
		if code, _, stderr := demoapp(nil, cmd, "--org", org, exec); code != 1 || stderr != "demoapp "+cmd+": "+want+"\n" {
			t.Errorf("%s without its connection: exit %d, stderr %q; want 1, %q", cmd, code, stderr, want)
		}
	}
}

// executions creates a database with an executions container on the
// stand-in and returns its name and the container.
func executions(t *testing.T) (string, *azcosmos.ContainerClient) {
	t.Helper()
	client, err := azure.NewCosmosClient(testenv.Cosmos(t), azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	name := testenv.Name("demoapp")
	if _, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: name}, nil); err != nil {
		t.Fatal(err)
	}
	db, _ := client.NewDatabase(name)
	t.Cleanup(func() { _, _ = db.Delete(context.WithoutCancel(ctx), nil) })
	if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: transform.ContainerExecutions,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/scope"}, Kind: azcosmos.PartitionKeyKindHash, Version: 2},
	}, nil); err != nil {
		t.Fatal(err)
	}
	c, _ := db.NewContainer(transform.ContainerExecutions)
	return name, c
}

// readDoc returns the execution's doc and its ETag.
func readDoc(t *testing.T, c *azcosmos.ContainerClient) (map[string]any, string) {
	t.Helper()
	r, err := c.ReadItem(context.Background(), azcosmos.NewPartitionKeyString("org-"+org), exec, nil)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(r.Value, &doc); err != nil {
		t.Fatal(err)
	}
	return doc, string(r.ETag)
}

func TestCompleteARunningExecution(t *testing.T) {
	db, c := executions(t)
	env := map[string]string{"CosmosDBConnection": testenv.CosmosConnection(t)}
	args := []string{"complete", "--org", org, "--database", db, exec}

	code, _, stderr := demoapp(env, args...)
	want := "demoapp complete: execution " + exec + " is not in Cosmos DB (database " + db + ", container executions, scope org-" + org + ")\n"
	if code != 1 || stderr != want {
		t.Errorf("missing execution: exit %d, stderr %q; want 1, %q", code, stderr, want)
	}

	running := `{"id":"` + exec + `","type":"execution","scope":"org-` + org + `","executionId":"` + exec + `",` +
		`"workflowName":"export_mailbox_inventory","status":"Running","inputData":{"includeArchived":false},` +
		`"result":null,"resultType":null,"resultInBlob":false,"resultSize":null,"durationMs":null,` +
		`"startedAt":"2026-11-20T23:50:00.0000000Z","completedAt":null,"ttl":1209600}`
	if _, err := c.CreateItem(context.Background(), azcosmos.NewPartitionKeyString("org-"+org), []byte(running), nil); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := demoapp(env, args...)
	if code != 0 || stderr != "" || stdout != "application on Cosmos DB: execution "+exec+" completed (Running → Success)\n" {
		t.Fatalf("complete: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	doc, etag := readDoc(t, c)
	for k, want := range map[string]string{
		"status": `"Success"`, "completedAt": `"2026-11-21T00:10:00.2500000Z"`, "durationMs": "1200250",
		"result": `{"mailboxes":3}`, "resultType": `"json"`, "resultSize": "16",
		"inputData": `{"includeArchived":false}`,
		"ttl":       "1209600", "workflowName": `"export_mailbox_inventory"`, "resultInBlob": "false",
	} {
		if b, _ := json.Marshal(doc[k]); string(b) != want {
			t.Errorf("%s: %s, want %s", k, b, want)
		}
	}

	code, stdout, stderr = demoapp(env, args...)
	want = "demoapp complete: execution " + exec + ": it is Success, not Running: nothing written\n"
	if code != 1 || stdout != "" || stderr != want {
		t.Errorf("second complete: exit %d, stdout %q, stderr %q; want 1, nothing, %q", code, stdout, stderr, want)
	}
	if _, again := readDoc(t, c); again != etag {
		t.Errorf("the second complete changed the doc (ETag %s, was %s)", again, etag)
	}
}

func TestShowReadsTheTables(t *testing.T) {
	acct := testenv.Storage(t)
	svc, err := azure.NewTablesClient(acct, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	prefix := testenv.Name("demoapp")
	tables := map[string]*aztables.Client{}
	for _, name := range []string{transform.TableEntities, transform.TableRelationships} {
		if _, err := svc.CreateTable(ctx, prefix+name, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = svc.DeleteTable(context.WithoutCancel(ctx), prefix+name, nil) })
		tables[name] = svc.NewClient(prefix + name)
	}
	upsert := func(table, entity string) {
		t.Helper()
		if _, err := tables[table].UpsertEntity(ctx, []byte(entity), &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"BIFROST_TABLES_CONNECTION": testenv.StorageConnection(t)}
	args := []string{"show", "--org", org, "--table-prefix", prefix, exec}
	line := func() string {
		t.Helper()
		code, stdout, stderr := demoapp(env, args...)
		if code != 0 || stderr != "" {
			t.Fatalf("show: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		return stdout
	}

	code, _, stderr := demoapp(env, args...)
	if want := "demoapp show: execution " + exec + " has no row in Entities (partition " + org + ")\n"; code != 1 || stderr != want {
		t.Errorf("no row: exit %d, stderr %q; want 1, %q", code, stderr, want)
	}
	rk := "execution:8204781399999_" + exec
	upsert(transform.TableEntities, fmt.Sprintf(`{"PartitionKey":%q,"RowKey":%q,"ExecutionId":%q,"Status":"Running","StartedAt":"2026-11-20T23:50:00"}`, org, rk, exec))
	upsert(transform.TableEntities, fmt.Sprintf(`{"PartitionKey":%q,"RowKey":"execution:1_other","ExecutionId":"other","Status":"Failed"}`, org))
	upsert(transform.TableRelationships, fmt.Sprintf(`{"PartitionKey":"GLOBAL","RowKey":"status:Running:%s","ExecutionId":%q}`, exec, exec))
	if got, want := line(), "application on the tables: execution "+exec+" is Running; listed in the status:Running index\n"; got != want {
		t.Errorf("running: %q, want %q", got, want)
	}
	upsert(transform.TableEntities, fmt.Sprintf(`{"PartitionKey":%q,"RowKey":%q,"ExecutionId":%q,"Status":"Success","CompletedAt":"2026-11-21T00:10:00.250000","Result":"{\"mailboxes\": 3}"}`, org, rk, exec))
	if _, err := tables[transform.TableRelationships].DeleteEntity(ctx, "GLOBAL", "status:Running:"+exec, nil); err != nil {
		t.Fatal(err)
	}
	want := "application on the tables: execution " + exec + ` is Success, completed 2026-11-21T00:10:00.250000, result {"mailboxes": 3}; not in the status:Running index` + "\n"
	if got := line(); got != want {
		t.Errorf("completed: %q, want %q", got, want)
	}
}

// completed keeps what it does not complete exactly (numbers included,
// which the stand-in itself would round), drops the service's properties,
// and refuses an execution that is not Running.
func TestCompletedDoc(t *testing.T) {
	got, err := completed([]byte(`{"id":"e","status":"Running","startedAt":"2026-11-20T23:59:59.9000000Z","big":9007199254740993,` +
		`"d":1.50,"_rid":"r","_self":"s","_etag":"e","_attachments":"a","_ts":1}`))
	want := `{"big":9007199254740993,"completedAt":"2026-11-21T00:20:00.1500000Z","d":1.50,"durationMs":1200250,"id":"e",` +
		`"result":{"mailboxes":3},"resultSize":16,"resultType":"json","startedAt":"2026-11-20T23:59:59.9000000Z","status":"Success"}`
	if err != nil || string(got) != want {
		t.Errorf("completed: %s (%v)\nwant %s", got, err, want)
	}
	for doc, want := range map[string]string{
		`{"status":"Failed","startedAt":"2026-11-20T23:50:00Z"}`: "it is Failed, not Running: nothing written",
		`{"startedAt":"2026-11-20T23:50:00Z"}`:                   "it is <nil>, not Running: nothing written",
		`{"status":"Running","startedAt":"yesterday"}`:           `startedAt "yesterday" is not a time`,
		`{"status":"Running"`:                                    "the doc is not JSON: unexpected EOF",
	} {
		if _, err := completed([]byte(doc)); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", doc, err, want)
		}
	}
}
