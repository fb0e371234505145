package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/internal/recorder"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
	"github.com/bifrost/bifrost-migrate/verify"
)

// verifyEnv is one verify test's world in the shared emulators: tables of
// its own (a fresh prefix before Config, Entities, Relationships), a blob
// container of its own standing in for execution-data, and a database of
// its own.
type verifyEnv struct {
	t      *testing.T
	env    map[string]string
	prefix string
	db     string
	blobs  string
	// stateDir is run's --state-dir, which verify is given too.
	stateDir string
	acct     azure.StorageAccount
	cosmos   *azcosmos.Client
}

// testNow is the clock of newTestFactory, the "now" of fixtures/inventory.json.
var testNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func newVerifyEnv(t *testing.T) *verifyEnv {
	t.Helper()
	e := &verifyEnv{
		t: t,
		env: map[string]string{
			"CosmosDBConnection":        testenv.CosmosConnection(t),
			"BIFROST_TABLES_CONNECTION": testenv.StorageConnection(t),
		},
		prefix:   testenv.Name("v"),
		db:       testenv.Name("verify"),
		blobs:    testenv.Name("vblobs"),
		stateDir: filepath.Join(t.TempDir(), "state"),
		acct:     testenv.Storage(t),
	}
	var err error
	if e.cosmos, err = azure.NewCosmosClient(testenv.Cosmos(t), azure.Options{}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		if db, err := e.cosmos.NewDatabase(e.db); err == nil {
			_, _ = db.Delete(ctx, nil)
		}
		if bw, err := azure.NewBlobWriter(e.acct, e.blobs, azure.Options{}); err == nil {
			_ = bw.Delete(ctx)
		}
		if svc, err := azure.NewTablesClient(e.acct, azure.Options{}); err == nil {
			for _, table := range fixtures.Tables() {
				_, _ = svc.DeleteTable(ctx, e.prefix+table, nil)
			}
		}
	})
	if code, _, stderr := e.cli("init", "--database", e.db, "--quiet"); code != 0 {
		t.Fatalf("init: exit %d: %s", code, stderr)
	}
	return e
}

// cli runs bifrost-migrate in-process with the env's connection settings.
func (e *verifyEnv) cli(args ...string) (code int, stdout, stderr string) {
	return e.cliWith(nil, args...)
}

func (e *verifyEnv) cliWith(transport http.RoundTripper, args ...string) (code int, stdout, stderr string) {
	e.t.Helper()
	f, out, errOut := newTestFactory(e.env)
	f.Transport = transport
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	code = Execute(ctx, f, args)
	return code, out.String(), errOut.String()
}

