package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// Integration tests of `reverse` against the emulators (SPEC §15): the
// fixtures are migrated with `run` (replayEnv), then the "application"
// writes docs in Cosmos DB straight to the stand-in, and reverse, reaching
// Cosmos DB through the fault proxy's change-feed simulation (the stand-in
// has no change feed), must write back exactly the rows the Table-based
// application would have written — and nothing else.

// Docs and rows the tests change, besides the replay tests' ones.
const (
	orgID      = "2f1a9c4e-8b3d-4e6f-a1c2-5d7e9f0b3a68"
	runningID  = "0c537813-4b06-5b2c-8e7c-f7706176ae40" // Running in the fixtures
	runningRK  = "execution:8204781399999_" + runningID
	zoe        = "zoë.müller@fabrikam.example"
	newExecID  = "5b0e2d1c-7a4f-4c3e-9b8a-6f5e4d3c2b1a"
	newExecWF  = "get_user_licenses"
	aliceEmail = "alice.admin@contoso.example"
)

// newExecStarted is when the application started the new execution.
var newExecStarted = time.Date(2026, 11, 21, 11, 0, 0, 500_000_000, time.UTC)

// reverseEnv is a replayEnv whose commands reach Cosmos DB through a
// proxy that simulates the change feed (with two feed ranges).
type reverseEnv struct {
	*replayEnv
	proxy *faultproxy.Proxy
}

// newReverseEnv migrates the fixtures and puts the proxy in front of the
// stand-in for every later command. match, when not nil, is the proxy's
// Config.Match (tests count or time requests with it).
func newReverseEnv(t *testing.T, match func(*http.Request) bool) *reverseEnv {
	e := &reverseEnv{replayEnv: newReplayEnv(t)}
	cosmos := testenv.Cosmos(t)
	p, err := faultproxy.Start(faultproxy.Config{Target: cosmos.Endpoint, ChangeFeed: &faultproxy.ChangeFeed{Ranges: 2}, Match: match})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	e.proxy = p
	env := map[string]string{}
	for k, v := range e.env {
		env[k] = v
	}
	e.env = env
	e.env["CosmosDBConnection"] = "AccountEndpoint=" + p.URL() + ";AccountKey=" + cosmos.Key + ";"
	return e
}

// reverseArgs are reverse's arguments with the env's names.
func (e *reverseEnv) reverseArgs(since string, extra ...string) []string {
	return append([]string{"reverse", "--since", since, "--database", e.db, "--table-prefix", e.prefix,
		"--blob-container", e.blobs, "--state-dir", e.stateDir, "--quiet"}, extra...)
}

// reverse runs reverse --output json and returns the exit code, the
// summary and stderr.
func (e *reverseEnv) reverse(since string, extra ...string) (int, migrate.ReverseSummary, string) {
	e.t.Helper()
	code, stdout, stderr := e.cli(e.reverseArgs(since, append([]string{"--output", "json"}, extra...)...)...)
	return code, lastSummary[migrate.ReverseSummary](e.t, stdout, stderr), stderr
}

