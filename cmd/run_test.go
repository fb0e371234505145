package cmd

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // comparing blob contents
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/transform"
)

// End-to-end tests of `run` against the emulators. Each test works in
// names of its own: fixture tables under a fresh --table-prefix (a hidden
// flag for tests and side-by-side benchmarks), a fresh --database and a
// fresh --blob-container (hidden too), since the emulators are shared.

// goldenNow is the clock of the transform goldens and the inventory.
var goldenNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// secretMarker starts every secret value in the fixtures.
const secretMarker = "FAKE-SECRET"

type runEnv struct {
	t         *testing.T
	env       map[string]string
	prefix    string
	database  string
	container string
	stateDir  string
	tables    *azure.TableWriter
	blobs     *azure.BlobWriter
}

func newRunEnv(t *testing.T) *runEnv {
	t.Helper()
	e := &runEnv{
		t: t,
		env: map[string]string{
			"BIFROST_TABLES_CONNECTION": testenv.StorageConnection(t),
			"CosmosDBConnection":        testenv.CosmosConnection(t),
		},
		prefix:    testenv.Name("t"),
		database:  testenv.Name("db"),
		container: testenv.Name("blobs"),
		stateDir:  filepath.Join(t.TempDir(), "state"),
	}
	acct := testenv.Storage(t)
	var err error
	if e.tables, err = azure.NewTableWriter(acct, azure.Options{}); err != nil {
		t.Fatal(err)
	}
	if e.blobs, err = azure.NewBlobWriter(acct, e.container, azure.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(context.Background())
		for _, table := range fixtures.Tables() {
			_ = e.tables.DeleteTable(ctx, e.prefix+table)
		}
		_ = e.blobs.Delete(ctx)
	})
	return e
}

// load loads the fixtures and creates the containers (init).
func (e *runEnv) load() {
	e.t.Helper()
	if _, err := fixtures.Load(context.Background(), e.tables, e.blobs, fixtures.LoadOptions{TablePrefix: e.prefix}); err != nil {
		e.t.Fatal(err)
	}
	if code, _, stderr := e.cli("init"); code != 0 {
		e.t.Fatalf("init: exit %d: %s", code, stderr)
	}
}

// cli runs bifrost-migrate in-process with the test's names.
func (e *runEnv) cli(args ...string) (code int, stdout, stderr string) {
	f, out, errOut := newTestFactory(e.env)
	f.Now = func() time.Time { return goldenNow }
	full := []string{"--database", e.database}
	full = append(full, args...)
	if slices.Contains(args, "run") {
		full = append(full, "--table-prefix", e.prefix, "--blob-container", e.container, "--state-dir", e.stateDir)
	}
	code = Execute(context.Background(), f, full)
	return code, out.String(), errOut.String()
}

// summaryOf returns the {"type":"summary"} object of --output json
// output and checks that it is the only one.
func summaryOf(t *testing.T, stdout string) migrate.Summary {
	t.Helper()
	var (
		s     migrate.Summary
		found int
	)
	for _, line := range parseJSONLines(t, stdout) {
		if line.Type == ui.LineSummary {
			found++
			if err := json.Unmarshal([]byte(line.Raw), &s); err != nil {
				t.Fatal(err)
			}
		}
	}
	if found != 1 {
		t.Fatalf("%d summary objects in stdout:\n%s", found, stdout)
	}
	return s
}

// golden is a doc outcome of transform/testdata/golden.
type golden struct {
	Table        string          `json:"table"`
	PartitionKey string          `json:"partitionKey"`
	RowKey       string          `json:"rowKey"`
	Disposition  string          `json:"disposition"`
	Container    string          `json:"container"`
	ID           string          `json:"id"`
	Scope        string          `json:"scope"`
	DeadLetter   string          `json:"deadLetter"`
	Doc          json.RawMessage `json:"doc"`
}

func goldens(t *testing.T) []golden {
	t.Helper()
	files, err := filepath.Glob("../transform/testdata/golden/*/*.golden")
	if err != nil || len(files) == 0 {
		t.Fatalf("no goldens: %v", err)
	}
	var out []golden
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var g golden
		if err := json.Unmarshal(data, &g); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, g)
	}
	return out
}

