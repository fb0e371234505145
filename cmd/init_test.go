package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/bifrost/bifrost-migrate/azure"
	provision "github.com/bifrost/bifrost-migrate/init"
	"github.com/bifrost/bifrost-migrate/internal/recorder"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
)

// initEnv is one integration test's world: a fresh database name and a
// fresh blob container name in the shared emulators, and a recording
// transport that sees every request init sends.
type initEnv struct {
	t    *testing.T
	env  map[string]string
	db   string // 14 characters, like the placeholder dbXXXXXXXXXXXX
	blob string // 16 characters, like the placeholder blobXXXXXXXXXXXX
	rec  *recorder.Transport
}

func newInitEnv(t *testing.T) *initEnv {
	t.Helper()
	return &initEnv{
		t: t,
		env: map[string]string{
			"CosmosDBConnection":        testenv.CosmosConnection(t),
			"BIFROST_TABLES_CONNECTION": testenv.StorageConnection(t),
		},
		db:   testenv.Name("db"),
		blob: testenv.Name("blob"),
		rec:  recorder.New(nil),
	}
}

// run runs `bifrost-migrate init --database <db> args...` in-process.
func (e *initEnv) run(args ...string) (code int, stdout, stderr string) {
	e.t.Helper()
	f, out, errOut := newTestFactory(e.env)
	f.Transport = e.rec
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code = Execute(ctx, f, append([]string{"init", "--database", e.db}, args...))
	return code, out.String(), errOut.String()
}

// expand replaces the placeholders of an expected output with the test's
// names, which have the placeholders' lengths, so columns stay aligned.
func (e *initEnv) expand(s string) string {
	return strings.NewReplacer("dbXXXXXXXXXXXX", e.db, "blobXXXXXXXXXXXX", e.blob).Replace(s)
}

// layoutFile writes the built-in definitions with the blob container
// execution-data renamed to the test's own (the only change), so that tests
// sharing one Azurite do not see each other's blob container.
func (e *initEnv) layoutFile() string {
	e.t.Helper()
	data := bytes.Replace(provision.DefaultLayoutJSON(), []byte(`"execution-data"`), []byte(`"`+e.blob+`"`), 1)
	if bytes.Equal(data, provision.DefaultLayoutJSON()) {
		e.t.Fatal("built-in definitions do not name execution-data")
	}
	path := filepath.Join(e.t.TempDir(), "bifrost.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		e.t.Fatal(err)
	}
	return path
}

func (e *initEnv) statusLine() string {
	storage := testenv.Storage(e.t)
	return "init: Cosmos DB " + testenv.Cosmos(e.t).Endpoint + ` database "` + e.db + `" (account key), blobs ` +
		storage.BlobEndpoint + " (account devstoreaccount1, shared key)\n"
}

// statusJSON is statusLine as init prints it with --output json: a status
// line on stdout.
func (e *initEnv) statusJSON() string {
	msg, err := json.Marshal(strings.TrimSuffix(strings.TrimPrefix(e.statusLine(), "init: "), "\n"))
	if err != nil {
		e.t.Fatal(err)
	}
	return `{"type":"status","message":` + string(msg) + "}\n"
}

// assertNoWrites fails unless every recorded request since the last Reset
// was a GET, and there was at least one (the recorder was in the path).
func (e *initEnv) assertNoWrites() {
	e.t.Helper()
	if w := e.rec.Writes(); len(w) != 0 {
		e.t.Errorf("init wrote: %v (requests by method: %v)", w, e.rec.ByMethod())
	}
	if e.rec.Count(http.MethodGet) == 0 {
		e.t.Errorf("no GET recorded: the recording transport was not used")
	}
}

