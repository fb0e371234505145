package cmd_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/cmd"
	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// TestRunBenchmark measures `run` and `run --dry-run` against the emulators
// on generated executions with their index rows, next to the ceilings the
// acceptance criteria compare them with, and the binary's peak RSS at two
// sizes. It is a benchmark, not a test: it asserts nothing about speed and
// only runs with BIFROST_BENCH=1 (test.sh does not set it). It prints a
// table; docs/performance.md has the figures and the command.
//
// Environment: BIFROST_BENCH_N executions (default 100,000; each has 4
// index rows); BIFROST_BENCH_RSS=0 skips the RSS runs (4,000 and 40,000
// executions, i.e. 20,000 and 200,000 rows); BIFROST_BENCH_ONLY=speed or
// rss runs one part. BIFROST_BENCH_ONLY=compare with BIFROST_BENCH_BASE set
// to a binary built from another commit runs that binary and this build
// alternately on the same data, BIFROST_BENCH_ROUNDS times (default 3)
// each for run and run --dry-run (rates, CPU per row, peak RSS), to
// compare two versions on one machine in one session.
func TestRunBenchmark(t *testing.T) {
	testenv.Benchmark(t)
	n := 100000
	if s := os.Getenv("BIFROST_BENCH_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatalf("BIFROST_BENCH_N: %v", err)
		}
	}
	only := os.Getenv("BIFROST_BENCH_ONLY")
	b := newBench(t)
	if only == "" || only == "speed" {
		b.speed(n)
	}
	if (only == "" && os.Getenv("BIFROST_BENCH_RSS") != "0") || only == "rss" {
		b.rss()
	}
	if only == "compare" {
		base := os.Getenv("BIFROST_BENCH_BASE")
		if base == "" {
			t.Fatal("BIFROST_BENCH_ONLY=compare needs BIFROST_BENCH_BASE, the binary to compare with")
		}
		rounds := testenv.Numbers(t, "BIFROST_BENCH_ROUNDS", 1, 3)[0]
		b.compare(n, base, rounds)
	}
	t.Logf("results:\n%s", b.report.String())
}

type bench struct {
	t       *testing.T
	bin     string
	storage azure.StorageAccount
	cosmos  azure.CosmosAccount
	client  *azcosmos.Client
	report  bytes.Buffer
	// stdout is the output of the last binary run.
	stdout string
}

func newBench(t *testing.T) *bench {
	b := &bench{t: t, bin: testenv.Build(t), storage: testenv.Storage(t), cosmos: testenv.Cosmos(t)}
	var err error
	if b.client, err = azure.NewCosmosClient(b.cosmos, azure.Options{}); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *bench) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	b.t.Log(line)
	fmt.Fprintln(&b.report, line)
}

// load generates n executions (seed 1, based now) into fresh tables and
// a fresh blob container; it returns the prefix, the container and the
// row count.
func (b *bench) load(n int) (prefix, blobs string, rows int) {
	prefix, blobs, _, rows = b.loadAs("bench", n)
	return prefix, blobs, rows
}

// loadAs generates n executions (seed 1, based now) into fresh tables
// and a fresh blob container named after name, as load does; it returns
// the prefix, the container, what generated them and the row count.
func (b *bench) loadAs(name string, n int) (prefix, blobs string, gen fixtures.GenerateOptions, rows int) {
	b.t.Helper()
	prefix, blobs = testenv.Name(name), testenv.Name(name+"blobs")
	tw, err := azure.NewTableWriter(b.storage, azure.Options{})
	if err != nil {
		b.t.Fatal(err)
	}
	bw, err := azure.NewBlobWriter(b.storage, blobs, azure.Options{})
	if err != nil {
		b.t.Fatal(err)
	}
	gen = fixtures.GenerateOptions{N: n, Seed: 1, Base: time.Now().UTC()}
	start := time.Now()
	res, err := fixtures.LoadGenerated(context.Background(), tw, bw, gen, fixtures.LoadOptions{TablePrefix: prefix, Concurrency: 16})
	if err != nil {
		b.t.Fatalf("load: %v", err)
	}
	for _, r := range res.Rows {
		rows += r
	}
	b.logf("loaded %d executions: %d rows, %d blobs in %s", n, rows, res.Blobs, time.Since(start).Round(time.Second))
	return prefix, blobs, gen, rows
}