// canonicalDoc returns the canonical JSON of a doc without ttl, the system
// properties and _migration.timestamp: the goldens were made from the
// fixture files, whose rows have no Timestamp; the emulator sets one. The
// provenance hash does not cover _migration, so it still must match.
func canonicalDoc(t *testing.T, raw []byte) (string, map[string]any) {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ttl", "_rid", "_self", "_etag", "_ts", "_attachments"} {
		delete(m, k)
	}
	mig, _ := m["_migration"].(map[string]any)
	if mig != nil {
		mig = maps(mig)
		delete(mig, "timestamp")
		m["_migration"] = mig
	}
	c, err := transform.Canonical(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(c), m
}

func maps(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// allDocs reads every doc of both containers, by container/scope/id.
func (e *runEnv) allDocs() map[string][]byte {
	e.t.Helper()
	client, err := azure.NewCosmosClient(testenv.Cosmos(e.t), azure.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	r, err := azure.NewDocReader(client, e.database)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, c := range []string{transform.ContainerEntities, transform.ContainerExecutions} {
		err := r.QueryAll(context.Background(), c, "SELECT * FROM c", nil, 0, func(doc []byte) error {
			var k struct{ ID, Scope string }
			if err := json.Unmarshal(doc, &k); err != nil {
				return err
			}
			out[c+"/"+k.Scope+"/"+k.ID] = doc
			return nil
		})
		if err != nil {
			e.t.Fatal(err)
		}
	}
	return out
}

// allBlobs returns the MD5 of every blob in the test's container.
func (e *runEnv) allBlobs() map[string][16]byte {
	e.t.Helper()
	c, err := azure.NewBlobContainerClient(testenv.Storage(e.t), e.container, azure.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string][16]byte{}
	pager := c.NewListBlobsFlatPager(nil)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			e.t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			resp, err := c.NewBlobClient(*b.Name).DownloadStream(context.Background(), nil)
			if err != nil {
				e.t.Fatal(err)
			}
			var buf bytes.Buffer
			_, err = buf.ReadFrom(resp.Body)
			resp.Body.Close()
			if err != nil {
				e.t.Fatal(err)
			}
			out[*b.Name] = md5.Sum(buf.Bytes()) //nolint:gosec
		}
	}
	return out
}

// dirSnapshot returns every file under dir with its bytes ("" → absent).
func dirSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if info.IsDir() {
			out[path+"/"] = info.Mode().String()
			return nil
		}
		data, err := os.ReadFile(path)
		out[path] = info.Mode().String() + " " + string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func assertNoSecrets(t *testing.T, what string, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if strings.Contains(s, secretMarker) {
			i := strings.Index(s, secretMarker)
			t.Errorf("%s shows a secret value: …%s…", what, s[max(0, i-80):min(len(s), i+60)])
		}
		for _, key := range []string{"Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1", "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEH"} {
			if strings.Contains(s, key) {
				t.Errorf("%s shows an account key", what)
			}
		}
	}
}

