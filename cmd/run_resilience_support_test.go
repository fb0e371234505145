package cmd_test

// Support for the fault and kill/resume tests of `run` (run_faults_test.go,
// run_kill_test.go). They live in package cmd_test, beside the package's
// own tests, and name their helpers res* so they share nothing with them.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/cmd"
	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/transform"
)

// resNow is the clock of the in-process runs, and the base time of the
// generated data (the "now" of fixtures/inventory.json).
var resNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// resSource is one test's source data in the shared emulators: tables of
// its own (a fresh prefix before Config, Entities, Relationships) holding
// the fixtures plus generated executions with their index rows, and blob
// containers of its own, one per run that is compared (each run uploads
// into its own copy, so blob counts and contents can be compared too).
type resSource struct {
	t       *testing.T
	conn    string // the storage connection string
	storage azure.StorageAccount
	cosmos  azure.CosmosAccount
	client  *azcosmos.Client
	prefix  string
	blobs   []string
	rows    map[string]int // rows per table
}

// newResSource loads the fixtures and n generated executions (seed, based
// at base) into fresh tables, and their blobs into `copies` fresh blob
// containers. Everything is deleted when the test ends.
func newResSource(t *testing.T, n int, seed uint64, base time.Time, copies int) *resSource {
	t.Helper()
	return loadResSource(t, true, n, seed, base, copies)
}

// newResGenerated is newResSource without the fixtures, whose rows
// dead-letter on purpose: only the generated executions, which a run
// migrates whole and verify finds clean.
func newResGenerated(t *testing.T, n int, seed uint64, base time.Time, copies int) *resSource {
	t.Helper()
	return loadResSource(t, false, n, seed, base, copies)
}

// loadResSource is newResSource, with the fixtures only when withFixtures.
func loadResSource(t *testing.T, withFixtures bool, n int, seed uint64, base time.Time, copies int) *resSource {
	t.Helper()
	s, tw, tee := newResWriters(t, "res", copies)
	ctx := context.Background()
	lo := fixtures.LoadOptions{TablePrefix: s.prefix}
	var loaded []fixtures.LoadResult
	if withFixtures {
		fx, err := fixtures.Load(ctx, tw, tee, lo)
		if err != nil {
			t.Fatalf("load fixtures: %v", err)
		}
		loaded = append(loaded, fx)
	}
	gen, err := fixtures.LoadGenerated(ctx, tw, tee, fixtures.GenerateOptions{N: n, Seed: seed, Base: base}, lo)
	if err != nil {
		t.Fatalf("load %d generated executions: %v", n, err)
	}
	loaded = append(loaded, gen)
	s.rows = map[string]int{}
	for _, r := range loaded {
		for table, n := range r.Rows {
			s.rows[table] += n
		}
	}
	return s
}

// newResWriters returns an empty source of fresh names (tables under a
// prefix starting with prefix, `copies` blob containers) with writers for
// its tables and, all at once, its blob containers. Everything is deleted
// when the test ends.
func newResWriters(t *testing.T, prefix string, copies int) (*resSource, *azure.TableWriter, resTeeBlobs) {
	t.Helper()
	return newResWritersOn(t, testenv.StorageConnection(t), testenv.CosmosConnection(t), prefix, copies)
}

// newRateWriters is newResWriters on the emulators of the tests that
// measure rates (testenv.Rates).
func newRateWriters(t *testing.T, prefix string, copies int) (*resSource, *azure.TableWriter, resTeeBlobs) {
	t.Helper()
	storage, cosmos := testenv.Rates(t)
	return newResWritersOn(t, storage, cosmos, prefix, copies)
}