func cosmosClient(t *testing.T) *azcosmos.Client {
	t.Helper()
	c, err := azure.NewCosmosClient(testenv.Cosmos(t), azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// readContainer reads a container straight from the emulator.
func readContainer(t *testing.T, db, id string) azcosmos.ContainerProperties {
	t.Helper()
	cc, err := cosmosClient(t).NewContainer(db, id)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cc.Read(context.Background(), nil)
	if err != nil {
		t.Fatalf("read container %s/%s: %v", db, id, err)
	}
	return *resp.ContainerProperties
}

// drift changes a container behind init's back, with the SDK.
func drift(t *testing.T, db, id string, change func(p *azcosmos.ContainerProperties)) {
	t.Helper()
	p := readContainer(t, db, id)
	change(&p)
	cc, _ := cosmosClient(t).NewContainer(db, id)
	if _, err := cc.Replace(context.Background(), p, nil); err != nil {
		t.Fatalf("drift %s: %v", id, err)
	}
}

// assertMatchesDefinitions reads every container of the layout file from
// the emulator and checks it is semantically its definition.
func assertMatchesDefinitions(t *testing.T, db, file string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	l, err := provision.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	cosmos := azure.NewProvisionCosmos(cosmosClient(t))
	for _, want := range l.Containers {
		got, err := cosmos.ReadContainer(context.Background(), db, want.ID)
		if err != nil || got == nil {
			t.Fatalf("container %s: %v, %v", want.ID, got, err)
		}
		if d := provision.Diff(*got, want); len(d) != 0 {
			t.Errorf("container %s differs from its definition: %q", want.ID, d)
		}
		if !provision.SamePartitionKey(got.PartitionKey, want.PartitionKey) {
			t.Errorf("container %s: partition key %+v, want %+v", want.ID, got.PartitionKey, want.PartitionKey)
		}
	}
}

func blobContainerExists(t *testing.T, name string) bool {
	t.Helper()
	c, err := azure.NewBlobContainerClient(testenv.Storage(t), name, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetProperties(context.Background(), nil)
	var re *azcore.ResponseError
	switch {
	case err == nil:
		return true
	case errors.As(err, &re) && re.StatusCode == http.StatusNotFound:
		return false
	default:
		t.Fatalf("blob container %s: %v", name, err)
		return false
	}
}

func databaseExists(t *testing.T, name string) bool {
	t.Helper()
	ok, err := azure.NewProvisionCosmos(cosmosClient(t)).DatabaseExists(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

const freshTable = `RESOURCE        NAME              PARTITION KEY  TTL      ACTION
database        dbXXXXXXXXXXXX    -              -        create
container       entities          /scope         off      create
container       executions        /scope         1209600  create
blob container  blobXXXXXXXXXXXX  -              -        create
`

const unchangedTable = `RESOURCE        NAME              PARTITION KEY  TTL      ACTION
database        dbXXXXXXXXXXXX    -              -        unchanged
container       entities          /scope         off      unchanged
container       executions        /scope         1209600  unchanged
blob container  blobXXXXXXXXXXXX  -              -        unchanged
no changes
`

func TestInitCreatesEverythingThenSecondRunWritesNothing(t *testing.T) {
	e := newInitEnv(t)
	file := e.layoutFile()

	code, out, errOut := e.run("--containers", file)
	if code != 0 {
		t.Fatalf("first init: exit %d\n%s%s", code, out, errOut)
	}
	if want := e.expand(freshTable + "4 change(s) applied\n"); out != want {
		t.Errorf("first init stdout:\n%s\nwant:\n%s", out, want)
	}
	if errOut != e.statusLine() {
		t.Errorf("first init stderr:\n%q\nwant %q", errOut, e.statusLine())
	}
	assertMatchesDefinitions(t, e.db, file)
	if !blobContainerExists(t, e.blob) {
		t.Errorf("blob container %s was not created", e.blob)
	}

	e.rec.Reset()
	code, out, _ = e.run("--containers", file)
	if code != 0 {
		t.Fatalf("second init: exit %d\n%s", code, out)
	}
	if want := e.expand(unchangedTable); out != want {
		t.Errorf("second init stdout:\n%s\nwant:\n%s", out, want)
	}
	e.assertNoWrites()
	for _, path := range []string{"/dbs/" + e.db + "/colls/entities", "/dbs/" + e.db + "/colls/executions"} {
		if e.rec.CountPath(http.MethodGet, path) == 0 {
			t.Errorf("second init did not read %s", path)
		}
	}

	// The same with --output json: the status line and one summary
	// object on stdout, nothing on stderr, no writes.
	e.rec.Reset()
	code, out, errOut = e.run("--containers", file, "--output", "json")
	want := e.statusJSON() + summaryHead() + e.expand(`"database":"dbXXXXXXXXXXXX","dryRun":false,"changes":0,"resources":[`+
		`{"kind":"database","name":"dbXXXXXXXXXXXX","action":"unchanged"},`+
		`{"kind":"container","name":"entities","partitionKey":"/scope","defaultTtl":null,"action":"unchanged"},`+
		`{"kind":"container","name":"executions","partitionKey":"/scope","defaultTtl":1209600,"action":"unchanged"},`+
		`{"kind":"blob container","name":"blobXXXXXXXXXXXX","action":"unchanged"}]}`+"\n")
	if code != 0 || out != want || errOut != "" {
		t.Errorf("init --output json: exit %d\n%s\nwant:\n%s\nstderr: %q", code, out, want, errOut)
	}
	e.assertNoWrites()
}

// TestInitBuiltInDefinitions runs init without --containers. The blob
// container is the shared execution-data, which another test may have
// created already, so its action is create or unchanged; everything else
// is exact.
func TestInitBuiltInDefinitions(t *testing.T) {
	e := newInitEnv(t)
	e.blob = "execution-data"
	code, out, errOut := e.run("--output", "json", "--quiet")
	if code != 0 {
		t.Fatalf("init: exit %d\n%s%s", code, out, errOut)
	}
	head := summaryHead() + `"database":"` + e.db + `","dryRun":false,"changes":`
	body := `,"resources":[` +
		`{"kind":"database","name":"` + e.db + `","action":"create"},` +
		`{"kind":"container","name":"entities","partitionKey":"/scope","defaultTtl":null,"action":"create"},` +
		`{"kind":"container","name":"executions","partitionKey":"/scope","defaultTtl":1209600,"action":"create"},` +
		`{"kind":"blob container","name":"execution-data","action":"`
	if out != head+"4"+body+"create\"}]}\n" && out != head+"3"+body+"unchanged\"}]}\n" {
		t.Errorf("init --output json:\n%s", out)
	}
	e.rec.Reset()
	code, out, _ = e.run()
	if want := e.expand(`RESOURCE        NAME            PARTITION KEY  TTL      ACTION
database        dbXXXXXXXXXXXX  -              -        unchanged
container       entities        /scope         off      unchanged
container       executions      /scope         1209600  unchanged
blob container  execution-data  -              -        unchanged
no changes
`); code != 0 || out != want {
		t.Errorf("second init: exit %d\n%s\nwant:\n%s", code, out, want)
	}
	e.assertNoWrites()
}

func TestInitConvergesDriftedIndexingPolicy(t *testing.T) {
	e := newInitEnv(t)
	file := e.layoutFile()
	if code, out, errOut := e.run("--containers", file, "--quiet"); code != 0 {
		t.Fatalf("first init: exit %d\n%s%s", code, out, errOut)
	}
	drift(t, e.db, "executions", func(p *azcosmos.ContainerProperties) {
		ip := p.IndexingPolicy
		ip.IncludedPaths = slices.DeleteFunc(ip.IncludedPaths, func(x azcosmos.IncludedPath) bool { return x.Path == "/formId/*" })
		ip.ExcludedPaths = slices.DeleteFunc(ip.ExcludedPaths, func(x azcosmos.ExcludedPath) bool { return x.Path == "/result/*" })
		ip.ExcludedPaths = append(ip.ExcludedPaths, azcosmos.ExcludedPath{Path: "/logs/*"})
		ip.CompositeIndexes = [][]azcosmos.CompositeIndex{{{Path: "/status", Order: "ascending"}, {Path: "/startedAt", Order: "descending"}}}
	})
	const driftedTable = `RESOURCE        NAME              PARTITION KEY  TTL      ACTION
database        dbXXXXXXXXXXXX    -              -        unchanged
container       entities          /scope         off      unchanged
container       executions        /scope         1209600  update
blob container  blobXXXXXXXXXXXX  -              -        unchanged
executions: indexingPolicy.includedPaths: + /formId/*
executions: indexingPolicy.excludedPaths: - /logs/*
executions: indexingPolicy.excludedPaths: + /result/*
executions: indexingPolicy.compositeIndexes: - [/status ascending, /startedAt descending]
`
	// A dry run prints the difference and leaves the drift in place.
	e.rec.Reset()
	code, out, _ := e.run("--containers", file, "--dry-run", "--quiet")
	if want := e.expand(driftedTable + "dry run: 1 change(s) planned, nothing written\n"); code != 0 || out != want {
		t.Errorf("init --dry-run: exit %d\n%s\nwant:\n%s", code, out, want)
	}
	e.assertNoWrites()

	e.rec.Reset()
	code, out, _ = e.run("--containers", file, "--quiet")
	if want := e.expand(driftedTable + "1 change(s) applied\n"); code != 0 || out != want {
		t.Errorf("init: exit %d\n%s\nwant:\n%s", code, out, want)
	}
	if w, want := e.rec.Writes(), []recorder.Request{{Method: http.MethodPut, Path: "/dbs/" + e.db + "/colls/executions"}}; !slices.Equal(w, want) {
		t.Errorf("writes %v, want %v", w, want)
	}
	assertMatchesDefinitions(t, e.db, file)

	e.rec.Reset()
	if code, out, _ := e.run("--containers", file, "--quiet"); code != 0 || out != e.expand(unchangedTable) {
		t.Errorf("init after converging: exit %d\n%s", code, out)
	}
	e.assertNoWrites()
}

func TestInitConvergesDriftedTTL(t *testing.T) {
	e := newInitEnv(t)
	file := e.layoutFile()
	if code, out, errOut := e.run("--containers", file, "--quiet"); code != 0 {
		t.Fatalf("first init: exit %d\n%s%s", code, out, errOut)
	}
	drift(t, e.db, "executions", func(p *azcosmos.ContainerProperties) { p.DefaultTimeToLive = to.Ptr[int32](604800) })
	drift(t, e.db, "entities", func(p *azcosmos.ContainerProperties) { p.DefaultTimeToLive = to.Ptr[int32](-1) })

	e.rec.Reset()
	code, out, _ := e.run("--containers", file, "--quiet")
	want := e.expand(`RESOURCE        NAME              PARTITION KEY  TTL      ACTION
database        dbXXXXXXXXXXXX    -              -        unchanged
container       entities          /scope         off      update
container       executions        /scope         1209600  update
blob container  blobXXXXXXXXXXXX  -              -        unchanged
entities: defaultTtl: -1 -> off
executions: defaultTtl: 604800 -> 1209600
2 change(s) applied
`)
	if code != 0 || out != want {
		t.Errorf("init: exit %d\n%s\nwant:\n%s", code, out, want)
	}
	if got := e.rec.Writes(); len(got) != 2 {
		t.Errorf("writes %v, want 2 PUTs", got)
	}
	if ttl := readContainer(t, e.db, "entities").DefaultTimeToLive; ttl != nil {
		t.Errorf("entities defaultTtl = %d after init, want absent", *ttl)
	}
	if ttl := readContainer(t, e.db, "executions").DefaultTimeToLive; ttl == nil || *ttl != 1209600 {
		t.Errorf("executions defaultTtl = %v after init, want 1209600", ttl)
	}
	e.rec.Reset()
	if code, out, _ := e.run("--containers", file, "--quiet"); code != 0 || out != e.expand(unchangedTable) {
		t.Errorf("init after converging: exit %d\n%s", code, out)
	}
	e.assertNoWrites()
}

func TestInitRefusesPartitionKeyChange(t *testing.T) {
	e := newInitEnv(t)
	ctx := context.Background()
	client := cosmosClient(t)
	if _, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: e.db}, nil); err != nil {
		t.Fatal(err)
	}
	db, _ := client.NewDatabase(e.db)
	if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "entities",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/tenant"}, Kind: "Hash", Version: 2},
		IndexingPolicy:         &azcosmos.IndexingPolicy{Automatic: true, IndexingMode: "consistent", IncludedPaths: []azcosmos.IncludedPath{{Path: "/*"}}},
	}, nil); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := e.run("--containers", e.layoutFile())
	if code != ExitFatal {
		t.Errorf("exit %d, want 1", code)
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing", out)
	}
	want := e.statusLine() + `bifrost-migrate: container "entities": partition key is /tenant (Hash, version 2) in the account but /scope (Hash, version 2) in the definition; a partition key cannot be changed in place (create a new container and copy the data)` + "\n"
	if errOut != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", errOut, want)
	}
	// Nothing at all was written: not executions, not the blob container.
	e.assertNoWrites()
	if blobContainerExists(t, e.blob) {
		t.Errorf("blob container %s was created", e.blob)
	}
}