// The acceptance test of issue 5: init, run, then every doc read back is
// the golden doc, every blob a doc names exists, and the summary's counts
// are the fixture inventory.
func TestRunEndToEndFixtures(t *testing.T) {
	e := newRunEnv(t)
	e.load()

	code, stdout, stderr := e.cli("--output", "json", "run")
	if code != ExitPartial {
		t.Fatalf("run: exit %d, want 3 (the fixtures have dead letters)\n%s", code, stderr)
	}
	s := summaryOf(t, stdout)
	inv, err := fixtures.InventoryCounts()
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Kinds(); !reflect.DeepEqual(got, inv) {
		t.Errorf("summary counts:\n got %v\nwant %v", got, inv)
	}
	if s.BlobsUploaded != 3 || !s.Complete || s.DeadLetters != 6 {
		t.Errorf("blobs uploaded %d, complete %v, dead letters %d; want 3, true, 6", s.BlobsUploaded, s.Complete, s.DeadLetters)
	}
	if !strings.Contains(stdout, `{"type":"progress","table":"Relationships"`) {
		t.Errorf("no progress lines in --output json:\n%s", stdout)
	}
	dl, err := os.ReadFile(filepath.Join(e.stateDir, migrate.DeadLetterFile))
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecrets(t, "run output", stdout, stderr, string(dl))

	docs := e.allDocs()
	var want int
	for _, g := range goldens(t) {
		if g.Disposition != "doc" {
			continue
		}
		want++
		raw, ok := docs[g.Container+"/"+g.Scope+"/"+g.ID]
		if !ok {
			t.Errorf("%s %s/%s: doc %s/%s not in Cosmos DB", g.Table, g.PartitionKey, g.RowKey, g.Container, g.ID)
			continue
		}
		gotC, got := canonicalDoc(t, raw)
		wantC, _ := canonicalDoc(t, g.Doc)
		if gotC != wantC {
			t.Errorf("%s %s/%s: doc differs from the golden:\n got %s\nwant %s", g.Table, g.PartitionKey, g.RowKey, gotC, wantC)
		}
		if ts, _ := got["_migration"].(map[string]any); ts == nil {
			t.Errorf("%s: no _migration", g.ID)
		}
		var mig struct {
			Migration struct {
				Timestamp string `json:"timestamp"`
			} `json:"_migration"`
		}
		_ = json.Unmarshal(raw, &mig)
		if _, ok := transform.ParseTimestamp(mig.Migration.Timestamp); !ok || len(mig.Migration.Timestamp) != len(transform.TimestampLayout) {
			t.Errorf("%s: _migration.timestamp %q is not in the timestamp format", g.ID, mig.Migration.Timestamp)
		}
	}
	if len(docs) != want || want != 60 {
		t.Errorf("%d docs in Cosmos DB, %d golden docs (want 60)", len(docs), want)
	}

	blobs := e.allBlobs()
	for key, raw := range docs {
		var d map[string]any
		_ = json.Unmarshal(raw, &d)
		for _, p := range []string{"resultBlobPath", "logsBlobPath", "variablesBlobPath", "snapshotBlobPath"} {
			if path, ok := d[p].(string); ok {
				if _, exists := blobs[path]; !exists {
					t.Errorf("%s: %s %q does not exist", key, p, path)
				}
			}
		}
	}
	if len(blobs) != 12 {
		t.Errorf("%d blobs, want 9 fixtures + 3 uploaded", len(blobs))
	}

	// A second run finds the state complete and does nothing.
	before := e.allDocs()
	code, stdout, stderr = e.cli("run")
	if code != ExitPartial || !strings.Contains(stderr, "already completed") || !strings.Contains(stdout, "already complete") {
		t.Errorf("rerun: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !reflect.DeepEqual(before, e.allDocs()) {
		t.Errorf("a rerun of a complete run changed docs")
	}
}

// Each kind of bad input is one dead-letter line with its exact reason;
// the rest of the run is unaffected; exit 3; no secret anywhere.
func TestRunBadInputDeadLetters(t *testing.T) {
	e := newRunEnv(t)
	e.load()
	ctx := context.Background()
	// The sixth kind, a doc over 2 MB, cannot come from Azurite: it
	// refuses entities whose JSON request is over 1 MiB of UTF-8, and no
	// transform rule grows a row's JSON to twice its size (the real service
	// counts strings as UTF-16, so control characters, 2 bytes there and 6
	// in JSON, can). migrate's TestRunDeadLetters covers it with an
	// in-memory source, through the same pipeline.
	// A different blob already where an inline result > 32 KB must go.
	conflict := "84999ecb-cfa4-5a6e-8ce7-d517dfb1372b/result.json"
	if err := e.blobs.Upload(ctx, conflict, []byte(`{"written":"by someone else"}`)); err != nil {
		t.Fatal(err)
	}

	// The dry run predicts the same.
	code, stdout, stderr := e.cli("--output", "json", "run", "--dry-run", "--show", "3")
	if code != ExitPartial {
		t.Fatalf("dry run: exit %d\n%s", code, stderr)
	}
	plan := summaryOf(t, stdout)
	assertNoSecrets(t, "dry-run output", stdout, stderr)

	code, stdout, stderr = e.cli("run")
	if code != ExitPartial {
		t.Fatalf("run: exit %d, want 3\n%s", code, stderr)
	}
	data, err := os.ReadFile(filepath.Join(e.stateDir, migrate.DeadLetterFile))
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecrets(t, "run output and dead letters", stdout, stderr, string(data))
	if !strings.Contains(string(data), `"Value":"***"`) {
		t.Errorf("redacted properties are not shown as ***")
	}
	lines := map[string]migrate.DeadLetter{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		var dl migrate.DeadLetter
		if err := json.Unmarshal(sc.Bytes(), &dl); err != nil {
			t.Fatalf("dead-letter line %q: %v", sc.Text(), err)
		}
		if _, dup := lines[dl.RowKey]; dup {
			t.Errorf("%s dead-lettered twice", dl.RowKey)
		}
		lines[dl.RowKey] = dl
	}
	for rk, reason := range map[string]string{
		"execution:8205514467878_9b653c33-0cdd-5bd2-8422-0ed441813a00": "property InputData is not valid JSON: invalid JSON at offset 1",
		"execution:8205605199999_e4b0f191-3319-571d-9430-9e4f6725238b": `ExecutionId property "2fa98a31-c98e-5659-99cb-a7528e125759" differs from the RowKey's execution id "e4b0f191-3319-571d-9430-9e4f6725238b"`,
		"config:smtp_port":   `id collision: container entities, scope "GLOBAL", id "config-smtp-port" is already taken by an earlier row`,
		"config:retry_limit": `config value is not an integer (Type "int")`,
		"execution:8205093999999_84999ecb-cfa4-5a6e-8ce7-d517dfb1372b": "blob " + conflict + " already exists with different content",
	} {
		if got := lines[rk].Reason; got != reason {
			t.Errorf("%s: reason %q, want %q", rk, got, reason)
		}
	}
	if len(lines) != 7 { // the five above + the fixtures' bool and json config rows
		t.Errorf("%d dead letters, want 7: %v", len(lines), slices.Collect(mapsKeys(lines)))
	}
	// The rest is unaffected: the inventory with the two extra rows.
	code, stdout, _ = e.cli("--output", "json", "run", "--restart", "--quiet")
	if code != ExitPartial {
		t.Fatalf("rerun --restart: exit %d", code)
	}
	s := summaryOf(t, stdout)
	want, err := fixtures.InventoryCounts()
	if err != nil {
		t.Fatal(err)
	}
	want["Entities"]["execution"] = map[string]int64{"doc": 17, "dead-letter": 3, "expired": 1}
	if got := s.Kinds(); !reflect.DeepEqual(got, want) {
		t.Errorf("counts:\n got %v\nwant %v", got, want)
	}
	if got := plan.Kinds(); !reflect.DeepEqual(got, want) {
		t.Errorf("dry-run counts:\n got %v\nwant %v", got, want)
	}
	if n := len(e.allDocs()); n != 59 { // one execution fewer than the fixtures' 60
		t.Errorf("%d docs, want 59", n)
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// A dry run leaves the Cosmos DB account, the blob container and the state
// folder byte for byte as they were, and plans the counts the real run
// has.
func TestRunDryRunWritesNothing(t *testing.T) {
	e := newRunEnv(t)
	e.load()

	snapshot := func() (map[string][]byte, map[string][16]byte, map[string]string) {
		return e.allDocs(), e.allBlobs(), dirSnapshot(t, filepath.Dir(e.stateDir))
	}
	docs0, blobs0, dir0 := snapshot()
	code, stdout, stderr := e.cli("--output", "json", "run", "--dry-run", "--show", "2")
	if code != ExitPartial {
		t.Fatalf("dry run: exit %d\n%s", code, stderr)
	}
	plan := summaryOf(t, stdout)
	docs1, blobs1, dir1 := snapshot()
	if !reflect.DeepEqual(docs0, docs1) || !reflect.DeepEqual(blobs0, blobs1) || !reflect.DeepEqual(dir0, dir1) {
		t.Fatalf("the dry run wrote something")
	}
	if _, err := os.Stat(e.stateDir); !os.IsNotExist(err) {
		t.Errorf("the dry run created the state directory")
	}
	p := plan.Plan
	if p == nil || p.CollisionCount != 1 || p.SanitizedCount != 2 || p.ResultsToBlob != 1 || len(p.DeadLetters) != 6 || p.EstimatedRU == 0 || len(p.Samples) == 0 {
		t.Errorf("plan: %+v", p)
	}
	assertNoSecrets(t, "the plan", stdout, stderr)

	// The text plan too.
	code, text, _ := e.cli("run", "--dry-run", "--show", "1")
	for _, want := range []string{"DRY RUN: nothing was written", "id collisions: 1", "config-smtp-port", "sanitized ids: 2",
		"results that would move to blobs: 1 (40960 bytes)", "estimated write cost:", "samples (redacted):", `"value": "***"`} {
		if !strings.Contains(text, want) {
			t.Errorf("text plan lacks %q:\n%s", want, text)
		}
	}
	assertNoSecrets(t, "the text plan", text)
	if code != ExitPartial {
		t.Errorf("text dry run: exit %d", code)
	}

	code, stdout, stderr = e.cli("--output", "json", "run")
	if code != ExitPartial {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	real := summaryOf(t, stdout)
	if !reflect.DeepEqual(plan.Kinds(), real.Kinds()) || !reflect.DeepEqual(plan.Warnings, real.Warnings) ||
		plan.BlobsUploaded != real.BlobsUploaded || plan.BlobBytes != real.BlobBytes || plan.DeadLetters != real.DeadLetters {
		t.Errorf("plan and run differ:\nplan %+v\n run %+v", plan, real)
	}

	// After a real run, a dry run still changes nothing (state included).
	docs0, blobs0, dir0 = snapshot()
	if code, _, stderr := e.cli("run", "--dry-run"); code != ExitPartial {
		t.Fatalf("dry run after run: exit %d\n%s", code, stderr)
	}
	docs1, blobs1, dir1 = snapshot()
	if !reflect.DeepEqual(docs0, docs1) || !reflect.DeepEqual(blobs0, blobs1) || !reflect.DeepEqual(dir0, dir1) {
		t.Errorf("the dry run after a run wrote something")
	}
}

func TestRunNeedsInit(t *testing.T) {
	e := newRunEnv(t)
	if _, err := fixtures.Load(context.Background(), e.tables, e.blobs, fixtures.LoadOptions{TablePrefix: e.prefix}); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := e.cli("run")
	// Loading the fixtures created the blob container.
	want := "bifrost-migrate: database " + e.database + " does not exist in Cosmos DB " + testenv.Cosmos(t).Endpoint + "; run `bifrost-migrate init` first"
	if code != ExitFatal || stdout != "" || lastLine(stderr) != want {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 1 and last line\n%s", code, stdout, stderr, want)
	}
	if _, err := os.Stat(e.stateDir); !os.IsNotExist(err) {
		t.Errorf("a run that could not start created the state directory")
	}
}

// lastLine returns the last line of s (without its newline).
func lastLine(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return s[strings.LastIndex(s, "\n")+1:]
}

// TestRunMissingSourceTable: a selected table that does not exist stops
// run before anything is read, written or saved: exit 1 with a sentence
// naming the table and --tables, and no "run again to resume", which
// could not help.
func TestRunMissingSourceTable(t *testing.T) {
	e := newRunEnv(t)
	e.load()
	if err := e.tables.DeleteTable(context.Background(), e.prefix+"Entities"); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"run"}, {"run", "--dry-run"}, {"--output", "json", "run"}} {
		code, stdout, stderr := e.cli(args...)
		sentence := "source table " + e.prefix + "Entities does not exist in " + testenv.Storage(t).TableEndpoint +
			"; check the tables connection, or choose tables with --tables"
		want := "bifrost-migrate: " + sentence
		if code != ExitFatal || lastLine(stderr) != want {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit 1 and last line\n%s", args, code, stderr, want)
		}
		json := args[0] == "--output"
		if json {
			// stdout: the start-up status line and the error line.
			lines := checkJSONRun(t, "run --output json", code, stdout, stderr, false)
			if len(lines) != 2 || lines[0].Type != ui.LineStatus || lines[1].str("message") != sentence {
				t.Errorf("%v: stdout:\n%s", args, stdout)
			}
		}
		if strings.Contains(stdout+stderr, "run again") || !json && stdout != "" {
			t.Errorf("%v: stdout %q, stderr %q: nothing may be printed but the error", args, stdout, stderr)
		}
		if _, err := os.Stat(e.stateDir); !os.IsNotExist(err) {
			t.Errorf("%v: a run that could not start created the state directory", args)
		}
	}
}

// TestRunSummaryLastLine: the last line of run's summary suggests running
// again only after an interruption or a transient failure, never after an
// error that must be fixed first, and a failed dry run does not end in
// its plan.
func TestRunSummaryLastLine(t *testing.T) {
	part := migrate.Summary{RunID: "r1", Tables: []migrate.TableSummary{{Table: "Config"}}}
	done := part
	done.Complete = true
	dry := migrate.Summary{DryRun: true, Tables: part.Tables, Plan: &migrate.Plan{}}
	dryDone := dry
	dryDone.Complete = true
	// A checkpoint that could not be saved (issue 37): the summary names
	// the one state.json holds, never "the state is saved".
	unsaved := part
	unsaved.SaveFailed, unsaved.LastSaved = true, &migrate.SavedCheckpoint{Updated: time.Date(2026, 11, 21, 13, 0, 0, 0, time.FixedZone("", 3600)), Rows: 1200}
	unsavedNone := part
	unsavedNone.SaveFailed, unsavedNone.LastSaved = true, &migrate.SavedCheckpoint{}
	const lastSaved = "run r1 not complete: its last checkpoint could not be saved; state.json holds the one of 2026-11-21T12:00:00Z (1200 rows done), from which a rerun resumes"
	for _, tc := range []struct {
		name string
		s    migrate.Summary
		end  ending
		want string
	}{
		{"complete", done, endedDone, "run r1 complete"},
		{"interrupted", part, endedInterrupted, "run r1 not complete: run again to resume"},
		{"retries exhausted", part, endedTransient, "run r1 not complete: run again to resume"},
		{"missing table", part, endedFailed, "run r1 not complete: stopped by the error reported on stderr (the state is saved)"},
		{"save failed", unsaved, endedFailed, lastSaved},
		{"save failed, interrupted", unsaved, endedInterrupted, lastSaved},
		{"save failed, retries exhausted", unsaved, endedTransient, lastSaved},
		{"no checkpoint saved", unsavedNone, endedFailed, "run r1 not complete: no checkpoint could be saved; a rerun starts over"},
		{"dry run failed", dry, endedFailed, "dry run not complete: stopped by the error reported on stderr"},
		{"dry run", dryDone, endedDone, "dead letters: 0"}, // a finished dry run ends with its plan
	} {
		var b bytes.Buffer
		if err := writeRunText(&b, tc.s, nil, 0, tc.end); err != nil {
			t.Fatal(err)
		}
		if got := lastLine(b.String()); got != tc.want {
			t.Errorf("%s: last line %q, want %q\n%s", tc.name, got, tc.want, b.String())
		}
	}
}

// A run with other options than the saved run's is a usage error (exit
// 2) naming the option that differs, as the flag the user types.
func TestRunOtherOptionsThanTheSavedRun(t *testing.T) {
	e := newRunEnv(t)
	e.load()
	if code, stdout, stderr := e.cli("--quiet", "run", "--execution-ttl", "full"); code != ExitPartial {
		t.Fatalf("first run: exit %d, want 3 (the fixtures' dead letters)\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr := e.cli("--quiet", "run", "--execution-ttl", "remaining")
	if code != ExitUsage {
		t.Errorf("second run: exit %d, want %d", code, ExitUsage)
	}
	want := "bifrost-migrate: the saved run in " + e.stateDir + " used --execution-ttl full, this run --execution-ttl remaining; " +
		"run with the saved options to resume, or use --restart to start over\nRun 'bifrost-migrate run --help' for usage.\n"
	if stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, want)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing", stdout)
	}
	// The saved options resume (here: the run is already complete).
	if code, _, stderr := e.cli("--quiet", "run", "--execution-ttl", "full"); code != ExitPartial {
		t.Errorf("run with the saved options: exit %d, want 3: %s", code, stderr)
	}
}

func TestOptionMismatch(t *testing.T) {
	const target = "cosmos=http://127.0.0.1:8081/;database=bifrost;tables=http://127.0.0.1:10002/devstoreaccount1;blobs=http://127.0.0.1:10000/devstoreaccount1/execution-data"
	fp := func(transformPart, tables, prefix, target string) string {
		return transformPart + ";tables=" + tables + ";table-prefix=" + prefix + ";target=" + target
	}
	const (
		defaults = "blob-threshold=32768;execution-ttl=remaining;relationships=keep;strict=false"
		all      = "Config,Entities,Relationships"
		tail     = "; run with the saved options to resume, or use --restart to start over"
	)
	for _, tc := range []struct {
		name          string
		saved, wanted string
		want          string
	}{
		{"execution-ttl", fp("blob-threshold=32768;execution-ttl=full;relationships=keep;strict=false", all, "", target), fp(defaults, all, "", target),
			"the saved run in .bifrost-migrate used --execution-ttl full, this run --execution-ttl remaining" + tail},
		{"strict, relationships and blob threshold", fp(defaults, all, "", target), fp("blob-threshold=1000;execution-ttl=remaining;relationships=migrate;strict=true", all, "", target),
			"the saved run in .bifrost-migrate used --blob-threshold 32768, --relationships keep and no --strict, this run --blob-threshold 1000, --relationships migrate and --strict" + tail},
		{"tables and prefix", fp(defaults, all, "", target), fp(defaults, "Entities", "t1", target),
			`the saved run in .bifrost-migrate used --tables Config,Entities,Relationships and --table-prefix "", this run --tables Entities and --table-prefix t1` + tail},
		{"target", fp(defaults, all, "", target), fp(defaults, all, "", "cosmos=https://prod.documents.azure.com:443/;database=bifrost2;tables=https://prodacct.table.core.windows.net;blobs=https://prodacct.blob.core.windows.net/execution-data"),
			"the saved run in .bifrost-migrate used Cosmos DB http://127.0.0.1:8081/, --database bifrost, tables account http://127.0.0.1:10002/devstoreaccount1 and blob container http://127.0.0.1:10000/devstoreaccount1/execution-data, " +
				"this run Cosmos DB https://prod.documents.azure.com:443/, --database bifrost2, tables account https://prodacct.table.core.windows.net and blob container https://prodacct.blob.core.windows.net/execution-data" + tail},
	} {
		fe := &migrate.FingerprintError{Dir: ".bifrost-migrate", Saved: tc.saved, Wanted: tc.wanted}
		if got := optionMismatch(fe); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

func TestRunUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--concurrency", "0"},
		{"run", "--show", "2"},
		{"run", "--tables", "Users"},
		{"run", "--execution-ttl", "forever"},
		{"run", "--relationships", "drop"},
		{"run", "--max-errors", "-1"},
		{"run", "--dry-run", "--restart"},
	} {
		f, _, errOut := newTestFactory(nil)
		if code := Execute(context.Background(), f, args); code != ExitUsage {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
}

func (e *runEnv) binaryArgs(args ...string) []string {
	full := []string{"--database", e.database}
	full = append(full, args...)
	return append(full, "--table-prefix", e.prefix, "--blob-container", e.container, "--state-dir", e.stateDir)
}

func (e *runEnv) environ() []string {
	env := os.Environ()
	for k, v := range e.env {
		env = append(env, k+"="+v)
	}
	return env
}

// Progress bars are drawn on a terminal (a pty from script(1)) and not
// when stderr is a file.
func TestRunProgressBarsOnlyOnATerminal(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) from util-linux is not installed: no pty to show the bars on")
	}
	e := newRunEnv(t)
	e.load()
	bin := testenv.Build(t)

	quoted := []string{bin}
	for _, a := range e.binaryArgs("run", "--dry-run") {
		quoted = append(quoted, "'"+a+"'")
	}
	// script runs the command on a pty and copies what it draws to stdout.
	cmd := exec.Command(script, "-qefc", strings.Join(quoted, " "), "/dev/null")
	cmd.Env = e.environ()
	out, _ := cmd.CombinedOutput()
	for _, want := range []string{"Config", "Entities", "Relationships", "rows/s", "100%", "34/34", "73/73"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("terminal output lacks %q:\n%s", want, out)
		}
	}

	// stderr to a file: no bars.
	errFile := filepath.Join(t.TempDir(), "stderr")
	f, err := os.Create(errFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(bin, e.binaryArgs("run", "--dry-run")...)
	cmd.Env, cmd.Stderr = e.environ(), f
	_, _ = cmd.Output()
	f.Close()
	stderr, _ := os.ReadFile(errFile)
	if bytes.Contains(stderr, []byte("rows/s")) || bytes.Contains(stderr, []byte("\r")) || bytes.Contains(stderr, []byte("%")) {
		t.Errorf("bars drawn into a file:\n%q", stderr)
	}
}

// SIGINT exits 130 with the state saved; a rerun resumes and finishes, and
// verify finds nothing missing, different or orphaned.
func TestRunSIGINTThenResume(t *testing.T) {
	t.Parallel()
	signalThenResume(t, syscall.SIGINT)
}

// SIGHUP (an ssh session that drops) ends run as SIGINT does (issue 37):
// the summary, the state saved, exit 130, and a rerun that resumes and
// ends with verify clean.
func TestRunSIGHUPThenResume(t *testing.T) {
	t.Parallel()
	signalThenResume(t, syscall.SIGHUP)
}

// signalThenResume sends sig to the built binary's run once a checkpoint
// is saved and the run is not done, and checks that the run ends with its
// summary and exit 130 and that a rerun resumes it to a clean verify.
func signalThenResume(t *testing.T, sig syscall.Signal) {
	e := newRunEnv(t)
	cmd, stdout, stderr := startRunToACheckpoint(t, e, 7)
	bin := cmd.Path
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != ExitInterrupted {
		t.Fatalf("after %v: exit %d (%v), want 130\n%s", sig, code, err, stderr.String())
	}
	if want := "bifrost-migrate: interrupted: state saved in " + e.stateDir + "; run again to resume\n"; !strings.HasSuffix(stderr.String(), want) {
		t.Errorf("after %v, stderr does not end with %q:\n%s", sig, want, stderr.String())
	}
	st, err := migrate.LoadState(e.stateDir)
	if err != nil || st == nil || st.Done {
		t.Fatalf("state after %v: %+v, %v", sig, st, err)
	}
	// The summary, on stdout, ends saying the run can be resumed.
	if want := "run " + st.RunID + " not complete: run again to resume"; lastLine(stdout.String()) != want || !strings.Contains(stdout.String(), "Entities") {
		t.Errorf("after %v, stdout is not the summary ending %q:\n%s", sig, want, stdout.String())
	}

	stdout.Reset()
	stderr.Reset()
	cmd = exec.Command(bin, e.binaryArgs("--output", "json", "run", "--tables", "Entities,Relationships")...)
	cmd.Env, cmd.Stdout, cmd.Stderr = e.environ(), stdout, stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("rerun: %v\n%s", err, stderr.String())
	}
	// With --output json the status line is on stdout.
	if !strings.Contains(stdout.String(), `{"type":"status","message":"resuming run `+st.RunID) {
		t.Errorf("the rerun does not say it resumes:\n%s", stdout.String())
	}
	s := summaryOf(t, stdout.String())
	if !s.Resumed || !s.Complete || s.Tables[0].Rows != 3000 || s.Tables[1].Rows != 12000 {
		t.Errorf("summary after resume: %+v", s)
	}

	verifyArgs := []string{"--database", e.database, "verify", "--tables", "Entities,Relationships", "--table-prefix", e.prefix, "--blob-container", e.container}
	cmd = exec.Command(bin, verifyArgs...)
	cmd.Env = e.environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("verify after the resumed run: %v\n%s", err, out)
	}
}

