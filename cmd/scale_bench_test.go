package cmd_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // compared with the blob service's Content-MD5
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/cmd"
	"github.com/bifrost/bifrost-migrate/internal/memlimit"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// scaleTransform is how the benchmark's runs transform (--execution-ttl
// full: every doc's bytes follow from its row alone, so each can be
// compared with what the transform makes of the row).
var scaleTransform = transform.Options{ExecutionTTL: transform.TTLFull}

// TestScaleServers keeps the scale benchmark's services honest at a small
// size: the rows of each table come in strictly increasing key order;
// the Table service answers the tool's reader (full scans, key ranges,
// resumes, $select, point reads) with exactly the rows store.Query.Match
// selects; and a run through the real adapters writes every doc right,
// finds the world's collisions and dangling indexes, and sends nothing
// the services do not know.
func TestScaleServers(t *testing.T) {
	t.Parallel()
	w := newScaleWorld(2500)
	for name, tb := range w.tables {
		for p := 1; p < tb.total; p++ {
			pk0, rk0 := tb.Key(p - 1)
			pk1, rk1 := tb.Key(p)
			if transform.CompareKeys(pk0, rk0, pk1, rk1) >= 0 {
				t.Fatalf("%s: row %d (%s/%s) is not after row %d (%s/%s)", name, p, pk1, rk1, p-1, pk0, rk0)
			}
			if row := tb.Row(p); row.PartitionKey != pk1 || row.RowKey != rk1 {
				t.Fatalf("%s: row %d has keys %s/%s, Key says %s/%s", name, p, row.PartitionKey, row.RowKey, pk1, rk1)
			}
		}
	}
	srv := newScaleServers(w)
	defer srv.Close()
	acct, err := azure.ParseStorageConnection(srv.env()["BIFROST_TABLES_CONNECTION"])
	if err != nil {
		t.Fatal(err)
	}
	reader := azure.NewTableReader(acct, azure.Options{})
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	for _, table := range transform.Tables() {
		tb := w.tables[table]
		key := func() *store.Key {
			pk, rk := tb.Key(r.IntN(tb.total))
			switch r.IntN(3) {
			case 0:
				rk = ""
			case 1:
				rk += "0"
			}
			return &store.Key{PartitionKey: pk, RowKey: rk}
		}
		queries := []store.Query{{}, {Select: []string{"PartitionKey", "RowKey", "ExecutionId"}}}
		for range 4 {
			from, to, after := key(), key(), key()
			if transform.CompareKeys(from.PartitionKey, from.RowKey, to.PartitionKey, to.RowKey) > 0 {
				from, to = to, from
			}
			queries = append(queries, store.Query{From: from, To: to}, store.Query{After: after}, store.Query{From: from, After: after, To: to})
			pk, rk := tb.Key(r.IntN(tb.total))
			queries = append(queries, store.Query{Key: &store.Key{PartitionKey: pk, RowKey: rk}}, store.Query{Key: &store.Key{PartitionKey: pk, RowKey: rk + "x"}})
		}
		for _, q := range queries {
			var want []string
			for p := range tb.total {
				if pk, rk := tb.Key(p); q.Match(pk, rk, w.stamp) {
					want = append(want, pk+"/"+rk)
				}
			}
			var got []string
			check := func(p store.Page) error {
				for _, row := range p.Rows {
					got = append(got, row.PartitionKey+"/"+row.RowKey)
					if len(q.Select) > 0 && len(row.Props) > 1 {
						return fmt.Errorf("$select %v: row %s has %d properties", q.Select, row.RowKey, len(row.Props))
					}
				}
				return nil
			}
			if err := store.ScanRanges(ctx, reader, "", table, q, store.Splits(table), check); err != nil {
				t.Fatalf("%s %+v: %v", table, q, err)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("%s %+v from %+v to %+v after %+v: %d rows, want %d:\n%q\n%q", table, q, q.From, q.To, q.After, len(got), len(want), got, want)
			}
		}
	}
	// A page never crosses a partition, and comes with a continuation.
	p, err := reader.ReadPage(ctx, "Entities", store.Query{}, store.Cursor{})
	if err != nil || len(p.Rows) == 0 || p.Next.IsZero() || strings.Contains(p.Next.NextPartitionKey, "GLOBAL") {
		t.Fatalf("first page of Entities: %d rows, next %+v, %v", len(p.Rows), p.Next, err)
	}
	for _, row := range p.Rows[1:] {
		if row.PartitionKey != p.Rows[0].PartitionKey {
			t.Fatalf("a page crosses partitions %s and %s", p.Rows[0].PartitionKey, row.PartitionKey)
		}
	}

	code, stdout, stderr := resExecute(srv.env(), nil, "run", "--execution-ttl", "full", "--retry-timeout", "20s", "--state-dir", filepath.Join(t.TempDir(), "state"), "--output", "json", "--quiet")
	if code != cmd.ExitPartial {
		t.Fatalf("run: exit %d, want %d (the collisions): %s", code, cmd.ExitPartial, stderr)
	}
	s := resSummary(t, stdout)
	scaleCheck(t, srv, s)
}