func TestInitDryRunOnEmptyAccountWritesNothing(t *testing.T) {
	e := newInitEnv(t)
	code, out, errOut := e.run("--containers", e.layoutFile(), "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if want := e.expand(freshTable + "dry run: 4 change(s) planned, nothing written\n"); out != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
	if want := e.statusLine() + "init: dry run, nothing was written\n"; errOut != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", errOut, want)
	}
	e.assertNoWrites()
	if databaseExists(t, e.db) {
		t.Errorf("database %s exists after a dry run", e.db)
	}
	if blobContainerExists(t, e.blob) {
		t.Errorf("blob container %s exists after a dry run", e.blob)
	}
}

func TestInitAgentPlatformExample(t *testing.T) {
	e := newInitEnv(t)
	file := filepath.Join("..", "init", "examples", "agent-platform.json")
	code, out, errOut := e.run("--containers", file, "--quiet")
	want := e.expand(`RESOURCE   NAME            PARTITION KEY  TTL       ACTION
database   dbXXXXXXXXXXXX  -              -         create
container  workflow_runs   /workflow_id   2592000   create
container  agent_sessions  /agent_id      7776000   create
container  metrics_daily   /metric_date   15552000  create
container  tool_calls      /tool_date     7776000   create
5 change(s) applied
`)
	if code != 0 || out != want {
		t.Fatalf("init: exit %d\n%s%s\nwant:\n%s", code, out, errOut, want)
	}
	assertMatchesDefinitions(t, e.db, file)
	// The composite indexes reached the service as defined.
	got := readContainer(t, e.db, "metrics_daily").IndexingPolicy.CompositeIndexes
	wantCI := [][]azcosmos.CompositeIndex{{{Path: "/workspace_id", Order: "ascending"}, {Path: "/metric_name", Order: "ascending"}, {Path: "/value", Order: "descending"}}}
	if !slices.EqualFunc(got, wantCI, slices.Equal) {
		t.Errorf("metrics_daily composite indexes %v, want %v", got, wantCI)
	}

	e.rec.Reset()
	code, out, _ = e.run("--containers", file, "--quiet")
	if !strings.HasSuffix(out, "\nno changes\n") || code != 0 || strings.Contains(out, "create") || strings.Contains(out, "update") {
		t.Errorf("second init: exit %d\n%s", code, out)
	}
	e.assertNoWrites()
}