// newDatabase creates a database with the containers through `init`.
func (b *bench) newDatabase() string {
	db := testenv.Name("benchdb")
	env := map[string]string{"BIFROST_TABLES_CONNECTION": testenv.StorageConnection(b.t), "CosmosDBConnection": testenv.CosmosConnection(b.t)}
	if code, _, stderr := resExecute(env, nil, "init", "--database", db, "--quiet"); code != cmd.ExitOK {
		b.t.Fatalf("init: exit %d: %s", code, stderr)
	}
	return db
}

// dropDatabase deletes db, so the stand-in does not grow run after run.
func (b *bench) dropDatabase(db string) {
	if d, err := b.client.NewDatabase(db); err == nil {
		_, _ = d.Delete(context.Background(), nil)
	}
}

// binRun runs the built binary and returns its summary, the wall-clock
// time and the peak RSS in bytes, as GNU time reports it. (Not the
// rusage of the child: Go starts children with vfork, so Linux counts the
// parent's resident set, the test's, into the child's maxrss at exec.)
func (b *bench) binRun(args ...string) (migrate.Summary, time.Duration, int64) {
	b.t.Helper()
	s, wall, rss, _ := b.binRunWith(b.bin, args...)
	return s, wall, rss
}

// binRunWith is binRun with the binary bin; it also returns the CPU time
// (user and system) the process used.
func (b *bench) binRunWith(bin string, args ...string) (migrate.Summary, time.Duration, int64, time.Duration) {
	b.t.Helper()
	return b.binRunEnv(map[string]string{"CosmosDBConnection": testenv.CosmosConnection(b.t)}, bin, args...)
}

// binRunEnv is binRunWith with env added to the test's environment.
func (b *bench) binRunEnv(env map[string]string, bin string, args ...string) (migrate.Summary, time.Duration, int64, time.Duration) {
	b.t.Helper()
	wall, rss, cpu := b.binExec(env, bin, args...)
	return resSummary(b.t, b.stdout), wall, rss, cpu
}

// binExec runs the binary bin with env added to the test's environment,
// fails the test unless it exits 0, keeps its output in b.stdout and
// returns its wall-clock time, peak RSS in bytes and CPU time. With
// BIFROST_BENCH_STDERR=F, each run's stderr is kept in F.<nanoseconds>
// (e.g. the garbage collector's trace, with GODEBUG=gctrace=1) and its
// stdout in F.out.<nanoseconds>.
func (b *bench) binExec(env map[string]string, bin string, args ...string) (time.Duration, int64, time.Duration) {
	b.t.Helper()
	r := testenv.RunTimed(b.t, env, bin, args...)
	if r.Exit != nil {
		b.t.Fatalf("%v: %v: %s", args[:2], r.Exit, r.Stderr)
	}
	if f := os.Getenv("BIFROST_BENCH_STDERR"); f != "" {
		_ = os.WriteFile(fmt.Sprintf("%s.%d", f, time.Now().UnixNano()), r.Stderr, 0o644)
		_ = os.WriteFile(fmt.Sprintf("%s.out.%d", f, time.Now().UnixNano()), r.Stdout, 0o644)
	}
	b.stdout = string(r.Stdout)
	return r.Wall, r.MaxRSS, r.CPU
}

func (b *bench) runArgs(db, prefix, blobs string, extra ...string) []string {
	return append([]string{"run", "--database", db, "--table-prefix", prefix, "--blob-container", blobs,
		"--tables", "Entities,Relationships", "--state-dir", filepath.Join(b.t.TempDir(), "state"),
		"--output", "json", "--quiet"}, extra...)
}