func (e *verifyEnv) writers() (*azure.TableWriter, *azure.BlobWriter) {
	e.t.Helper()
	tw, err := azure.NewTableWriter(e.acct, azure.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	bw, err := azure.NewBlobWriter(e.acct, e.blobs, azure.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	return tw, bw
}

// loadFixtures loads fixtures/ into the env's tables and blob container.
func (e *verifyEnv) loadFixtures() {
	e.t.Helper()
	tw, bw := e.writers()
	if _, err := fixtures.Load(context.Background(), tw, bw, fixtures.LoadOptions{TablePrefix: e.prefix}); err != nil {
		e.t.Fatalf("load fixtures: %v", err)
	}
}

// fixtureDeadLetters is the number of fixture rows run dead-letters
// (fixtures/inventory.json); verify counts them as not migrated.
const fixtureDeadLetters = 6

// dropDeadLetterRows deletes from the env's tables the rows that run
// dead-letters, as an operator does who fixed or gave up those rows, so
// that verify can be clean. It returns how many it deleted.
func (e *verifyEnv) dropDeadLetterRows() int {
	e.t.Helper()
	ctx := context.Background()
	svc, err := azure.NewTablesClient(e.acct, azure.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	reader := azure.NewTableReader(e.acct, azure.Options{})
	ids := transform.NewIDSet()
	var dead []transform.Row
	for _, table := range fixtures.Tables() {
		err := store.Scan(ctx, reader, "", e.prefix+table, store.Query{}, store.Cursor{}, func(p store.Page) error {
			for _, row := range p.Rows {
				row.Table = table
				// Blob facts do not decide any fixture's dead letter.
				if ids.Check(transform.Transform(row, transform.BlobFacts{}, transform.Options{Now: testNow})).Disposition == transform.DispositionDeadLetter {
					dead = append(dead, row)
				}
			}
			return nil
		})
		if err != nil {
			e.t.Fatal(err)
		}
	}
	for _, row := range dead {
		if _, err := svc.NewClient(e.prefix+row.Table).DeleteEntity(ctx, row.PartitionKey, row.RowKey, nil); err != nil {
			e.t.Fatalf("delete %s %s/%s: %v", row.Table, row.PartitionKey, row.RowKey, err)
		}
	}
	return len(dead)
}

// migrate puts into Cosmos DB and the blob container what `run` writes:
// every row is transformed as run transforms it (blob facts from one
// listing, collisions in read order, the test clock), its uploads are
// written and its doc upserted.
func (e *verifyEnv) migrate() {
	e.t.Helper()
	ctx := context.Background()
	_, bw := e.writers()
	bc, err := azure.NewBlobContainerClient(e.acct, e.blobs, azure.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	facts := map[string]transform.BlobFacts{}
	err = azure.NewBlobStore(bc).List(ctx, func(name string, size int64) error {
		exec, file, _ := strings.Cut(name, "/")
		if b, ok := transform.ParseBlobName(file); ok {
			f := facts[exec]
			f.Set(b, size)
			facts[exec] = f
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	reader := azure.NewTableReader(e.acct, azure.Options{})
	ids := transform.NewIDSet()
	opts := transform.Options{Now: testNow}
	var outcomes []transform.Outcome
	for _, table := range fixtures.Tables() {
		if ok, err := reader.Exists(ctx, e.prefix+table); err != nil || !ok {
			continue // generated data has no Config
		}
		err := store.Scan(ctx, reader, "", e.prefix+table, store.Query{}, store.Cursor{}, func(p store.Page) error {
			for _, row := range p.Rows {
				row.Table = table
				var f transform.BlobFacts
				if table == transform.TableEntities {
					f = facts[transform.ExecutionID(row)]
				}
				if o := ids.Check(transform.Transform(row, f, opts)); o.Disposition == transform.DispositionDoc {
					outcomes = append(outcomes, o)
				}
			}
			return nil
		})
		if err != nil {
			e.t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	errs := make([]error, len(outcomes))
	for i, o := range outcomes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			for _, u := range o.Uploads {
				if err := bw.Upload(ctx, u.Path, u.Data); err != nil {
					errs[i] = err
					return
				}
			}
			errs[i] = e.upsert(o.Container, o.Scope, o.DocJSON)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		e.t.Fatal(err)
	}
}

func (e *verifyEnv) container(name string) *azcosmos.ContainerClient {
	e.t.Helper()
	c, err := e.cosmos.NewContainer(e.db, name)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *verifyEnv) upsert(container, scope string, doc []byte) error {
	_, err := e.container(container).UpsertItem(context.Background(), azcosmos.NewPartitionKeyString(scope), doc, nil)
	return err
}

// readDoc reads a doc for tampering.
func (e *verifyEnv) readDoc(container, scope, id string) map[string]any {
	e.t.Helper()
	resp, err := e.container(container).ReadItem(context.Background(), azcosmos.NewPartitionKeyString(scope), id, nil)
	if err != nil {
		e.t.Fatalf("read %s/%s/%s: %v", container, scope, id, err)
	}
	var m map[string]any
	if err := json.Unmarshal(resp.Value, &m); err != nil {
		e.t.Fatal(err)
	}
	return m
}

// replaceDoc upserts a tampered doc.
func (e *verifyEnv) replaceDoc(container string, doc map[string]any) {
	e.t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.upsert(container, doc["scope"].(string), b); err != nil {
		e.t.Fatal(err)
	}
}

// deleteDoc deletes a doc through the SDK, as the application does.
func (e *verifyEnv) deleteDoc(container, scope, id string) {
	e.t.Helper()
	if _, err := e.container(container).DeleteItem(context.Background(), azcosmos.NewPartitionKeyString(scope), id, nil); err != nil {
		e.t.Fatalf("delete %s/%s/%s: %v", container, scope, id, err)
	}
}

// verify runs `verify` on the env with --report and returns the exit
// code, stdout and the report.
func (e *verifyEnv) verify(args ...string) (int, string, *verify.Report) {
	e.t.Helper()
	return e.verifyWith(nil, args...)
}

func (e *verifyEnv) verifyWith(transport http.RoundTripper, args ...string) (int, string, *verify.Report) {
	e.t.Helper()
	report := filepath.Join(e.t.TempDir(), "report.json")
	code, stdout, stderr := e.cliWith(transport, append([]string{"verify", "--database", e.db, "--table-prefix", e.prefix,
		"--blob-container", e.blobs, "--state-dir", e.stateDir, "--report", report, "--quiet"}, args...)...)
	if code != ExitOK && code != ExitPartial {
		e.t.Fatalf("verify: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		e.t.Fatalf("verify wrote no report: %v (stderr %s)", err, stderr)
	}
	var r verify.Report
	if err := json.Unmarshal(b, &r); err != nil {
		e.t.Fatalf("report: %v", err)
	}
	return code, stdout, &r
}

// Fixture docs the tampering tests use.
const (
	e01Scope  = "GLOBAL"
	e01ID     = "23a49d34-736e-5da6-b534-a6707efd1911"
	e03Scope  = "org-7c9e6679-7425-40de-944b-e07fc1f90ae7"
	e03ID     = "34c65a68-8220-5701-a0fa-f13a9666fdf2"
	e04Result = "84999ecb-cfa4-5a6e-8ce7-d517dfb1372b/result.json"
)

// migratedFixtures is an env with the fixtures loaded and migrated.
func migratedFixtures(t *testing.T) *verifyEnv {
	t.Parallel()
	e := newVerifyEnv(t)
	e.loadFixtures()
	e.migrate()
	return e
}

// wantOnlyDeadLetters checks that verify found no doc missing, different
// or orphaned, and failed (exit 3, ok false) only because of the
// fixtures' dead letters, which are not in Cosmos DB.
func wantOnlyDeadLetters(t *testing.T, what string, code int, stdout string, r *verify.Report) {
	t.Helper()
	if code != ExitPartial || r.OK || r.NotMigrated != fixtureDeadLetters || r.Totals.DeadLetter != fixtureDeadLetters ||
		r.Totals.Missing+r.Totals.Different+r.Totals.Orphans != 0 {
		t.Fatalf("%s: exit %d ok %v not migrated %d totals %+v, want exit 3 for the %d dead letters only:\n%s",
			what, code, r.OK, r.NotMigrated, r.Totals, fixtureDeadLetters, stdout)
	}
}

// wantDifferences checks that verify failed (exit 3) with exactly one
// differing doc and exactly the given differences.
func wantDifferences(t *testing.T, code int, r *verify.Report, want ...verify.Difference) {
	t.Helper()
	if code != ExitPartial {
		t.Errorf("exit %d, want 3", code)
	}
	if r.OK || r.Totals.Different != 1 || r.Totals.Missing != 0 || r.Totals.Orphans != 0 {
		t.Errorf("totals %+v ok=%v, want exactly 1 different doc", r.Totals, r.OK)
	}
	if len(r.Differences) != len(want) {
		t.Fatalf("differences %s, want %d", fakes.JSON(r.Differences), len(want))
	}
	for i, w := range want {
		g := r.Differences[i]
		if g.Path != w.Path || g.Problem != w.Problem || string(g.Expected) != string(w.Expected) || string(g.Actual) != string(w.Actual) ||
			g.Doc.Container != w.Doc.Container || g.Doc.Scope != w.Doc.Scope || g.Doc.ID != w.Doc.ID {
			t.Errorf("difference %d:\n got %s\nwant %s", i, fakes.JSON(g), fakes.JSON(w))
		}
	}
}

// TestVerifyCleanRunMatchesInventory: after a clean migration of the
// fixtures every expected doc matches, and verify still fails (exit 3):
// the fixtures' dead-lettered rows are not in Cosmos DB.
func TestVerifyCleanRunMatchesInventory(t *testing.T) {
	e := migratedFixtures(t)
	code, stdout, r := e.verify()
	wantOnlyDeadLetters(t, "verify", code, stdout, r)
	var inv struct {
		Tables map[string]map[string]map[string]int `json:"tables"`
		Totals map[string]map[string]int            `json:"totals"`
	}
	if err := json.Unmarshal(fixtures.Inventory(), &inv); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]map[string]int{}
	for _, k := range r.Tables {
		m := map[string]int{}
		for name, n := range map[string]int{"doc": k.ExpectedDocs, "dead-letter": k.DeadLetter, "expired": k.Expired,
			"dropped-index": k.DroppedIndex, "kept-in-tables": k.KeptInTables} {
			if n > 0 {
				m[name] = n
			}
		}
		if k.Matched != k.ExpectedDocs || k.Missing+k.Different+k.Orphans != 0 {
			t.Errorf("%s %s: %+v, want every expected doc matched", k.Table, k.Kind, k.Counts)
		}
		if got[k.Table] == nil {
			got[k.Table] = map[string]map[string]int{}
		}
		got[k.Table][k.Kind] = m
	}
	if fakes.JSON(got) != fakes.JSON(inv.Tables) {
		t.Errorf("counts per table and kind\n got %s\nwant %s", fakes.JSON(got), fakes.JSON(inv.Tables))
	}
	rows := 0
	for _, tot := range inv.Totals {
		rows += tot["rows"]
	}
	if r.Totals.Rows != rows || r.Totals.Matched != 60 {
		t.Errorf("totals %+v, want %d rows and 60 matched docs", r.Totals, rows)
	}
	if r.AppWritten["entities"] != 0 || r.AppWritten["executions"] != 0 || r.NotJudged != 0 {
		t.Errorf("app-written %v, not judged %d; want none", r.AppWritten, r.NotJudged)
	}
	if ap := r.AccessPatterns; !ap.Checked || ap.Dangling != 1 || ap.Stale != 0 || ap.Unindexed != 0 || len(ap.Findings) != 1 ||
		ap.Findings[0].ExecutionID != "5effe395-907c-5b5e-8c21-1a59b41c41f2" || ap.Findings[0].Kind != verify.FindingDangling {
		t.Errorf("access patterns %s, want the fixtures' one dangling index", fakes.JSON(ap))
	}
	// No run wrote a dead-letter file into the env's state directory.
	want := strings.Replace(cleanFixturesText, deadLettersListed, deadLettersNotFound(e.stateDir), 1)
	if stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
	}
	if r.DeadLetterFile != filepath.Join(e.stateDir, "dead-letter.jsonl") || r.DeadLetterFileFound {
		t.Errorf("report names dead-letter file %q (found %v), want the state directory's, not found", r.DeadLetterFile, r.DeadLetterFileFound)
	}
}

// deadLettersListed is the line of cleanFixturesText that names run's
// dead-letter file, for the placeholder state directory STATE.
const deadLettersListed = "not migrated: 6 row(s) are dead letters, not in Cosmos DB (DEAD-LETTER column); run listed them with their reasons in STATE/dead-letter.jsonl\n"

// deadLettersNotFound is that line when dir holds no dead-letter file.
func deadLettersNotFound(dir string) string {
	return "not migrated: 6 row(s) are dead letters, not in Cosmos DB (DEAD-LETTER column); no run wrote a dead-letter file in " + dir +
		": `bifrost-migrate run --dry-run` lists them with their reasons (or give verify the run's --state-dir)\n"
}

// cleanFixturesText is verify's output after a clean run on the fixtures,
// whose dead letters run wrote into STATE.
const cleanFixturesText = `TABLE          KIND                  ROWS  EXPECTED  MATCHED  MISSING  DIFFERENT  ORPHANS  DROPPED-INDEX  KEPT-IN-TABLES  EXPIRED  DEAD-LETTER
Config         branding              2     2         2        0        0          0        0              0               0        0
Config         config                19    15        15       0        0          0        0              0               0        4
Config         github                1     1         1        0        0          0        0              0               0        0
Config         integration           2     2         2        0        0          0        0              0               0        0
Config         jobstatus             2     2         2        0        0          0        0              0               0        0
Config         notificationtemplate  1     1         1        0        0          0        0              0               0        0
Config         oauth                 2     2         2        0        0          0        0              0               0        0
Config         schedule              2     2         2        0        0          0        0              0               0        0
Config         systemconfig          1     1         1        0        0          0        0              0               0        0
Config         workflowkey           2     2         2        0        0          0        0              0               0        0
Entities       auditevent            1     1         1        0        0          0        0              0               0        0
Entities       execution             21    18        18       0        0          0        0              0               1        2
Entities       form                  2     2         2        0        0          0        0              0               0        0
Entities       org                   3     3         3        0        0          0        0              0               0        0
Entities       role                  2     2         2        0        0          0        0              0               0        0
Entities       user                  4     4         4        0        0          0        0              0               0        0
Relationships  assignedrole          1     0         0        0        0          0        0              1               0        0
Relationships  formexec              3     0         0        0        0          0        3              0               0        0
Relationships  formrole              1     0         0        0        0          0        0              1               0        0
Relationships  orgintegration        1     0         0        0        0          0        0              1               0        0
Relationships  orgperm               1     0         0        0        0          0        0              1               0        0
Relationships  roleform              1     0         0        0        0          0        0              1               0        0
Relationships  status                20    0         0        0        0          0        20             0               0        0
Relationships  userexec              20    0         0        0        0          0        20             0               0        0
Relationships  userperm              2     0         0        0        0          0        0              2               0        0
Relationships  userrole              1     0         0        0        0          0        0              1               0        0
Relationships  workflowexec          21    0         0        0        0          0        21             0               0        0
Relationships  workflowform          1     0         0        0        0          0        0              1               0        0
total                                140   60        60       0        0          0        64             9               1        6
application-written docs (no _migration, not judged): entities 0, executions 0
access patterns (data quality, not failures): 1 dangling and 0 stale index row(s), 0 unindexed execution(s)
dangling index rows (no such execution: listed before cutover, gone after) (1):
  index workflowexec:purge_old_mailboxes:7c9e6679-7425-40de-944b-e07fc1f90ae7:5effe395-907c-5b5e-8c21-1a59b41c41f2: execution 5effe395-907c-5b5e-8c21-1a59b41c41f2 is not in Entities
` + deadLettersListed + `verify: 6 row(s) not migrated; 0 missing, 0 different, 0 orphan doc(s)
`

func TestVerifyDetectsChangedScalarField(t *testing.T) {
	e := migratedFixtures(t)
	doc := e.readDoc("executions", e03Scope, e03ID)
	doc["status"] = "Failed"
	e.replaceDoc("executions", doc)
	code, stdout, r := e.verify()
	wantDifferences(t, code, r, verify.Difference{
		Doc:  verify.DocRef{Container: "executions", Scope: e03Scope, ID: e03ID},
		Path: "status", Problem: verify.ProblemValue, Expected: json.RawMessage(`"Success"`), Actual: json.RawMessage(`"Failed"`),
	})
	want := "differences (1, in 1 doc(s)):\n" +
		"  executions/" + e03Scope + "/" + e03ID + `: status: expected "Success", actual "Failed"` + "\n" +
		deadLettersNotFound(e.stateDir) +
		"verify: 6 row(s) not migrated; 0 missing, 1 different, 0 orphan doc(s)\n"
	if !strings.HasSuffix(stdout, want) {
		t.Errorf("stdout does not end in\n%s\ngot:\n%s", want, stdout)
	}
}

func TestVerifyDetectsChangedNestedInputField(t *testing.T) {
	e := migratedFixtures(t)
	doc := e.readDoc("executions", e01Scope, e01ID)
	doc["inputData"].(map[string]any)["userPrincipalName"] = "mallory@contoso.example"
	e.replaceDoc("executions", doc)
	code, _, r := e.verify()
	wantDifferences(t, code, r, verify.Difference{
		Doc:  verify.DocRef{Container: "executions", Scope: e01Scope, ID: e01ID},
		Path: "inputData.userPrincipalName", Problem: verify.ProblemValue,
		Expected: json.RawMessage(`"jdoe@contoso.example"`), Actual: json.RawMessage(`"mallory@contoso.example"`),
	})
}

func TestVerifyDetectsDeletedDoc(t *testing.T) {
	e := migratedFixtures(t)
	e.deleteDoc("executions", e03Scope, e03ID)
	code, stdout, r := e.verify()
	if code != ExitPartial || r.OK {
		t.Errorf("exit %d ok %v, want 3", code, r.OK)
	}
	if r.Totals.Missing != 1 || r.Totals.Different != 0 || r.Totals.Orphans != 0 || len(r.Missing) != 1 {
		t.Fatalf("totals %+v missing %v, want exactly one missing doc", r.Totals, r.Missing)
	}
	want := verify.DocRef{Table: "Entities", PartitionKey: "7c9e6679-7425-40de-944b-e07fc1f90ae7",
		RowKey: "execution:8204981199999_" + e03ID, Container: "executions", Scope: e03Scope, ID: e03ID}
	if r.Missing[0] != want {
		t.Errorf("missing %+v, want %+v", r.Missing[0], want)
	}
	if !strings.Contains(stdout, "missing docs (1):\n  "+want.String()+"\n") {
		t.Errorf("stdout does not list the missing doc:\n%s", stdout)
	}
}

func TestVerifyDetectsOrphan(t *testing.T) {
	e := migratedFixtures(t)
	doc := e.readDoc("executions", e03Scope, e03ID)
	doc["id"] = "0badc0de-0000-5000-8000-000000000000"
	doc["executionId"] = doc["id"]
	doc["_migration"].(map[string]any)["rowKey"] = "execution:8204981199999_0badc0de-0000-5000-8000-000000000000"
	e.replaceDoc("executions", doc)
	code, _, r := e.verify()
	if code != ExitPartial || r.Totals.Orphans != 1 || r.Totals.Missing+r.Totals.Different != 0 {
		t.Fatalf("exit %d totals %+v, want 3 and exactly one orphan", code, r.Totals)
	}
	o := r.Orphans[0]
	if o.ID != "0badc0de-0000-5000-8000-000000000000" || o.Scope != e03Scope || o.Table != "Entities" ||
		o.RowKey != "execution:8204981199999_0badc0de-0000-5000-8000-000000000000" || o.Reason != "its row no longer exists" {
		t.Errorf("orphan %+v", o)
	}
	for _, k := range r.Tables {
		if k.Table == "Entities" && k.Kind == "execution" && k.Orphans != 1 {
			t.Errorf("Entities execution orphans %d, want 1", k.Orphans)
		}
	}
}

func TestVerifyDetectsDeletedResultBlob(t *testing.T) {
	e := migratedFixtures(t)
	bc, err := azure.NewBlobContainerClient(e.acct, e.blobs, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bc.NewBlobClient(e04Result).Delete(context.Background(), nil); err != nil {
		t.Fatalf("delete %s: %v", e04Result, err)
	}
	code, stdout, r := e.verify()
	execID, _, _ := strings.Cut(e04Result, "/")
	wantDifferences(t, code, r, verify.Difference{
		Doc:  verify.DocRef{Container: "executions", Scope: "org-2f1a9c4e-8b3d-4e6f-a1c2-5d7e9f0b3a68", ID: execID},
		Path: "resultBlobPath", Problem: verify.ProblemBlob,
		Expected: json.RawMessage(`"` + e04Result + `"`), Actual: json.RawMessage(`"` + e04Result + `"`),
	})
	if !strings.Contains(stdout, `resultBlobPath: blob "`+e04Result+`" does not exist in execution-data`) {
		t.Errorf("stdout does not name the missing blob:\n%s", stdout)
	}
}

func TestVerifyDetectsDocInWrongScope(t *testing.T) {
	e := migratedFixtures(t)
	doc := e.readDoc("executions", e01Scope, e01ID)
	e.deleteDoc("executions", e01Scope, e01ID)
	doc["scope"] = e03Scope
	e.replaceDoc("executions", doc)
	code, stdout, r := e.verify()
	wantDifferences(t, code, r, verify.Difference{
		Doc:  verify.DocRef{Container: "executions", Scope: e01Scope, ID: e01ID},
		Path: "scope", Problem: verify.ProblemValue, Expected: json.RawMessage(`"GLOBAL"`), Actual: json.RawMessage(`"` + e03Scope + `"`),
	})
	if a := r.Differences[0].ActualDoc; a == nil || a.Scope != e03Scope || a.ID != e01ID {
		t.Errorf("actual doc %+v, want the doc in scope %s", a, e03Scope)
	}
	if !strings.Contains(stdout, "(found at executions/"+e03Scope+"/"+e01ID+"): scope: ") {
		t.Errorf("stdout does not say where the doc was found:\n%s", stdout)
	}
}

// TestVerifyCountsAppWrittenDocsWithoutFailing: with every row migrated
// (the dead-lettered fixture rows deleted from the tables), verify is OK
// even though the application wrote a doc of its own.
func TestVerifyCountsAppWrittenDocsWithoutFailing(t *testing.T) {
	t.Parallel()
	e := newVerifyEnv(t)
	e.loadFixtures()
	if n := e.dropDeadLetterRows(); n != fixtureDeadLetters {
		t.Fatalf("deleted %d dead-letter rows, want %d", n, fixtureDeadLetters)
	}
	e.migrate()
	if err := e.upsert("entities", "GLOBAL", []byte(`{"id":"user-new@contoso.example","scope":"GLOBAL","type":"user","email":"new@contoso.example"}`)); err != nil {
		t.Fatal(err)
	}
	code, stdout, r := e.verify()
	if code != ExitOK || !r.OK {
		t.Fatalf("exit %d ok %v, want 0:\n%s", code, r.OK, stdout)
	}
	if r.AppWritten["entities"] != 1 || r.AppWritten["executions"] != 0 || r.Totals.Orphans != 0 || r.NotMigrated != 0 {
		t.Errorf("app-written %v orphans %d not migrated %d, want 1 in entities, no orphan, every row migrated", r.AppWritten, r.Totals.Orphans, r.NotMigrated)
	}
	if !strings.Contains(stdout, "application-written docs (no _migration, not judged): entities 1, executions 0\n") ||
		!strings.HasSuffix(stdout, "\nverify: OK\n") || strings.Contains(stdout, "not migrated") {
		t.Errorf("stdout:\n%s", stdout)
	}
}

func TestVerifyRedactsSecretsInDifferences(t *testing.T) {
	e := migratedFixtures(t)
	doc := e.readDoc("entities", "GLOBAL", "config-graph-client-secret")
	doc["secretRef"] = "FAKE-SECRET-tampered"
	e.replaceDoc("entities", doc)
	code, stdout, r := e.verify()
	wantDifferences(t, code, r, verify.Difference{
		Doc:  verify.DocRef{Container: "entities", Scope: "GLOBAL", ID: "config-graph-client-secret"},
		Path: "secretRef", Problem: verify.ProblemValue, Expected: json.RawMessage(`"***"`), Actual: json.RawMessage(`"***"`),
	})
	if strings.Contains(stdout, "FAKE-SECRET") || strings.Contains(fakes.JSON(r), "FAKE-SECRET") {
		t.Errorf("a secret reached the output:\n%s", stdout)
	}
}

func TestVerifyTTLRule(t *testing.T) {
	e := migratedFixtures(t)
	doc := e.readDoc("executions", e03Scope, e03ID)
	doc["ttl"] = 1209601
	e.replaceDoc("executions", doc)
	code, _, r := e.verify()
	wantDifferences(t, code, r, verify.Difference{
		Doc:  verify.DocRef{Container: "executions", Scope: e03Scope, ID: e03ID},
		Path: "ttl", Problem: verify.ProblemTTL, Expected: json.RawMessage(`"a number with 0 \u003c ttl \u003c= 1209600"`), Actual: json.RawMessage(`1209601`),
	})
	// Under --execution-ttl none no doc may carry a ttl: every execution
	// doc differs, and its ttl is the only difference.
	code, _, r = e.verify("--execution-ttl", "none")
	if code != ExitPartial || r.Totals.Different != 18 || r.Totals.Matched != 42 {
		t.Fatalf("--execution-ttl none: exit %d totals %+v, want the 18 executions different", code, r.Totals)
	}
	for _, d := range r.Differences {
		if d.Path != "ttl" || d.Problem != verify.ProblemUnexpected {
			t.Errorf("--execution-ttl none: difference %s, want only unexpected ttl", fakes.JSON(d))
		}
	}
}

func TestVerifySampleIsDeterministic(t *testing.T) {
	e := migratedFixtures(t)
	e.deleteDoc("executions", e03Scope, e03ID)
	_, _, a := e.verify("--sample", "0.5")
	_, _, b := e.verify("--sample", "0.5")
	if a.Totals.Rows == 0 || a.Totals.Rows >= 140 || fakes.JSON(a.Totals) != fakes.JSON(b.Totals) {
		t.Fatalf("two samples of 0.5: %+v and %+v, want the same strict subset", a.Totals, b.Totals)
	}
	inSample := verify.Sampled("Entities", "7c9e6679-7425-40de-944b-e07fc1f90ae7", "execution:8204981199999_"+e03ID, 0.5)
	if got := a.Totals.Missing == 1; got != inSample {
		t.Errorf("missing %d, want the deleted doc reported exactly when its row is sampled (%v)", a.Totals.Missing, inSample)
	}
	if a.Totals.Orphans != 0 {
		t.Errorf("orphans %d: docs of rows outside the sample must not be judged", a.Totals.Orphans)
	}
}

func TestVerifyUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"verify", "--sample", "0"}, `bifrost-migrate: --sample "0": want a fraction F with 0 < F <= 1`},
		{[]string{"verify", "--sample", "1.5"}, `bifrost-migrate: --sample "1.5": want a fraction F with 0 < F <= 1`},
		{[]string{"verify", "--tables", "Users"}, `bifrost-migrate: --tables "Users": want Config, Entities or Relationships, comma-separated`},
		{[]string{"verify", "--execution-ttl", "forever"}, `bifrost-migrate: --execution-ttl "forever": want remaining, full or none`},
		{[]string{"verify", "--blob-threshold", "0"}, "bifrost-migrate: --blob-threshold \"0\": want a positive number of bytes\n"},
	} {
		f, _, errOut := newTestFactory(nil)
		if code := Execute(context.Background(), f, tc.args); code != ExitUsage {
			t.Errorf("%v: exit %d, want 2 (%s)", tc.args, code, errOut)
		}
		if !strings.HasPrefix(errOut.String(), tc.want) {
			t.Errorf("%v: stderr %q, want prefix %q", tc.args, errOut, tc.want)
		}
	}
}

// TestVerifyReadsInBulk proves verify does not read doc by doc: on 2,000
// generated executions (10,000 rows) it sends fewer than 200 requests to
// Cosmos DB.
func TestVerifyReadsInBulk(t *testing.T) {
	t.Parallel()
	e := newVerifyEnv(t)
	tw, bw := e.writers()
	gen := fixtures.GenerateOptions{N: 2000, Seed: 7, Base: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)}
	if _, err := fixtures.LoadGenerated(context.Background(), tw, bw, gen, fixtures.LoadOptions{TablePrefix: e.prefix}); err != nil {
		t.Fatal(err)
	}
	e.migrate()
	rec := recorder.New(nil)
	// Generated data has no Config table: a table verify is asked to
	// check must exist.
	code, stdout, r := e.verifyWith(rec, "--tables", "Entities,Relationships")
	if code != ExitOK {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
	if r.Totals.Matched != 2000 || r.Totals.DroppedIndex != 8000 {
		t.Errorf("totals %+v, want 2000 matched executions and 8000 dropped indexes", r.Totals)
	}
	cosmos := 0
	for _, req := range rec.Requests() {
		if !strings.HasPrefix(req.Path, "/"+azure.DevStorageAccount) {
			cosmos++
		}
	}
	if cosmos >= 200 || cosmos == 0 {
		t.Errorf("%d requests to Cosmos DB for 2,000 executions, want 1..199 (by method: %v)", cosmos, rec.ByMethod())
	}
	t.Logf("%d Cosmos DB requests, %d in all (%v)", cosmos, len(rec.Requests()), rec.ByMethod())
}

func TestVerifyJSONOutputAndNoSecrets(t *testing.T) {
	e := migratedFixtures(t)
	e.deleteDoc("executions", e03Scope, e03ID)
	code, stdout, stderr := e.cli("verify", "--database", e.db, "--table-prefix", e.prefix, "--blob-container", e.blobs,
		"--state-dir", e.stateDir, "--output", "json")
	if code != ExitPartial {
		t.Fatalf("exit %d, want 3: %s", code, stderr)
	}
	// stdout: the start-up status line, the line that says no run is in
	// the state directory, a progress line per phase, the status line
	// that counts the rows, the summary and the error line; stderr only
	// the error's sentence.
	lines := parseJSONLines(t, stdout)
	if len(lines) < 6 || lines[0].Type != ui.LineStatus || !strings.HasPrefix(lines[0].str("message"), "tables ") ||
		lines[1].Type != ui.LineStatus || !strings.HasPrefix(lines[1].str("message"), "no migration in "+e.stateDir+" (no state.json): verify uses --execution-ttl remaining") ||
		lines[len(lines)-3].Type != ui.LineStatus || lines[len(lines)-2].Type != ui.LineSummary || lines[len(lines)-1].Type != ui.LineError {
		t.Fatalf("stdout:\n%s", stdout)
	}
	for _, l := range lines[2 : len(lines)-3] {
		var p struct{ Type, Step string }
		if err := json.Unmarshal([]byte(l.Raw), &p); err != nil || p.Type != "progress" || p.Step == "" {
			t.Errorf("stdout line is not a progress object: %q", l.Raw)
		}
	}
	var r verify.Report
	if err := json.Unmarshal([]byte(lines[len(lines)-2].Raw), &r); err != nil {
		t.Fatal(err)
	}
	if r.OK || r.Totals.Missing != 1 || len(r.Missing) != 1 || r.Missing[0].ID != e03ID || len(r.Tables) != 28 ||
		r.NotMigrated != fixtureDeadLetters || r.DeadLetterFile != filepath.Join(e.stateDir, "dead-letter.jsonl") {
		t.Errorf("summary %s", stdout)
	}
	// No run wrote into the state directory: no line points at its
	// dead-letter file.
	wantErr := "verify found 6 row(s) not migrated (dead letters; `bifrost-migrate run --dry-run` lists them), 1 missing, 0 different and 0 orphan doc(s)"
	if stderr != "bifrost-migrate: "+wantErr+"\n" {
		t.Errorf("stderr %q, want only the error", stderr)
	}
	if last := lines[len(lines)-1]; last.str("message") != wantErr || string(last.Fields["exit"]) != "3" {
		t.Errorf("error line %s", last.Raw)
	}
	for _, secret := range []string{"AccountKey", "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1", "C2y6yDjf5"} {
		if strings.Contains(stdout+stderr, secret) {
			t.Errorf("output contains %q", secret)
		}
	}
}

// TestVerifyAfterRunEndToEnd runs the real pipeline: fixtures load, init,
// run, then verify; every expected doc matches and the counts are the
// inventory's, but verify exits 3 with a line that counts the rows run
// dead-lettered and names the file run listed them in. Then a doc is
// tampered with and verify fails with it.
func TestVerifyAfterRunEndToEnd(t *testing.T) {
	t.Parallel()
	e := newVerifyEnv(t)
	e.loadFixtures()
	code, _, stderr := e.cli("run", "--database", e.db, "--table-prefix", e.prefix, "--blob-container", e.blobs,
		"--state-dir", e.stateDir, "--quiet")
	if code != ExitPartial { // the fixtures have dead letters
		t.Fatalf("run: exit %d, want 3: %s", code, stderr)
	}
	code, stdout, r := e.verify()
	wantOnlyDeadLetters(t, "verify after run", code, stdout, r)
	if want := strings.ReplaceAll(cleanFixturesText, "STATE", e.stateDir); stdout != want {
		t.Fatalf("verify after run: stdout:\n%s\nwant:\n%s", stdout, want)
	}
	if !r.DeadLetterFileFound {
		t.Errorf("the report does not say run's dead-letter file %s exists", r.DeadLetterFile)
	}
	if r.Totals.Matched != 60 || r.Totals.Rows != 140 {
		t.Errorf("totals %+v", r.Totals)
	}
	doc := e.readDoc("entities", "GLOBAL", "config-smtp-port")
	doc["description"] = "tampered"
	e.replaceDoc("entities", doc)
	code, _, r = e.verify()
	if code != ExitPartial || len(r.Differences) != 1 || r.Differences[0].Path != "description" {
		t.Errorf("after tampering: exit %d differences %s, want 3 and the path description", code, fakes.JSON(r.Differences))
	}
}

// TestVerifyBeforeInit: verify against a database and a blob container
// that init has not created is exit 1 with one sentence that says to run
// init, not the SDK's dump of the service's answer.
func TestVerifyBeforeInit(t *testing.T) {
	t.Parallel()
	e := newVerifyEnv(t)
	e.loadFixtures()
	db, blobs := testenv.Name("noinit"), testenv.Name("noinitblobs")
	code, stdout, stderr := e.cli("verify", "--database", db, "--table-prefix", e.prefix, "--blob-container", blobs,
		"--state-dir", e.stateDir, "--quiet")
	want := "bifrost-migrate: database " + db + " does not exist in Cosmos DB " + testenv.Cosmos(t).Endpoint +
		", and blob container " + blobs + " does not exist in " + e.acct.BlobEndpoint + "; run `bifrost-migrate init` first\n"
	if code != ExitFatal || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 1 and stderr:\n%s", code, stdout, stderr, want)
	}
	// Without --quiet the start-up line comes first; the sentence is
	// still the last line and nothing else is printed.
	code, _, stderr = e.cli("verify", "--database", db, "--table-prefix", e.prefix, "--blob-container", blobs, "--state-dir", e.stateDir)
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if code != ExitFatal || len(lines) != 2 || lines[1]+"\n" != want || !strings.HasPrefix(lines[0], "verify: tables ") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	for _, dump := range []string{"RESPONSE", "ERROR CODE", "<?xml", "ContainerNotFound", "-----"} {
		if strings.Contains(stderr, dump) {
			t.Errorf("stderr holds the service's raw answer (%q):\n%s", dump, stderr)
		}
	}
}

// TestVerifyMissingSourceTable: a selected table that does not exist is
// exit 1 naming it and --tables, before anything is compared; leaving it
// out with --tables checks the others.
func TestVerifyMissingSourceTable(t *testing.T) {
	e := migratedFixtures(t)
	tw, _ := e.writers()
	if err := tw.DeleteTable(context.Background(), e.prefix+"Relationships"); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := e.cli("verify", "--database", e.db, "--table-prefix", e.prefix, "--blob-container", e.blobs,
		"--state-dir", e.stateDir, "--quiet")
	want := "bifrost-migrate: source table " + e.prefix + "Relationships does not exist in " + e.acct.TableEndpoint +
		"; check the tables connection, or choose tables with --tables\n"
	if code != ExitFatal || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 1 and stderr:\n%s", code, stdout, stderr, want)
	}
	code, stdout, r := e.verify("--tables", "Config,Entities")
	if code != ExitPartial || r.Totals.Missing+r.Totals.Different+r.Totals.Orphans != 0 || r.NotJudged != 0 || r.Totals.Rows != 140-73 {
		t.Errorf("--tables Config,Entities: exit %d totals %+v not judged %d:\n%s", code, r.Totals, r.NotJudged, stdout)
	}
}

// TestVerifyAfterRunWithADeadLetteredRow: one row run could not migrate
// (an int config whose value is not a number) makes verify exit 3 with a
// line that counts it and names run's dead-letter file; the report says
// so too (ok false, notMigrated 1).
func TestVerifyAfterRunWithADeadLetteredRow(t *testing.T) {
	t.Parallel()
	e := newVerifyEnv(t)
	e.loadFixtures()
	e.dropDeadLetterRows()
	tw, _ := e.writers()
	bad := []byte(`{"PartitionKey":"GLOBAL","RowKey":"config:smtp_retries","Type":"int","Value":"three"}`)
	if err := tw.UpsertBatch(context.Background(), e.prefix+"Config", "GLOBAL", [][]byte{bad}, []string{"config:smtp_retries"}); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := e.cli("run", "--database", e.db, "--table-prefix", e.prefix, "--blob-container", e.blobs,
		"--state-dir", e.stateDir, "--quiet")
	if code != ExitPartial {
		t.Fatalf("run: exit %d, want 3 (one dead letter): %s", code, stderr)
	}
	file := filepath.Join(e.stateDir, "dead-letter.jsonl")
	code, stdout, r := e.verify()
	if code != ExitPartial || r.OK || r.NotMigrated != 1 || r.DeadLetterFile != file || !r.DeadLetterFileFound ||
		r.Totals.Missing+r.Totals.Different+r.Totals.Orphans != 0 {
		t.Fatalf("exit %d ok %v not migrated %d file %q (found %v) totals %+v, want exit 3 for the one dead letter",
			code, r.OK, r.NotMigrated, r.DeadLetterFile, r.DeadLetterFileFound, r.Totals)
	}
	want := "not migrated: 1 row(s) are dead letters, not in Cosmos DB (DEAD-LETTER column); run listed them with their reasons in " + file + "\n" +
		"verify: 1 row(s) not migrated; 0 missing, 0 different, 0 orphan doc(s)\n"
	if !strings.HasSuffix(stdout, want) {
		t.Errorf("stdout does not end in\n%s\ngot:\n%s", want, stdout)
	}
	// The same through --output json and on stderr.
	code, stdout, stderr = e.cli("verify", "--database", e.db, "--table-prefix", e.prefix, "--blob-container", e.blobs,
		"--state-dir", e.stateDir, "--quiet", "--output", "json")
	var sum verify.Report
	lines := parseJSONLines(t, stdout)
	if len(lines) != 2 || lines[0].Type != ui.LineSummary || lines[1].Type != ui.LineError {
		t.Fatalf("--output json --quiet: stdout is not the summary and the error line:\n%s", stdout)
	}
	if err := json.Unmarshal([]byte(lines[0].Raw), &sum); err != nil || code != ExitPartial || sum.OK || sum.NotMigrated != 1 || sum.DeadLetterFile != file {
		t.Errorf("--output json: exit %d, %v:\n%s", code, err, stdout)
	}
	if got, want := lastLine(stderr), "bifrost-migrate: verify found 1 row(s) not migrated (dead letters; see "+file+"), 0 missing, 0 different and 0 orphan doc(s)"; got != want {
		t.Errorf("last stderr line\n%s\nwant\n%s", got, want)
	}
}