// scaleCheck fails t unless the run s wrote every doc and blob of the
// world right, dead-lettered exactly its collisions, warned of exactly its
// dangling indexes, and sent only requests the services know.
func scaleCheck(t *testing.T, srv *scaleServers, s migrate.Summary) {
	t.Helper()
	w := srv.w
	if u := srv.Unexpected(); len(u) > 0 {
		t.Errorf("requests the services do not know: %q", u)
	}
	if bad := srv.sink.Bad(); len(bad) > 0 {
		t.Errorf("docs the Cosmos DB service refused: %q", bad)
	}
	if s.DeadLetters != int64(w.collisions()) {
		t.Errorf("%d dead letters, want %d (the collisions)", s.DeadLetters, w.collisions())
	}
	var dangling int64
	for _, ts := range s.Tables {
		dangling += ts.Warnings[transform.ReasonDanglingIndex]
	}
	if dangling != int64(w.danglingIndexes()) {
		t.Errorf("%d dangling indexes, want %d", dangling, w.danglingIndexes())
	}
	docs, problems := scaleVerify(w, srv)
	if s.DocsWritten != docs {
		t.Errorf("%d docs written, want %d", s.DocsWritten, docs)
	}
	for i, p := range problems {
		if i == 10 {
			t.Errorf("… %d more", len(problems)-10)
			break
		}
		t.Error(p)
	}
}

// scaleVerify compares every doc and blob the services hold with what the
// transform makes of the world's rows; it returns the number of docs
// expected and the differences.
func scaleVerify(w *scaleWorld, srv *scaleServers) (docs int64, problems []string) {
	opts := scaleTransform
	opts.Now = time.Now()
	var mu sync.Mutex
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(problems) < 100 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	var wrote atomic.Int64
	checkUploads := func(o transform.Outcome) {
		for _, u := range o.Uploads {
			e, ok := srv.store.Blob(u.Path)
			sum := md5.Sum(u.Data) //nolint:gosec // see import
			if !ok || !bytes.Equal(e.md5, sum[:]) {
				fail("blob %s: not uploaded, or different", u.Path)
			}
		}
	}
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for k := range workers {
		wg.Go(func() {
			for n := k; n < w.n; n += workers {
				o := transform.Transform(w.execRow(n, w.orgs[w.org(n)]), w.execFacts(n), opts)
				if o.Disposition != transform.DispositionDoc {
					fail("execution %d: %s %s", n, o.Disposition, o.DeadLetter)
					continue
				}
				wrote.Add(1)
				if got := srv.sink.execs[n].Load(); got != digest(o.DocJSON) {
					fail("execution %d (%s): doc not written, or different", n, o.ID)
				}
				checkUploads(o)
			}
		})
	}
	wg.Wait()
	ids := transform.NewIDSet()
	others := 0
	for _, table := range []string{"Config", "Entities"} {
		for _, seg := range w.tables[table].segs {
			fixed, ok := seg.(fixedRows)
			if !ok {
				continue
			}
			for _, row := range fixed {
				o := ids.Check(transform.Transform(row, transform.BlobFacts{}, opts))
				if o.Disposition != transform.DispositionDoc {
					continue
				}
				others++
				srv.sink.mu.Lock()
				got := srv.sink.others[o.Container+"/"+o.ID]
				srv.sink.mu.Unlock()
				if got != digest(o.DocJSON) {
					fail("%s %s/%s: doc %s/%s not written, or different", table, row.PartitionKey, row.RowKey, o.Container, o.ID)
				}
			}
		}
	}
	srv.sink.mu.Lock()
	if len(srv.sink.others) != others {
		fail("%d docs outside executions, want %d", len(srv.sink.others), others)
	}
	srv.sink.mu.Unlock()
	return wrote.Load() + int64(others), problems
}