// speed compares run with a minimal concurrent upserter of the same docs,
// and the dry run with a raw page-by-page listing, each measured twice
// around the tool.
func (b *bench) speed(n int) {
	prefix, blobs, rows := b.load(n)
	ctx := context.Background()

	docs := b.docs(prefix, blobs)
	b.logf("docs to write: %d (executions)", len(docs))

	var rawDocs []float64
	raw := func() {
		db := b.newDatabase()
		defer b.dropDatabase(db)
		d := b.rawUpsert(ctx, db, docs)
		rate := float64(len(docs)) / d.Seconds()
		rawDocs = append(rawDocs, rate)
		b.logf("raw upserter (%d writers): %d docs in %.1fs = %.0f docs/s", migrate.DefaultConcurrency, len(docs), d.Seconds(), rate)
	}
	tool := func(extra ...string) float64 {
		db := b.newDatabase()
		defer b.dropDatabase(db)
		s, wall, rss := b.binRun(b.runArgs(db, prefix, blobs, extra...)...)
		rate := float64(s.DocsWritten) / wall.Seconds()
		b.logf("run %s: %d docs, %d rows in %.1fs wall (%.1fs in summary) = %.0f docs/s, %.0f rows/s; peak RSS %.0f MB",
			strings.Join(extra, " "), s.DocsWritten, rowsOf(s), wall.Seconds(), s.ElapsedSeconds, rate, float64(rowsOf(s))/wall.Seconds(), float64(rss)/1e6)
		return rate
	}
	// Interleaved: raw, run, raw, run of Entities alone (where every doc
	// comes from: without the index rows, which produce no docs), raw.
	raw()
	run := tool()
	raw()
	runEntities := tool("--tables", "Entities")
	raw()
	ceiling := (rawDocs[0] + rawDocs[1] + rawDocs[2]) / 3
	b.logf("RUN: %.0f docs/s vs raw ceiling %.0f docs/s (mean of %.0f, %.0f, %.0f): ratio %.2f (target ≥ 0.85)", run, ceiling, rawDocs[0], rawDocs[1], rawDocs[2], run/ceiling)
	b.logf("RUN --tables Entities: %.0f docs/s: ratio %.2f", runEntities, runEntities/ceiling)

	// Listing.
	var rawRows []float64
	list := func() {
		start := time.Now()
		got := 0
		for _, table := range []string{"Entities", "Relationships"} {
			got += b.rawList(ctx, prefix+table)
		}
		d := time.Since(start)
		if got != rows {
			b.t.Fatalf("raw listing: %d rows, loaded %d", got, rows)
		}
		rate := float64(got) / d.Seconds()
		rawRows = append(rawRows, rate)
		b.logf("raw listing: %d rows in %.1fs = %.0f rows/s", got, d.Seconds(), rate)
	}
	list()
	s, wall, rss := b.binRun(b.runArgs("bifrost", prefix, blobs, "--dry-run")...)
	if rowsOf(s) != int64(rows) {
		b.t.Fatalf("dry run read %d rows, loaded %d", rowsOf(s), rows)
	}
	dry := float64(rowsOf(s)) / wall.Seconds()
	b.logf("dry run: %d rows in %.1fs wall (%.1fs in summary) = %.0f rows/s; peak RSS %.0f MB", rowsOf(s), wall.Seconds(), s.ElapsedSeconds, dry, float64(rss)/1e6)
	list()
	lc := (rawRows[0] + rawRows[1]) / 2
	b.logf("DRY RUN: %.0f rows/s vs raw listing %.0f rows/s (mean of %.0f and %.0f): ratio %.2f (target ≥ 0.7)", dry, lc, rawRows[0], rawRows[1], dry/lc)
}

func rowsOf(s migrate.Summary) int64 {
	var n int64
	for _, t := range s.Tables {
		n += t.Rows
	}
	return n
}

// benchDoc is one doc the raw upserter writes.
type benchDoc struct {
	container, scope string
	json             []byte
}