// TestInitInvalidDefinitionsSendNothing: validation happens before any
// request, and an invalid file exits 2 without the hint about flags; a
// file that cannot be read is a usage error (the flag names it).
func TestInitInvalidDefinitionsSendNothing(t *testing.T) {
	file := filepath.Join(t.TempDir(), "layout.json")
	if err := os.WriteFile(file, []byte(`{"containers":[{"id":"runs","partitionKey":{"paths":["/run_id"]},"defaultTtl":0,
		"indexingPolicy":{"includedPaths":[{"path":"/*"}]}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := recorder.New(nil)
	f, out, errOut := newTestFactory(map[string]string{"CosmosDBConnection": "AccountEndpoint=http://127.0.0.1:1/;AccountKey=" + azure.EmulatorCosmosKey})
	f.Transport = rec
	code := Execute(context.Background(), f, []string{"init", "--containers", file})
	if code != ExitUsage {
		t.Errorf("exit %d, want 2", code)
	}
	want := "bifrost-migrate: " + file + ": invalid container definitions:\n" +
		`  container "runs": defaultTtl 0: must be absent (no expiry), -1 (expiry per item) or 1..2147483647 seconds` + "\n"
	if errOut.String() != want || out.Len() != 0 {
		t.Errorf("stdout %q\nstderr:\n%s\nwant:\n%s", out, errOut, want)
	}
	if r := rec.Requests(); len(r) != 0 {
		t.Errorf("requests sent: %v", r)
	}

	f, _, errOut = newTestFactory(nil)
	if code := Execute(context.Background(), f, []string{"init", "--containers", filepath.Join(t.TempDir(), "missing.json")}); code != ExitUsage ||
		!strings.HasSuffix(errOut.String(), "missing.json: no such file or directory\nRun 'bifrost-migrate init --help' for usage.\n") {
		t.Errorf("missing file: exit %d\n%s", code, errOut)
	}
}

// TestInitRefusesIndexPathsTheServiceRefuses: each form of index path
// that Cosmos DB refuses, in an otherwise valid definition, makes init
// exit 2 with the rule named (the exact message, no hint about flags)
// before any request: the emulator has no database afterwards.
func TestInitRefusesIndexPathsTheServiceRefuses(t *testing.T) {
	const wildcard = `has a wildcard before its last segment: "*" and "?" may only end a path ("/path/*" or "/path/?"); array elements are "[]"`
	for _, tc := range []struct {
		name     string
		included string // included paths, JSON
		excluded string
		want     string
	}{
		{"no leading slash", `"/*"`, `"result/*"`,
			`indexingPolicy.excludedPaths: path "result/*" must start with "/"`},
		{"no wildcard at the end", `"/*", "/status"`, `"/result/*"`,
			`indexingPolicy.includedPaths: path "/status" must end in "/?" (the value at the path) or "/*" (everything below it)`},
		{"* in the middle", `"/*"`, `"/agents/*/result/*"`, `indexingPolicy.excludedPaths: path "/agents/*/result/*" ` + wildcard},
		{"? in the middle", `"/*"`, `"/agents/?/result/*"`, `indexingPolicy.excludedPaths: path "/agents/?/result/*" ` + wildcard},
		{"array as [*]", `"/*"`, `"/agents/[*]/result/*"`, `indexingPolicy.excludedPaths: path "/agents/[*]/result/*" ` + wildcard},
		{"array element by position", `"/*"`, `"/agents/[0]/result/*"`,
			`indexingPolicy.excludedPaths: path "/agents/[0]/result/*" has the segment "[0]": the elements of an array are addressed all at once as "[]"`},
		{"both included and excluded", `"/*", "/status/?"`, `"/status/?"`,
			`indexingPolicy: path "/status/?" is in both includedPaths and excludedPaths: a path is either indexed or not`},
		{"no root path", `"/status/?"`, `"/result/*"`,
			`indexingPolicy: the root path "/*" must be in includedPaths or excludedPaths`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newInitEnv(t)
			file := filepath.Join(t.TempDir(), "layout.json")
			paths := func(list string) string {
				return "[" + regexp.MustCompile(`"[^"]*"`).ReplaceAllString(list, `{"path":$0}`) + "]"
			}
			layout := `{"containers":[{"id":"runs","partitionKey":{"paths":["/run_id"]},"indexingPolicy":{` +
				`"includedPaths":` + paths(tc.included) + `,"excludedPaths":` + paths(tc.excluded) + `}}]}`
			if err := os.WriteFile(file, []byte(layout), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := e.run("--containers", file)
			want := "bifrost-migrate: " + file + ": invalid container definitions:\n  container \"runs\": " + tc.want + "\n"
			if code != ExitUsage || out != "" || errOut != want {
				t.Errorf("exit %d, stdout %q\nstderr:\n%s\nwant exit 2 and:\n%s", code, out, errOut, want)
			}
			if r := e.rec.Requests(); len(r) != 0 {
				t.Errorf("requests sent: %v", r)
			}
			if databaseExists(t, e.db) {
				t.Errorf("database %s exists after a refused init", e.db)
			}
		})
	}
}