// TestScaleBenchmark is the scale benchmark (docs/performance.md, "At any size"): `run`
// and `run --dry-run`, the built binary, against the services above at
// each size of BIFROST_SCALE_ROWS (rows of the three tables; default
// 1,000,000 and 5,000,000), and the SDK alone (TestScaleSDKAlone, a
// process of its own) writing the same docs into the same sink. It
// reports rows/s, CPU per row (the process's user + system time), peak
// RSS (GNU time), the garbage collector's share of the CPU and its
// cycles (GODEBUG=gctrace=1), and checks every doc. It asserts nothing
// about speed; it runs only with BIFROST_BENCH=1 (./bench.sh; alone with
// BIFROST_BENCH_ONLY=scale), never in ./test.sh.
// BIFROST_SCALE_MODES=run (or dry-run) runs one mode;
// BIFROST_SCALE_BIN=path measures that binary instead of this build;
// BIFROST_SCALE_TOOL_ENV="K=V …" adds to its environment (GOGC=…).
func TestScaleBenchmark(t *testing.T) {
	if only := os.Getenv("BIFROST_BENCH_ONLY"); os.Getenv("BIFROST_BENCH") != "1" || (only != "" && only != "scale") {
		t.Skip("benchmark: set BIFROST_BENCH=1 (see README.md, Performance), or run BIFROST_BENCH_ONLY=scale ./bench.sh")
	}
	sizes := []int{1000000, 5000000}
	if v := os.Getenv("BIFROST_SCALE_ROWS"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1000 {
				t.Fatalf("BIFROST_SCALE_ROWS: %q is not a list of row counts ≥ 1000", v)
			}
			sizes = append(sizes, n)
		}
	}
	modes := []string{"dry-run", "run"}
	if v := os.Getenv("BIFROST_SCALE_MODES"); v != "" {
		modes = strings.Split(v, ",")
	}
	bin := os.Getenv("BIFROST_SCALE_BIN") // another build, to compare
	if bin == "" {
		bin = testenv.Build(t)
	}
	var report bytes.Buffer
	logf := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		t.Log(line)
		fmt.Fprintln(&report, line)
	}
	logf("scale benchmark, started %s, GOMAXPROCS %d, modes %v", time.Now().UTC().Format(time.RFC3339), runtime.GOMAXPROCS(0), modes)
	// The machine's speed drifts: the SDK alone before and after, and the
	// first size again at the end; each size is compared with the mean of
	// the first size's two runs.
	sdks := []sdkAlone{scaleSDKAlone(t, 200000)}
	logf("SDK alone: %d upserts from %d goroutines in %.1fs: CPU %.1f µs per doc (GC %.1f %% of the work)", sdks[0].Docs, sdks[0].Writers, sdks[0].Seconds, sdks[0].CPUMicrosPerDoc, 100*sdks[0].GCShare)
	order := sizes
	if len(sizes) > 1 {
		order = append(slices.Clone(sizes), sizes[0])
	}
	results := map[string]map[int][]scaleResult{}
	for _, mode := range modes {
		results[mode] = map[int][]scaleResult{}
	}
	for _, rows := range order {
		w := newScaleWorld(rows / 5)
		for _, mode := range modes {
			r := scaleRun(t, bin, w, mode == "dry-run")
			results[mode][rows] = append(results[mode][rows], r)
			logf("%s, %d rows (%d docs): %.1fs = %.0f rows/s; CPU %.1f µs per row; peak RSS %.1f MB; GC %.1f %% of the work in %d cycles (gctrace over rusage: %.1f %%), live heap at the last %.1f MB (peak %.1f MB)",
				mode, r.Rows, r.Docs, r.Wall.Seconds(), float64(r.Rows)/r.Wall.Seconds(), r.CPUMicrosPerRow(), float64(r.RSS)/1e6,
				100*r.GCShare(), r.GC.Cycles, 100*r.GC.CPU.Seconds()/r.CPU.Seconds(), r.GC.LastLiveMB, r.GC.PeakLiveMB)
		}
	}
	sdks = append(sdks, scaleSDKAlone(t, 200000))
	logf("SDK alone again: CPU %.1f µs per doc (GC %.1f %% of the work)", sdks[1].CPUMicrosPerDoc, 100*sdks[1].GCShare)
	sdkPerDoc := (sdks[0].CPUMicrosPerDoc + sdks[1].CPUMicrosPerDoc) / 2
	mean := func(rs []scaleResult, f func(scaleResult) float64) float64 {
		var sum float64
		for _, r := range rs {
			sum += f(r)
		}
		return sum / float64(len(rs))
	}
	cpu := func(r scaleResult) float64 { return r.CPUMicrosPerRow() }
	rss := func(r scaleResult) float64 { return float64(r.RSS) }
	for _, mode := range modes {
		base := results[mode][sizes[0]]
		for _, rows := range sizes[1:] {
			rs := results[mode][rows]
			logf("%s, %d rows against %d (mean of %d runs): peak RSS × %.2f (≤ 1.2), CPU per row × %.2f (≤ 1.1)", mode, rows, sizes[0], len(base),
				mean(rs, rss)/mean(base, rss), mean(rs, cpu)/mean(base, cpu))
		}
	}
	for _, rows := range sizes {
		runs, dries := results["run"][rows], results["dry-run"][rows]
		if len(runs) == 0 || len(dries) == 0 {
			continue
		}
		docs, nrows := float64(runs[0].Docs), float64(runs[0].Rows)
		perDoc := mean(runs, cpu) * nrows / docs
		dryPerDoc := mean(dries, cpu) * nrows / docs
		logf("run, %d rows: CPU %.1f µs per doc against SDK alone %.1f + dry run %.1f = %.1f: × %.2f (≤ 1.5)", rows, perDoc,
			sdkPerDoc, dryPerDoc, sdkPerDoc+dryPerDoc, perDoc/(sdkPerDoc+dryPerDoc))
	}
	t.Logf("results:\n%s", report.String())
}