// docs returns the docs run writes for the tables: the rows transformed
// as run transforms them (blob facts from one listing, default options).
// Uploads are left out: about one doc in 1,000 has one.
func (b *bench) docs(prefix, blobs string) []benchDoc {
	b.t.Helper()
	ctx := context.Background()
	bc, err := azure.NewBlobContainerClient(b.storage, blobs, azure.Options{})
	if err != nil {
		b.t.Fatal(err)
	}
	facts := map[string]transform.BlobFacts{}
	err = azure.NewBlobStore(bc).List(ctx, func(name string, size int64) error {
		exec, file, _ := strings.Cut(name, "/")
		if k, ok := transform.ParseBlobName(file); ok {
			f := facts[exec]
			f.Set(k, size)
			facts[exec] = f
		}
		return nil
	})
	if err != nil {
		b.t.Fatal(err)
	}
	r := azure.NewTableReader(b.storage, azure.Options{})
	opts := transform.Options{Now: time.Now().UTC()}
	ids := transform.NewIDSet()
	var out []benchDoc
	for _, table := range []string{"Entities", "Relationships"} {
		if err := store.Scan(ctx, r, "", prefix+table, store.Query{}, store.Cursor{}, func(p store.Page) error {
			for _, row := range p.Rows {
				row.Table = table
				var f transform.BlobFacts
				if v, ok := row.Props["ExecutionId"]; ok {
					f = facts[v.Str]
				}
				o := ids.Check(transform.Transform(row, f, opts))
				if o.Disposition == transform.DispositionDoc {
					out = append(out, benchDoc{o.Container, o.Scope, o.DocJSON})
				}
			}
			return nil
		}); err != nil {
			b.t.Fatal(err)
		}
	}
	return out
}

// rawUpsert writes docs into db with DefaultConcurrency goroutines calling
// the SDK's UpsertItem directly (its own retry policy), and returns the
// time it took.
func (b *bench) rawUpsert(ctx context.Context, db string, docs []benchDoc) time.Duration {
	b.t.Helper()
	containers := map[string]*azcosmos.ContainerClient{}
	for _, name := range []string{transform.ContainerEntities, transform.ContainerExecutions} {
		c, err := b.client.NewContainer(db, name)
		if err != nil {
			b.t.Fatal(err)
		}
		containers[name] = c
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		errs = make(chan error, migrate.DefaultConcurrency)
	)
	start := time.Now()
	for range migrate.DefaultConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(docs)) {
					return
				}
				d := docs[i]
				if _, err := containers[d.container].UpsertItem(ctx, azcosmos.NewPartitionKeyString(d.scope), d.json, nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	d := time.Since(start)
	close(errs)
	for err := range errs {
		b.t.Fatalf("raw upsert: %v", err)
	}
	return d
}

// rawList lists table page by page (1,000 rows) with plain signed HTTP
// GETs, decoding only the list of rows, and returns the row count.
func (b *bench) rawList(ctx context.Context, table string) int {
	b.t.Helper()
	return b.rawListAt(ctx, b.storage.TableEndpoint, table)
}

// rawListAt is rawList through the Table endpoint endpoint (a proxy
// before the account).
func (b *bench) rawListAt(ctx context.Context, endpoint, table string) int {
	b.t.Helper()
	key, err := base64.StdEncoding.DecodeString(b.storage.Key)
	if err != nil {
		b.t.Fatal(err)
	}
	client := &http.Client{}
	var nextPK, nextRK string
	rows := 0
	for {
		v := url.Values{"$top": {"1000"}}
		if nextPK != "" {
			v.Set("NextPartitionKey", nextPK)
		}
		if nextRK != "" {
			v.Set("NextRowKey", nextRK)
		}
		u := endpoint + "/" + table + "()?" + v.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			b.t.Fatal(err)
		}
		date := time.Now().UTC().Format(http.TimeFormat)
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(date + "\n/" + b.storage.Name + req.URL.EscapedPath()))
		req.Header.Set("x-ms-date", date)
		req.Header.Set("x-ms-version", "2019-02-02")
		req.Header.Set("Accept", "application/json;odata=minimalmetadata")
		req.Header.Set("Authorization", "SharedKeyLite "+b.storage.Name+":"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
		resp, err := client.Do(req)
		if err != nil {
			b.t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.t.Fatalf("list %s: %d %v", table, resp.StatusCode, err)
		}
		var page struct {
			Value []json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			b.t.Fatal(err)
		}
		rows += len(page.Value)
		nextPK, nextRK = resp.Header.Get("x-ms-continuation-NextPartitionKey"), resp.Header.Get("x-ms-continuation-NextRowKey")
		if nextPK == "" && nextRK == "" {
			return rows
		}
	}
}