// newResWritersOn is newResWriters on the emulators of the connection
// strings storage and cosmos.
func newResWritersOn(t *testing.T, storage, cosmos, prefix string, copies int) (*resSource, *azure.TableWriter, resTeeBlobs) {
	t.Helper()
	s := &resSource{t: t, conn: storage, prefix: testenv.Name(prefix)}
	var err error
	if s.storage, err = azure.ParseStorageConnection(storage); err != nil {
		t.Fatalf("storage connection: %v", err)
	}
	if s.cosmos, err = azure.ParseCosmosConnection(cosmos); err != nil {
		t.Fatalf("Cosmos DB connection: %v", err)
	}
	if s.client, err = azure.NewCosmosClient(s.cosmos, azure.Options{}); err != nil {
		t.Fatal(err)
	}
	tw, err := azure.NewTableWriter(s.storage, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var tee resTeeBlobs
	for range copies {
		name := testenv.Name(prefix + "blobs")
		bw, err := azure.NewBlobWriter(s.storage, name, azure.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.blobs = append(s.blobs, name)
		tee = append(tee, bw)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for _, bw := range tee {
			_ = bw.(*azure.BlobWriter).Delete(ctx)
		}
		for _, table := range fixtures.Tables() {
			_ = tw.DeleteTable(ctx, s.prefix+table)
		}
	})
	return s, tw, tee
}

// resTeeBlobs writes every blob into each of its writers.
type resTeeBlobs []fixtures.BlobWriter

func (w resTeeBlobs) CreateContainer(ctx context.Context) error {
	for _, bw := range w {
		if err := bw.CreateContainer(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (w resTeeBlobs) Upload(ctx context.Context, path string, data []byte) error {
	for _, bw := range w {
		if err := bw.Upload(ctx, path, data); err != nil {
			return err
		}
	}
	return nil
}

// env is the environment of a bifrost-migrate process (in-process through
// Factory.Getenv, or a child process) that talks to cosmosEndpoint, or to
// the stand-in itself when it is "".
func (s *resSource) env(cosmosEndpoint string) map[string]string {
	if cosmosEndpoint == "" {
		cosmosEndpoint = s.cosmos.Endpoint
	}
	return map[string]string{
		"BIFROST_TABLES_CONNECTION": s.conn,
		"CosmosDBConnection":        "AccountEndpoint=" + cosmosEndpoint + ";AccountKey=" + s.cosmos.Key + ";",
	}
}

// newDatabase creates a fresh database with the containers (`init`),
// deleted when the test ends.
func (s *resSource) newDatabase() string {
	s.t.Helper()
	db := testenv.Name("resdb")
	s.t.Cleanup(func() {
		if d, err := s.client.NewDatabase(db); err == nil {
			_, _ = d.Delete(context.Background(), nil)
		}
	})
	if code, _, stderr := resExecute(s.env(""), nil, "init", "--database", db, "--quiet"); code != cmd.ExitOK {
		s.t.Fatalf("init %s: exit %d: %s", db, code, stderr)
	}
	return db
}

// runArgs are the arguments of `run` over the source into database db and
// blob container number blobs, with state in stateDir.
func (s *resSource) runArgs(db string, blobs int, stateDir string, extra ...string) []string {
	return append([]string{"run", "--database", db, "--table-prefix", s.prefix, "--blob-container", s.blobs[blobs],
		"--state-dir", stateDir, "--output", "json"}, extra...)
}

// resExecute runs bifrost-migrate in-process with env, the fixed clock
// resNow and transport (nil: the default), for at most 10 minutes.
func resExecute(env map[string]string, transport http.RoundTripper, args ...string) (code int, stdout, stderr string) {
	return resExecuteWithin(10*time.Minute, env, transport, args...)
}

// resExecuteWithin is resExecute cancelled (as by SIGINT) after timeout.
func resExecuteWithin(timeout time.Duration, env map[string]string, transport http.RoundTripper, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	f := &cmd.Factory{
		In:            strings.NewReader(""),
		Out:           &out,
		ErrOut:        &errOut,
		ErrIsTerminal: func() bool { return false },
		Now:           func() time.Time { return resNow },
		Getenv:        func(k string) string { return env[k] },
		Transport:     transport,
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	code = cmd.Execute(ctx, f, args)
	return code, out.String(), errOut.String()
}

// resSummary is the {"type":"summary"} line of a run's JSON output.
func resSummary(t *testing.T, stdout string) migrate.Summary {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var probe struct {
			Type string `json:"type"`
		}
		if json.Unmarshal([]byte(lines[i]), &probe) != nil || probe.Type != "summary" {
			continue
		}
		var s migrate.Summary
		if err := json.Unmarshal([]byte(lines[i]), &s); err != nil {
			t.Fatalf("summary line: %v", err)
		}
		return s
	}
	t.Fatalf("no summary line in stdout:\n%s", stdout)
	return migrate.Summary{}
}

// resCounts is what must not depend on how a run got to its end: rows per
// table, kind and disposition, warnings, dead letters. (Blobs uploaded and
// request units do depend on it: a blob uploaded before a kill is found,
// not created, by the rerun.)
func resCounts(s migrate.Summary) string {
	type table struct {
		Table    string
		Done     bool
		Rows     int64
		Kinds    map[string]map[string]int64
		Warnings map[string]int64
	}
	v := struct {
		Complete     bool
		Tables       []table
		Dispositions map[string]int64
		Warnings     map[string]int64
		DeadLetters  int64
	}{Complete: s.Complete, Dispositions: s.Dispositions, Warnings: s.Warnings, DeadLetters: s.DeadLetters}
	for _, ts := range s.Tables {
		v.Tables = append(v.Tables, table{ts.Table, ts.Done, ts.Rows, ts.Kinds, ts.Warnings})
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// systemProperties are set by Cosmos DB on every write, so they differ
// between two databases holding the same docs.
var systemProperties = []string{"_rid", "_self", "_etag", "_ts", "_attachments"}

// docs returns every doc of the database's two containers, keyed
// "container scope id", as JSON without the system properties (keys in
// sorted order, numbers as written).
func (s *resSource) docs(db string) map[string]string {
	s.t.Helper()
	r, err := azure.NewDocReader(s.client, db)
	if err != nil {
		s.t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range []string{transform.ContainerEntities, transform.ContainerExecutions} {
		err := r.QueryAll(context.Background(), c, "SELECT * FROM c", nil, 0, func(raw []byte) error {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			var doc map[string]any
			if err := dec.Decode(&doc); err != nil {
				return err
			}
			for _, p := range systemProperties {
				delete(doc, p)
			}
			scope, _ := doc["scope"].(string)
			id, _ := doc["id"].(string)
			key := c + " " + scope + " " + id
			if _, dup := out[key]; dup {
				return fmt.Errorf("doc %s listed twice", key)
			}
			b, err := json.Marshal(doc)
			if err != nil {
				return err
			}
			out[key] = string(b)
			return nil
		})
		if err != nil {
			s.t.Fatalf("list docs of %s/%s: %v", db, c, err)
		}
	}
	return out
}

// blobList returns every blob of blob container number i: name → size and
// Content-MD5.
func (s *resSource) blobList(i int) map[string]string {
	s.t.Helper()
	c, err := azure.NewBlobContainerClient(s.storage, s.blobs[i], azure.Options{})
	if err != nil {
		s.t.Fatal(err)
	}
	out := map[string]string{}
	pager := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{MaxResults: to.Ptr[int32](5000)})
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			s.t.Fatalf("list blobs of %s: %v", s.blobs[i], err)
		}
		for _, b := range page.Segment.BlobItems {
			out[*b.Name] = fmt.Sprintf("%d bytes md5 %s", *b.Properties.ContentLength, base64.StdEncoding.EncodeToString(b.Properties.ContentMD5))
		}
	}
	return out
}

// resSameMaps fails the test when got differs from want, naming what is
// missing, extra and different (the first few of each).
func resSameMaps(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	var missing, extra, different []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case g != want[k]:
			different = append(different, fmt.Sprintf("%s\n    want %s\n     got %s", k, want[k], g))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	if len(missing)+len(extra)+len(different) == 0 {
		return
	}
	first := func(l []string) string {
		if len(l) > 5 {
			return strings.Join(l[:5], "\n  ") + fmt.Sprintf("\n  … and %d more", len(l)-5)
		}
		return strings.Join(l, "\n  ")
	}
	t.Errorf("%s: %d wanted, %d found; %d missing, %d extra, %d different\nmissing:\n  %s\nextra:\n  %s\ndifferent:\n  %s",
		what, len(want), len(got), len(missing), len(extra), len(different), first(missing), first(extra), first(different))
}

// resDeadLetters returns the lines of dead-letter.jsonl in stateDir and
// fails the test when a line is there twice.
func resDeadLetters(t *testing.T, stateDir string) []string {
	t.Helper()
	b, err := os.ReadFile(stateDir + "/" + migrate.DeadLetterFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	seen := map[string]bool{}
	for _, l := range lines {
		if seen[l] {
			t.Errorf("dead-letter.jsonl in %s has this line twice: %.200s", stateDir, l)
		}
		seen[l] = true
	}
	return lines
}