// scaleResult is one run of the binary.
type scaleResult struct {
	Rows, Docs int64
	Wall       time.Duration
	CPU        time.Duration
	RSS        int64
	GC         gcTrace
	// Classes is the runtime's account of the process's time.
	Classes memlimit.CPUClasses
}

func (r scaleResult) CPUMicrosPerRow() float64 { return r.CPU.Seconds() * 1e6 / float64(r.Rows) }

// GCShare is the collector's share of the process's work as the runtime
// counts it (memlimit.CPUClasses): both sides are processor time, so a
// busy machine that slows the process slows them alike. (gctrace's CPU
// over the operating system's is not: the collector's times are
// processor time, which counts the time the process waited for a core.)
func (r scaleResult) GCShare() float64 { return r.Classes.GCShare() }

// scaleRun runs the binary bin (`run`, or `run --dry-run`) against fresh
// services over w, and checks what it did.
func scaleRun(t *testing.T, bin string, w *scaleWorld, dry bool) scaleResult {
	t.Helper()
	srv := newScaleServers(w)
	defer srv.Close()
	args := []string{"run", "--execution-ttl", "full", "--state-dir", filepath.Join(t.TempDir(), "state"), "--output", "json", "--quiet"}
	if dry {
		args = append(args, "--dry-run")
	}
	env := srv.env()
	env["GODEBUG"] = "gctrace=1"
	classes := filepath.Join(t.TempDir(), "cpu-classes.json")
	env["BIFROST_CPU_CLASSES"] = classes
	for _, kv := range strings.Fields(os.Getenv("BIFROST_SCALE_TOOL_ENV")) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	r := testenv.RunTimed(t, env, bin, args...)
	if ee, ok := r.Exit.(*exec.ExitError); r.Exit != nil && !(ok && ee.ExitCode() == cmd.ExitPartial) {
		t.Fatalf("%v: %v: %s", args, r.Exit, lastLines(string(r.Stderr), 20))
	}
	res := scaleResult{RSS: r.MaxRSS, CPU: r.CPU, Wall: r.Wall}
	res.GC = parseGCTrace(string(r.Stderr))
	if b, err := os.ReadFile(classes); err != nil || json.Unmarshal(b, &res.Classes) != nil {
		t.Fatalf("%v: no CPU classes (%v): %s", args, err, b)
	}
	s := resSummary(t, string(r.Stdout))
	res.Rows = rowsOf(s)
	res.Docs = int64(w.n) // executions: nearly every doc
	if want := int64(w.tables["Config"].total + w.tables["Entities"].total + w.tables["Relationships"].total); res.Rows != want {
		t.Fatalf("%v: read %d rows, the world has %d", args, res.Rows, want)
	}
	if dry {
		if s.Plan == nil || s.Plan.CollisionCount != int64(w.collisions()) {
			t.Errorf("dry run: collisions %+v, want %d", s.Plan, w.collisions())
		}
		return res
	}
	scaleCheck(t, srv, s)
	res.Docs = s.DocsWritten
	return res
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// gcTrace is what GODEBUG=gctrace=1 says of a process's collections.
type gcTrace struct {
	Cycles                 int
	CPU                    time.Duration // sweep termination + mark (assist, background, idle) + mark termination
	Idle                   time.Duration // of which marking on otherwise idle processors
	LastLiveMB, PeakLiveMB float64
}

var gcLine = regexp.MustCompile(`^gc \d+ @[0-9.]+s \d+%: [^,]+ ms clock, ([0-9.]+)\+([0-9.]+)/([0-9.]+)/([0-9.]+)\+([0-9.]+) ms cpu, (\d+)->(\d+)->(\d+) MB`)

func parseGCTrace(stderr string) gcTrace {
	var g gcTrace
	sc := bufio.NewScanner(strings.NewReader(stderr))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := gcLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		g.Cycles++
		var ms float64
		for _, f := range m[1:6] {
			v, _ := strconv.ParseFloat(f, 64)
			ms += v
		}
		g.CPU += time.Duration(ms * float64(time.Millisecond))
		idle, _ := strconv.ParseFloat(m[4], 64)
		g.Idle += time.Duration(idle * float64(time.Millisecond))
		live, _ := strconv.ParseFloat(m[8], 64)
		g.LastLiveMB = live
		g.PeakLiveMB = max(g.PeakLiveMB, live)
	}
	return g
}