// appWrite writes doc as the application does on Cosmos DB: the whole doc,
// its system properties left to the service.
func (e *reverseEnv) appWrite(container string, doc map[string]any) {
	e.t.Helper()
	for _, p := range []string{"_rid", "_self", "_etag", "_attachments", "_ts"} {
		delete(doc, p)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.upsert(container, doc["scope"].(string), b); err != nil {
		e.t.Fatalf("the application's write of %s/%v: %v", container, doc["id"], err)
	}
}

// appDelete deletes a doc as the application does.
func (e *reverseEnv) appDelete(container, scope, id string) {
	e.t.Helper()
	if _, err := e.container(container).DeleteItem(context.Background(), azcosmos.NewPartitionKeyString(scope), id, nil); err != nil {
		e.t.Fatalf("delete %s/%s/%s: %v", container, scope, id, err)
	}
}

// snapshot returns every row of the three tables, by "table pk rk".
func (e *reverseEnv) snapshot() map[string]transform.Row {
	e.t.Helper()
	reader := azure.NewTableReader(e.acct, azure.Options{})
	rows := map[string]transform.Row{}
	for _, table := range []string{transform.TableConfig, transform.TableEntities, transform.TableRelationships} {
		err := store.Scan(context.Background(), reader, e.prefix, table, store.Query{}, store.Cursor{}, func(p store.Page) error {
			for _, r := range p.Rows {
				r.Table = table
				rows[table+" "+r.PartitionKey+" "+r.RowKey] = r
			}
			return nil
		})
		if err != nil {
			e.t.Fatal(err)
		}
	}
	return rows
}

// prefixQuery lists the RowKeys of Relationships' GLOBAL partition that
// start with prefix, the way the Table-based application reads its
// indexes (RowKey ge prefix and lt prefix with its last character
// incremented).
func (e *reverseEnv) prefixQuery(prefix string) []string {
	e.t.Helper()
	end := prefix[:len(prefix)-1] + string(rune(prefix[len(prefix)-1]+1))
	filter := fmt.Sprintf("PartitionKey eq 'GLOBAL' and RowKey ge '%s' and RowKey lt '%s'",
		strings.ReplaceAll(prefix, "'", "''"), strings.ReplaceAll(end, "'", "''"))
	pager := e.tables.NewClient(e.prefix + transform.TableRelationships).NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter})
	var keys []string
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			e.t.Fatalf("prefix query %q: %v", prefix, err)
		}
		for _, raw := range page.Entities {
			var ent struct{ RowKey string }
			if err := json.Unmarshal(raw, &ent); err != nil {
				e.t.Fatal(err)
			}
			keys = append(keys, ent.RowKey)
		}
	}
	return keys
}

// lastSummary returns the summary line of a command's --output json,
// which comes after progress, status and warning lines and before an
// error line when the command failed.
func lastSummary[S any](t *testing.T, stdout, stderr string) S {
	t.Helper()
	lines := parseJSONLines(t, stdout)
	end := len(lines) - 1
	if end > 0 && lines[end].Type == lineError {
		end--
	}
	var s S
	if end < 0 || lines[end].Type != lineSummary {
		t.Fatalf("stdout does not end with a summary (and an error line):\n%s\nstderr:\n%s", stdout, stderr)
	}
	for _, l := range lines[:end] {
		if l.Type != lineProgress && l.Type != lineStatus && l.Type != lineWarning {
			t.Fatalf("stdout line before the summary is not progress, status or a warning: %s\nstderr:\n%s", l.Raw, stderr)
		}
	}
	if err := json.Unmarshal([]byte(lines[end].Raw), &s); err != nil {
		t.Fatalf("summary: %v\n%s", err, lines[end].Raw)
	}
	return s
}

// wantRow checks that the table holds exactly want (annotated JSON, as
// the Python SDK sends it), property by property with Edm types.
func wantRow(t *testing.T, rows map[string]transform.Row, table, want string) {
	t.Helper()
	w, err := transform.DecodeEntity(table, []byte(want))
	if err != nil {
		t.Fatalf("expected row %s: %v", want, err)
	}
	got, ok := rows[table+" "+w.PartitionKey+" "+w.RowKey]
	if !ok {
		t.Errorf("%s %s/%s: missing", table, w.PartitionKey, w.RowKey)
		return
	}
	if d := transform.DiffRows(got, w); len(d) > 0 {
		t.Errorf("%s %s/%s: properties %v differ\n got %s\nwant %s", table, w.PartitionKey, w.RowKey, d, transform.EncodeEntity(got), want)
	}
}