// TestInitAgentPlatformState: an agent platform's definitions as first
// written (init/testdata) exit 2 with every problem named and no hint
// about flags, and send nothing; the same layout with the root path added
// and the mid-path wildcards rewritten as "[]" (init/examples) is created
// as defined, and a second init changes nothing.
func TestInitAgentPlatformState(t *testing.T) {
	e := newInitEnv(t)
	refused := filepath.Join("..", "init", "testdata", "agent-platform-state.json")
	code, out, errOut := e.run("--containers", refused)
	const wildcard = `has a wildcard before its last segment: "*" and "?" may only end a path ("/path/*" or "/path/?"); array elements are "[]"`
	want := "bifrost-migrate: " + refused + ": invalid container definitions:\n" +
		`  container "agent_runs": indexingPolicy.excludedPaths: path "/agents/*/result/*" ` + wildcard + "\n" +
		`  container "agent_runs": indexingPolicy: the root path "/*" must be in includedPaths or excludedPaths` + "\n" +
		`  container "agent_state": indexingPolicy.excludedPaths: path "/checkpoints/*/state/*" ` + wildcard + "\n"
	if code != ExitUsage || out != "" || errOut != want {
		t.Errorf("refused file: exit %d, stdout %q\nstderr:\n%s\nwant exit 2 and:\n%s", code, out, errOut, want)
	}
	if strings.Contains(errOut, "--help") {
		t.Errorf("refused file: the error hints at flags: %q", errOut)
	}
	if r := e.rec.Requests(); len(r) != 0 {
		t.Errorf("refused file: requests sent: %v", r)
	}
	if databaseExists(t, e.db) {
		t.Fatalf("database %s exists after a refused init", e.db)
	}

	file := filepath.Join("..", "init", "examples", "agent-platform-state.json")
	code, out, errOut = e.run("--containers", file, "--quiet")
	wantOut := e.expand(`RESOURCE   NAME            PARTITION KEY  TTL      ACTION
database   dbXXXXXXXXXXXX  -              -        create
container  agent_runs      /workspace_id  2592000  create
container  agent_state     /agent_id      off      create
3 change(s) applied
`)
	if code != 0 || out != wantOut {
		t.Fatalf("init: exit %d\n%s%s\nwant:\n%s", code, out, errOut, wantOut)
	}
	assertMatchesDefinitions(t, e.db, file)
	got := readContainer(t, e.db, "agent_runs").IndexingPolicy.ExcludedPaths
	if !slices.ContainsFunc(got, func(p azcosmos.ExcludedPath) bool { return p.Path == "/agents/[]/result/*" }) {
		t.Errorf("agent_runs excluded paths %v, want /agents/[]/result/* among them", got)
	}

	e.rec.Reset()
	code, out, _ = e.run("--containers", file, "--quiet")
	if code != 0 || !strings.HasSuffix(out, "\nno changes\n") {
		t.Errorf("second init: exit %d\n%s", code, out)
	}
	e.assertNoWrites()
}