// sdkAlone is what TestScaleSDKAlone measured.
type sdkAlone struct {
	Docs            int
	Writers         int
	Seconds         float64
	CPUMicrosPerDoc float64
	GCShare         float64
}

// scaleSDKAlone runs TestScaleSDKAlone in a process of its own against a
// sink of this process, upserting docs docs.
func scaleSDKAlone(t *testing.T, docs int) sdkAlone {
	t.Helper()
	w := newScaleWorld(20000)
	srv := newScaleServers(w)
	defer srv.Close()
	c := exec.Command(os.Args[0], "-test.run=^TestScaleSDKAlone$", "-test.v", "-test.count=1")
	c.Env = append(os.Environ(), "BIFROST_SCALE_SDK_ENDPOINT="+srv.cosmos.URL+"/", "BIFROST_SCALE_SDK_DOCS="+strconv.Itoa(docs))
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("SDK alone: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "SDKALONE "); ok {
			var r sdkAlone
			if err := json.Unmarshal([]byte(rest), &r); err != nil {
				t.Fatal(err)
			}
			if bad := srv.sink.Bad(); len(bad) > 0 || srv.sink.upserts.Load() != int64(r.Docs) {
				t.Fatalf("SDK alone: sink got %d upserts of %d, refused %q", srv.sink.upserts.Load(), r.Docs, bad)
			}
			return r
		}
	}
	t.Fatalf("SDK alone: no result in\n%s", out)
	return sdkAlone{}
}