// changedRows returns the keys of rows added, changed (Timestamp or ETag)
// or deleted between two snapshots, sorted.
func changedRows(before, after map[string]transform.Row) []string {
	var keys []string
	for k, a := range after {
		if b, ok := before[k]; !ok || !b.Timestamp.Equal(a.Timestamp) || b.ETag != a.ETag {
			keys = append(keys, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// applicationWrites is the story of the cutover: in Cosmos DB the
// application renames a user, completes the Running execution and starts
// a new one (the plan's doc schema).
func (e *reverseEnv) applicationWrites() {
	alice := e.readDoc(transform.ContainerEntities, "GLOBAL", aliceID)
	alice["displayName"] = "Alice Renamed"
	e.appWrite(transform.ContainerEntities, alice)

	running := e.readDoc(transform.ContainerExecutions, "org-"+orgID, runningID)
	running["status"] = "Success"
	running["completedAt"] = "2026-11-21T00:10:00.2500000Z"
	running["durationMs"] = 1200250
	running["result"] = map[string]any{"mailboxes": 3, "note": "é"}
	running["resultType"] = "json"
	running["resultSize"] = 34 // the length of its JSON text, as the plan's schema says
	e.appWrite(transform.ContainerExecutions, running)

	e.appWrite(transform.ContainerExecutions, map[string]any{
		"id": newExecID, "type": "execution", "scope": "org-" + orgID,
		"executionId": newExecID, "workflowName": newExecWF, "formId": nil,
		"executedBy": aliceEmail, "executedByName": "Alice Renamed",
		"status": "Running", "inputData": map[string]any{"user": "bob@contoso.example", "top": 5},
		"result": nil, "resultType": nil, "resultInBlob": false, "resultSize": nil, "resultBlobPath": nil,
		"errorMessage": nil, "durationMs": nil,
		"startedAt": newExecStarted.Format("2006-01-02T15:04:05.0000000Z"), "completedAt": nil,
		"logsBlobPath": nil, "variablesBlobPath": nil, "snapshotBlobPath": nil, "ttl": 1209600,
	})
}

// TestReverseAfterCutover is the rollback story (SPEC §15): what the
// application wrote in Cosmos DB comes back as exactly the rows the
// Table-based application would have written, its indexes included; no
// other row is touched; the Table-based access patterns find the new
// execution; a second reverse writes nothing; verify agrees.
func TestReverseAfterCutover(t *testing.T) {
	e := newReverseEnv(t, nil)
	since := e.since()
	before := e.snapshot()
	e.applicationWrites()

	code, s, stderr := e.reverse(since)
	if code != ExitOK {
		t.Fatalf("reverse: exit %d, want 0:\n%s", code, stderr)
	}
	if s.Totals.Synced != 3 || s.Totals.Conflicts != 0 || s.Totals.DeadLetters != 0 {
		t.Errorf("totals %+v, want 3 docs synced, no conflict, no dead letter", s.Totals)
	}
	after := e.snapshot()

	newRK := fmt.Sprintf("execution:%d_%s", 9999999999999-newExecStarted.UnixMilli(), newExecID)
	wantChanged := []string{
		"Entities " + orgID + " " + newRK,
		"Entities " + orgID + " " + runningRK,
		"Entities GLOBAL " + aliceRK,
		"Relationships GLOBAL status:Running:" + newExecID,
		"Relationships GLOBAL status:Running:" + runningID,
		"Relationships GLOBAL userexec:" + aliceEmail + ":" + newExecID,
		"Relationships GLOBAL userexec:" + zoe + ":" + runningID,
		"Relationships GLOBAL workflowexec:" + newExecWF + ":" + orgID + ":" + newExecID,
		"Relationships GLOBAL workflowexec:export_mailbox_inventory:" + orgID + ":" + runningID,
	}
	slices.Sort(wantChanged)
	if got := changedRows(before, after); !slices.Equal(got, wantChanged) {
		t.Errorf("rows reverse added, changed or deleted:\n got %q\nwant %q", got, wantChanged)
	}
	if _, ok := after["Relationships GLOBAL status:Running:"+runningID]; ok {
		t.Error("the completed execution's status:Running index row is still there")
	}

	// The rows, as the Python SDK would have sent them: only the renamed
	// property changes; the others keep their text and Edm type.
	wantRow(t, after, "Entities", `{"PartitionKey":"GLOBAL","RowKey":"`+aliceRK+`","Email":"alice.admin@contoso.example",`+
		`"DisplayName":"Alice Renamed","UserType":"PLATFORM","IsPlatformAdmin":true,"IsActive":true,"LastLogin":"2026-11-21T08:01:02.030405",`+
		`"CreatedAt":"2024-01-15T09:00:00","EntraUserId@odata.type":"Edm.Guid","EntraUserId":"8f14e45f-ceea-4e7a-9b1c-2a3b4c5d6e7f",`+
		`"LastEntraIdSync@odata.type":"Edm.DateTime","LastEntraIdSync":"2026-11-21T02:00:03.1234567Z"}`)
	wantRow(t, after, "Entities", `{"PartitionKey":"`+orgID+`","RowKey":"`+runningRK+`","ExecutionId":"`+runningID+`",`+
		`"WorkflowName":"export_mailbox_inventory","ExecutedBy":"`+zoe+`","ExecutedByName":"Zoë Müller","Status":"Success",`+
		`"InputData":"{\"includeArchived\": false}","Result":"{\"mailboxes\": 3, \"note\": \"\\u00e9\"}","ResultInBlob":false,`+
		`"StartedAt":"2026-11-20T23:50:00","CompletedAt":"2026-11-21T00:10:00.250000","DurationMs":1200250}`)
	wantRow(t, after, "Entities", `{"PartitionKey":"`+orgID+`","RowKey":"`+newRK+`","ExecutionId":"`+newExecID+`",`+
		`"WorkflowName":"`+newExecWF+`","ExecutedBy":"`+aliceEmail+`","ExecutedByName":"Alice Renamed","Status":"Running",`+
		`"InputData":"{\"top\": 5, \"user\": \"bob@contoso.example\"}","ResultInBlob":false,"StartedAt":"2026-11-21T11:00:00.500000"}`)
	// The index rows, with the display properties the repository copies.
	done := `"ExecutionId":"` + runningID + `","OrganizationId":"` + orgID + `","WorkflowName":"export_mailbox_inventory",` +
		`"ExecutedByName":"Zoë Müller","Status":"Success","StartedAt":"2026-11-20T23:50:00","CompletedAt":"2026-11-21T00:10:00.250000","DurationMs":1200250`
	wantRow(t, after, "Relationships", `{"PartitionKey":"GLOBAL","RowKey":"userexec:`+zoe+`:`+runningID+`",`+done+`}`)
	wantRow(t, after, "Relationships", `{"PartitionKey":"GLOBAL","RowKey":"workflowexec:export_mailbox_inventory:`+orgID+`:`+runningID+`","ExecutedBy":"`+zoe+`",`+
		strings.Replace(done, `"WorkflowName":"export_mailbox_inventory",`, "", 1)+`}`)
	started := `"ExecutionId":"` + newExecID + `","OrganizationId":"` + orgID + `","ExecutedByName":"Alice Renamed","Status":"Running","StartedAt":"2026-11-21T11:00:00.500000"`
	wantRow(t, after, "Relationships", `{"PartitionKey":"GLOBAL","RowKey":"userexec:`+aliceEmail+`:`+newExecID+`","WorkflowName":"`+newExecWF+`",`+started+`}`)
	wantRow(t, after, "Relationships", `{"PartitionKey":"GLOBAL","RowKey":"workflowexec:`+newExecWF+`:`+orgID+`:`+newExecID+`","ExecutedBy":"`+aliceEmail+`",`+started+`}`)
	wantRow(t, after, "Relationships", `{"PartitionKey":"GLOBAL","RowKey":"status:Running:`+newExecID+`","WorkflowName":"`+newExecWF+`","ExecutedBy":"`+aliceEmail+`",`+
		started+`,"UpdatedAt":"2026-11-21T12:00:00"}`)

	// The Table-based application's access patterns find the new
	// execution, and no longer list the completed one as running.
	for prefix, want := range map[string]string{
		"userexec:" + aliceEmail + ":":                  newExecID,
		"workflowexec:" + newExecWF + ":" + orgID + ":": newExecID,
		"status:Running:":                               newExecID,
	} {
		keys := e.prefixQuery(prefix)
		if !slices.ContainsFunc(keys, func(k string) bool { return strings.HasSuffix(k, ":"+want) }) {
			t.Errorf("prefix query %q: %q, want the new execution %s", prefix, keys, want)
		}
	}
	if keys := e.prefixQuery("status:Running:"); slices.ContainsFunc(keys, func(k string) bool { return strings.HasSuffix(k, runningID) }) {
		t.Errorf("prefix query status:Running: still lists the completed execution: %q", keys)
	}

	// A second reverse of the same window writes nothing.
	code, s, stderr = e.reverse(since)
	if code != ExitOK || s.Totals.Writes() != 0 || s.Totals.Synced != 0 {
		t.Errorf("second reverse: exit %d totals %+v, want 0 and nothing written:\n%s", code, s.Totals, stderr)
	}
	if got := changedRows(after, e.snapshot()); len(got) > 0 {
		t.Errorf("the second reverse changed rows: %q", got)
	}
	// The tables and Cosmos DB agree again (the fixtures' dead letters
	// aside).
	code, stdout, r := e.verify()
	wantOnlyDeadLetters(t, "verify after reverse", code, stdout, r)
}