// startRunToACheckpoint loads 3,000 generated executions (seed) into e,
// runs init, then starts the built binary's run of Entities and
// Relationships one doc at a time and returns once a checkpoint is saved
// and the run is not done: the moment the kill and save-failure tests
// act at. It kills the run and fails t when no checkpoint comes within
// 60 s.
func startRunToACheckpoint(t *testing.T, e *runEnv, seed uint64) (cmd *exec.Cmd, stdout, stderr *bytes.Buffer) {
	t.Helper()
	gen := fixtures.GenerateOptions{N: 3000, Seed: seed, Base: time.Now().UTC().Truncate(24 * time.Hour)}
	if _, err := fixtures.LoadGenerated(context.Background(), e.tables, e.blobs, gen, fixtures.LoadOptions{TablePrefix: e.prefix}); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := e.cli("init"); code != 0 {
		t.Fatalf("init: %s", stderr)
	}
	bin := testenv.Build(t)
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	cmd = exec.Command(bin, e.binaryArgs("run", "--concurrency", "1", "--tables", "Entities,Relationships")...)
	cmd.Env, cmd.Stdout, cmd.Stderr = e.environ(), stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := migrate.LoadState(e.stateDir)
		if err == nil && st != nil && st.Tables[0].Rows > 0 {
			return cmd, stdout, stderr
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no checkpoint after 60 s: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