// TestScaleSDKAlone is the SDK alone, run by TestScaleBenchmark in a
// process of its own: BIFROST_SCALE_SDK_DOCS upserts of the docs of
// 20,000 executions (their bytes made beforehand) from
// sdkWriters goroutines calling azcosmos's UpsertItem,
// with an HTTP transport that keeps its connections, into the
// sink at BIFROST_SCALE_SDK_ENDPOINT. It prints the CPU time this process
// spent on the upserts (rusage, from their first to their last) per doc.
func TestScaleSDKAlone(t *testing.T) {
	endpoint := os.Getenv("BIFROST_SCALE_SDK_ENDPOINT")
	if endpoint == "" {
		t.Skip("run by TestScaleBenchmark")
	}
	total, err := strconv.Atoi(os.Getenv("BIFROST_SCALE_SDK_DOCS"))
	if err != nil {
		t.Fatal(err)
	}
	w := newScaleWorld(20000)
	type doc struct {
		scope string
		json  []byte
	}
	opts := scaleTransform
	opts.Now = time.Now()
	var docs []doc
	for n := range w.n {
		o := transform.Transform(w.execRow(n, w.orgs[w.org(n)]), w.execFacts(n), opts)
		docs = append(docs, doc{o.Scope, o.DocJSON})
	}
	cred, err := azcosmos.NewKeyCredential(scaleKey)
	if err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// As the tool's transport (azure.HTTPClient): no idle connection is
	// closed for want of room while the writers reuse them.
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 1024
	client, err := azcosmos.NewClientWithKey(endpoint, cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: &http.Client{Transport: tr}}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewContainer("bifrost", transform.ContainerExecutions)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Warm up: connections, the account's properties.
	if _, err := c.UpsertItem(ctx, azcosmos.NewPartitionKeyString(docs[0].scope), docs[0].json, nil); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	c0 := memlimit.ReadCPUClasses()
	cpu0 := rusageCPU()
	start := time.Now()
	var next atomic.Int64
	next.Store(1)
	var wg sync.WaitGroup
	errs := make(chan error, sdkWriters)
	for range sdkWriters {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= total {
					return
				}
				d := docs[i%len(docs)]
				if _, err := c.UpsertItem(ctx, azcosmos.NewPartitionKeyString(d.scope), d.json, nil); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	cpu := rusageCPU() - cpu0
	c1 := memlimit.ReadCPUClasses()
	c1.GC, c1.User, c1.Scavenge = c1.GC-c0.GC, c1.User-c0.User, c1.Scavenge-c0.Scavenge
	res := sdkAlone{Docs: total, Writers: sdkWriters, Seconds: elapsed.Seconds(),
		CPUMicrosPerDoc: cpu.Seconds() * 1e6 / float64(total-1), GCShare: c1.GCShare()}
	b, _ := json.Marshal(res)
	fmt.Printf("SDKALONE %s\n", b)
}

// sdkWriters is how many goroutines write at once in TestScaleSDKAlone:
// about the writes run keeps in flight before this sink (its window).
const sdkWriters = 64

// rusageCPU is the user + system CPU time of this process.
func rusageCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