// compare runs this build and the binary base alternately on n generated
// executions, rounds times each for run (docs/s) and run --dry-run
// (rows/s), the order swapped every round, and reports every figure, the
// means and their ratio, and the same for the CPU time the process used
// per row read.
func (b *bench) compare(n int, base string, rounds int) {
	prefix, blobs, _ := b.load(n)
	bins := map[string]string{"this": b.bin, "base": base}
	rates, cpus, rsss := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	for i := range rounds {
		order := []string{"this", "base"}
		if i%2 == 1 {
			order = []string{"base", "this"}
		}
		for _, mode := range []string{"run", "dry-run"} {
			for _, which := range order {
				db := "bifrost" // a dry run writes nothing
				if mode == "run" {
					db = b.newDatabase()
				}
				args := b.runArgs(db, prefix, blobs)
				if mode == "dry-run" {
					args = append(args, "--dry-run")
				}
				s, wall, rss, cpu := b.binRunWith(bins[which], args...)
				if mode == "run" {
					b.dropDatabase(db)
				}
				rate, unit := float64(s.DocsWritten)/wall.Seconds(), "docs/s"
				if mode == "dry-run" {
					rate, unit = float64(rowsOf(s))/wall.Seconds(), "rows/s"
				}
				perRow := cpu.Seconds() * 1e6 / float64(rowsOf(s))
				rates[which+" "+mode] = append(rates[which+" "+mode], rate)
				cpus[which+" "+mode] = append(cpus[which+" "+mode], perRow)
				rsss[which+" "+mode] = append(rsss[which+" "+mode], float64(rss)/1e6)
				b.logf("COMPARE round %d: %s %s: %.1fs wall = %.0f %s; CPU %.1fs = %.1f µs per row; peak RSS %.1f MB", i+1, which, mode, wall.Seconds(), rate, unit, cpu.Seconds(), perRow, float64(rss)/1e6)
			}
		}
	}
	mean := func(xs []float64) float64 {
		sum := 0.0
		for _, x := range xs {
			sum += x
		}
		return sum / float64(len(xs))
	}
	for _, mode := range []string{"run", "dry-run"} {
		this, old := rates["this "+mode], rates["base "+mode]
		b.logf("COMPARE %s: this build %.0f/s (%s), base %.0f/s (%s): ratio %.3f", mode,
			mean(this), fmtList(this, 0), mean(old), fmtList(old, 0), mean(this)/mean(old))
		thisCPU, oldCPU := cpus["this "+mode], cpus["base "+mode]
		b.logf("COMPARE %s CPU per row: this build %.1f µs (%s), base %.1f µs (%s): ratio %.3f", mode,
			mean(thisCPU), fmtList(thisCPU, 1), mean(oldCPU), fmtList(oldCPU, 1), mean(thisCPU)/mean(oldCPU))
		thisRSS, oldRSS := rsss["this "+mode], rsss["base "+mode]
		b.logf("COMPARE %s peak RSS: this build %.1f MB (%s), base %.1f MB (%s): ratio %.3f", mode,
			mean(thisRSS), fmtList(thisRSS, 1), mean(oldRSS), fmtList(oldRSS, 1), mean(thisRSS)/mean(oldRSS))
	}
}

// fmtList writes xs with prec decimals, separated by commas.
func fmtList(xs []float64, prec int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatFloat(x, 'f', prec, 64)
	}
	return strings.Join(s, ", ")
}

// rss runs the binary (a real run) over 20,000 and 200,000 rows and
// compares the peak RSS.
func (b *bench) rss() {
	var peaks []int64
	for _, execs := range []int{4000, 40000} {
		prefix, blobs, rows := b.load(execs)
		start := time.Now()
		listed := b.rawList(context.Background(), prefix+"Entities") + b.rawList(context.Background(), prefix+"Relationships")
		b.logf("RSS: raw listing of %d rows: %.0f rows/s", listed, float64(listed)/time.Since(start).Seconds())
		db := b.newDatabase()
		s, wall, rss := b.binRun(b.runArgs(db, prefix, blobs)...)
		b.dropDatabase(db)
		peaks = append(peaks, rss)
		b.logf("RSS: run over %d rows (%d docs) in %.1fs: peak RSS %.1f MB", rows, s.DocsWritten, wall.Seconds(), float64(rss)/1e6)
	}
	b.logf("RSS: 200,000 rows / 20,000 rows = %.2f (target ≤ 1.25); peak %.1f MB (target ≤ 150 MB)",
		float64(peaks[1])/float64(peaks[0]), float64(max(peaks[0], peaks[1]))/1e6)
}
