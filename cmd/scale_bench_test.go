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
	"github.com/bifrost/bifrost-migrate/verify"
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
				if pk, rk := tb.Key(p); q.Match(pk, rk, tb.Stamp(p)) {
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

	state := filepath.Join(t.TempDir(), "state")
	code, stdout, stderr := resExecute(srv.env(), nil, "run", "--execution-ttl", "full", "--retry-timeout", "20s", "--state-dir", state, "--output", "json", "--quiet")
	if code != cmd.ExitPartial {
		t.Fatalf("run: exit %d, want %d (the collisions): %s", code, cmd.ExitPartial, stderr)
	}
	s := resSummary(t, stdout)
	scaleCheck(t, srv, s)

	// What verify reads: the services' docs are what run wrote (the
	// sink's digests), and a full verify finds every one of them, the
	// collisions not migrated, nothing else; a --since finds no change.
	scaleDocsCheck(t, srv)
	code, stdout, stderr = resExecute(srv.env(), nil, "verify", "--retry-timeout", "20s", "--state-dir", state, "--output", "json", "--quiet")
	if code != cmd.ExitPartial {
		t.Fatalf("verify: exit %d, want %d (the collisions): %s", code, cmd.ExitPartial, stderr)
	}
	scaleVerifyCheck(t, srv, verifySummary(t, stdout))
	code, stdout, stderr = resExecute(srv.env(), nil, "verify", "--since", time.Now().UTC().Format(time.RFC3339), "--retry-timeout", "20s",
		"--state-dir", state, "--output", "json", "--quiet")
	if r := verifySummary(t, stdout); code != cmd.ExitOK || r.Scope.RowsRead != 0 || r.Scope.DocsJudged != 0 || !r.OK {
		t.Fatalf("verify --since now: exit %d, scope %+v: %s", code, r.Scope, stderr)
	}
	if u := srv.Unexpected(); len(u) > 0 {
		t.Errorf("requests the services do not know: %q", u)
	}
	scaleWindowCheck(t)
}

// scaleWindowCheck holds the services to what the write-stop window
// needs (TestScaleServers), on a world without collisions: the window's
// steps (scaleWindowSteps: a full verify in sync, the application's
// writes, the final pass replacing exactly their docs, verify --since in
// sync on exactly the changes); the Timestamp filter answered with
// exactly the rows store.Query.Match selects by each row's own
// Timestamp; the change feed since the writes giving exactly the
// replaced docs; and the counts, through verify --since: a doc the
// application deletes is missing, also when it creates another in the
// same scope (the count of the scope is then what it was: the change
// feed has the new doc, so the count falls short of what verify expects).
func scaleWindowCheck(t *testing.T) {
	t.Helper()
	srv := newScaleServers(buildScaleWorld(2500, false))
	defer srv.Close()
	w := srv.w
	state := filepath.Join(t.TempDir(), "state")
	run := func(args ...string) (int, string, string) {
		return resExecute(srv.env(), nil, append(args, "--retry-timeout", "20s")...)
	}
	res := scaleWindowSteps(t, srv, state, run, 10)
	t.Logf("window at %d rows: full verify %s, pass %s (the Table service read %d rows), verify --since %s (%d rows): %s",
		res.Rows, res.Full, res.Pass, res.PassScanned, res.Since, res.SinceScanned, res.Window)
	if res.PassScanned < int64(res.Rows) || res.SinceScanned < int64(res.Rows) {
		t.Errorf("the Table service read %d rows for the pass and %d for verify --since: the Timestamp filter reads every row (%d)",
			res.PassScanned, res.SinceScanned, res.Rows)
	}
	ch := w.changes.Load()
	ctx := context.Background()
	acct, err := azure.ParseStorageConnection(srv.env()["BIFROST_TABLES_CONNECTION"])
	if err != nil {
		t.Fatal(err)
	}
	reader := azure.NewTableReader(acct, azure.Options{})
	for _, since := range []time.Time{ch.stamp.Add(-time.Second), ch.stamp, ch.stamp.Add(time.Nanosecond * 100)} {
		for _, table := range transform.Tables() {
			tb := w.tables[table]
			q := store.Query{Since: since}
			var want, got []string
			for p := range tb.total {
				if pk, rk := tb.Key(p); q.Match(pk, rk, tb.Stamp(p)) {
					want = append(want, pk+"/"+rk)
				}
			}
			if err := store.ScanRanges(ctx, reader, "", table, q, store.Splits(table), func(p store.Page) error {
				for _, row := range p.Rows {
					got = append(got, row.PartitionKey+"/"+row.RowKey)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s since %s: %q, want %q", table, since, got, want)
			}
		}
	}
	client := scaleDocReader(t, srv)
	fed := map[string]bool{}
	if _, err := client.Changes(ctx, transform.ContainerExecutions, azure.ChangeFeedSince(ch.stamp), 3, func(raw []byte) error {
		var d struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			return err
		}
		fed[d.ID] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	written := srv.docs.written()
	if len(fed) != len(written) {
		t.Errorf("the change feed since the writes: %d docs, want the %d replaced", len(fed), len(written))
	}
	for k := range written {
		if _, id, _ := strings.Cut(k, "/"); !fed[id] {
			t.Errorf("the change feed since the writes lacks %s", k)
		}
	}

	// The application deletes an unchanged doc: missing. Then it creates
	// another in the same scope: the count is back to what the full
	// verify saw, and the deletion is still found.
	since := verifyRecordStart(t, state)
	n := 5
	if _, changed := w.changedAt(n); changed {
		n++
	}
	scope, id := transform.Scope(w.orgs[w.org(n)]), execID(n)
	if !srv.docs.remove(transform.ContainerExecutions, scope, id) {
		t.Fatalf("execution %d has no doc to delete", n)
	}
	for _, create := range []bool{false, true} {
		if create {
			srv.docs.write(transform.ContainerExecutions, scaleDoc{scope: scope, id: "app-" + id, ts: time.Now().Unix(),
				json: []byte(`{"id":"app-` + id + `","scope":"` + scope + `","status":"Pending"}`)}, false)
		}
		// The count of a whole container refused (each scope counted),
		// then answered.
		for _, counts := range []bool{false, true} {
			srv.docs.countsContainers.Store(counts)
			code, stdout, stderr := run("verify", "--since", since, "--execution-ttl", "full", "--state-dir", state, "--output", "json", "--quiet")
			r := verifySummary(t, stdout)
			if code != cmd.ExitPartial || r.Totals.Missing != 1 || len(r.Missing) != 1 || r.Missing[0].ID != id ||
				r.Totals.Different+r.Totals.Orphans != 0 || (create && r.AppWritten[transform.ContainerExecutions] != 1) {
				t.Errorf("verify --since after the application deleted %s (and created another doc in its scope: %v; the containers counted: %v): exit %d, missing %+v, totals %+v, app-written %v: %s",
					id, create, counts, code, r.Missing, r.Totals, r.AppWritten, lastLines(stderr, 5))
			}
		}
	}
}

// verifyRecordStart is when the last full verify recorded in state
// started.
func verifyRecordStart(t *testing.T, state string) string {
	t.Helper()
	rec, err := verify.LoadRecord(state)
	if err != nil || rec == nil || rec.LastFull == nil {
		t.Fatalf("no full verify recorded in %s: %v", state, err)
	}
	return rec.LastFull.Started
}

// scaleDocReader is the tool's reader of srv's Cosmos DB service.
func scaleDocReader(t *testing.T, srv *scaleServers) *azure.DocReader {
	t.Helper()
	acct, err := azure.ParseCosmosConnection(srv.env()["CosmosDBConnection"])
	if err != nil {
		t.Fatal(err)
	}
	client, err := azure.NewCosmosClient(acct, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := azure.NewDocReader(client, "bifrost")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// scaleDocsCheck holds the services' read side to what run wrote and to
// the answers verify --since needs: every doc of a container's query
// pages, and of the change feed from the beginning, is the doc whose
// digest the sink holds; the count of a scope's docs is the number of its
// ids, and they add up to the container's; a point read finds a doc and
// not one of another scope; the change feed from now has nothing.
func scaleDocsCheck(t *testing.T, srv *scaleServers) {
	t.Helper()
	ctx := context.Background()
	r := scaleDocReader(t, srv)
	written := func(c string, raw []byte) error {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
		id, _ := m["id"].(string)
		for _, p := range []string{"_rid", "_self", "_etag", "_attachments", "_ts"} {
			if _, ok := m[p]; !ok {
				return fmt.Errorf("doc %s has no %s", id, p)
			}
		}
		body := raw[:bytes.Index(raw, []byte(`,"_rid":`))]
		want := uint64(0)
		if n := execOfID(id); c == transform.ContainerExecutions && n >= 0 {
			want = srv.sink.execs[n].Load()
		} else {
			srv.sink.mu.Lock()
			want = srv.sink.others[c+"/"+id]
			srv.sink.mu.Unlock()
		}
		if digest(append(body, '}')) != want {
			return fmt.Errorf("doc %s/%s is not what run wrote", c, id)
		}
		return nil
	}
	for _, c := range []string{transform.ContainerEntities, transform.ContainerExecutions} {
		n := 0
		if err := r.QueryAll(ctx, c, "SELECT * FROM c", nil, 37, func(raw []byte) error { n++; return written(c, raw) }); err != nil {
			t.Fatal(err)
		}
		fed := 0
		if _, err := r.Changes(ctx, c, azure.ChangeFeedSince(time.Time{}), 41, func(raw []byte) error { fed++; return written(c, raw) }); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Changes(ctx, c, azure.ChangeFeedSince(time.Now()), 0, func([]byte) error { fed++; return nil }); err != nil {
			t.Fatal(err)
		}
		if n != srv.docs.docs(c) || fed != n {
			t.Errorf("%s: %d docs queried, %d from the change feed, want %d", c, n, fed, srv.docs.docs(c))
		}
		total := 0
		for scope := range srv.docs.counts[c] {
			p := []store.QueryParam{{Name: "@scope", Value: scope}}
			var count, ids int
			if err := r.QueryAll(ctx, c, "SELECT VALUE COUNT(1) FROM c WHERE c.scope = @scope", p, 0, func(raw []byte) error {
				var err error
				count, err = strconv.Atoi(string(raw))
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if err := r.QueryAll(ctx, c, "SELECT c.id FROM c WHERE c.scope = @scope", p, 13, func([]byte) error { ids++; return nil }); err != nil {
				t.Fatal(err)
			}
			if count != ids || count == 0 {
				t.Errorf("%s, scope %s: count %d, %d ids", c, scope, count, ids)
			}
			total += count
		}
		if total != n {
			t.Errorf("%s: the scopes' counts add up to %d, the container holds %d", c, total, n)
		}
	}
	id := execID(3)
	scope := transform.Scope(srv.w.orgs[srv.w.org(3)])
	if doc, found, err := r.Read(ctx, transform.ContainerExecutions, scope, id); err != nil || !found || written(transform.ContainerExecutions, doc) != nil {
		t.Errorf("point read of %s/%s: found %v, %v", scope, id, found, err)
	}
	if _, found, err := r.Read(ctx, transform.ContainerExecutions, "org-none", id); err != nil || found {
		t.Errorf("point read of %s in another scope: found %v, %v", id, found, err)
	}
}

// verifySummary is verify's --output json summary.
func verifySummary(t *testing.T, stdout string) *verify.Report {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var r struct {
			Type string `json:"type"`
			verify.Report
		}
		if json.Unmarshal([]byte(lines[i]), &r) == nil && r.Type == "summary" {
			return &r.Report
		}
	}
	t.Fatalf("no verify summary in %s", lastLines(stdout, 5))
	return nil
}

// scaleVerifyCheck fails t unless verify's report r judged every row of
// srv's world and found every doc: the collisions not migrated, nothing
// missing, different or orphaned.
func scaleVerifyCheck(t *testing.T, srv *scaleServers, r *verify.Report) {
	t.Helper()
	w := srv.w
	rows := w.tables["Config"].total + w.tables["Entities"].total + w.tables["Relationships"].total
	docs := srv.docs.docs(transform.ContainerEntities) + srv.docs.docs(transform.ContainerExecutions)
	if r.Totals.Rows != rows || r.Totals.Matched != docs || r.NotMigrated != w.collisions() ||
		r.Totals.Missing+r.Totals.Different+r.Totals.Orphans+r.Totals.ChangedWhileRunning != 0 || r.Partial {
		t.Errorf("verify: %d rows (want %d), %d matched (want %d), %d not migrated (want %d), totals %+v, partial %v",
			r.Totals.Rows, rows, r.Totals.Matched, docs, r.NotMigrated, w.collisions(), r.Totals, r.Partial)
	}
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
	if wr := srv.docs.written(); len(wr) > 0 {
		t.Errorf("run created or replaced %d docs: it only upserts", len(wr))
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
	others := 0
	w.fixedDocs(opts, func(table string, row transform.Row, o transform.Outcome) {
		others++
		srv.sink.mu.Lock()
		got := srv.sink.others[o.Container+"/"+o.ID]
		srv.sink.mu.Unlock()
		if got != digest(o.DocJSON) {
			fail("%s %s/%s: doc %s/%s not written, or different", table, row.PartitionKey, row.RowKey, o.Container, o.ID)
		}
	})
	srv.sink.mu.Lock()
	if len(srv.sink.others) != others {
		fail("%d docs outside executions, want %d", len(srv.sink.others), others)
	}
	srv.sink.mu.Unlock()
	return wrote.Load() + int64(others), problems
}

// TestScaleBenchmark is the scale benchmark (docs/performance.md, "At any size"): `run`,
// `run --dry-run` and `verify`, the built binary, against the services
// above at each size of BIFROST_SCALE_ROWS (rows of the three tables;
// default 1,000,000 and 5,000,000), and the SDK alone
// (TestScaleSDKAlone, a process of its own) writing the same docs into
// the same sink. It reports rows/s, CPU per row (the process's user +
// system time), peak RSS (GNU time), the garbage collector's share of
// the CPU and its cycles (GODEBUG=gctrace=1), and checks every doc (run)
// and every verdict (verify: every doc found, the collisions not
// migrated). It asserts nothing about speed; it runs only with
// BIFROST_BENCH=1 (./bench.sh; alone with BIFROST_BENCH_ONLY=scale),
// never in ./test.sh. A mode is a function of one world and fresh
// services (scaleRun, scaleVerifyRun): another measure (a replay pass, the
// write-stop window) is one more.
// BIFROST_SCALE_MODES=run (or dry-run, verify, window; comma-separated) runs those;
// BIFROST_SCALE_BIN=path measures that binary instead of this build;
// BIFROST_SCALE_TOOL_ENV="K=V …" adds to its environment (GOGC=…).
func TestScaleBenchmark(t *testing.T) {
	if only := os.Getenv("BIFROST_BENCH_ONLY"); os.Getenv("BIFROST_BENCH") != "1" || (only != "" && only != "scale") {
		t.Skip("benchmark: set BIFROST_BENCH=1 (see README.md, Performance), or run BIFROST_BENCH_ONLY=scale ./bench.sh")
	}
	sizes := testenv.Numbers(t, "BIFROST_SCALE_ROWS", 1000, 1000000, 5000000)
	modes := []string{"dry-run", "run", "verify", "window"}
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
	windows := map[int][]scaleWindow{}
	for _, rows := range order {
		w := newScaleWorld(rows / 5)
		for _, mode := range modes {
			var r scaleResult
			if mode == "window" {
				wr := scaleWindowRun(t, bin, rows)
				windows[rows] = append(windows[rows], wr)
				logf("window, %d rows: full verify %.1fs; the application wrote %d rows; the final pass %.2fs (engine %.2fs; the Table service read %d rows), verify --since %.2fs (it read %d rows): **%.2fs** from the last write to the verdict",
					wr.Rows, wr.Full.Seconds(), 2*scaleWindowChanges, wr.Pass.Seconds(), wr.PassEngine.Seconds(), wr.PassScanned, wr.Since.Seconds(), wr.SinceScanned, wr.Window.Seconds())
				continue
			}
			if mode == "verify" {
				r = scaleVerifyRun(t, bin, w)
			} else {
				r = scaleRun(t, bin, w, mode == "dry-run")
			}
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
	for _, rows := range sizes[1:] {
		base, ws := windows[sizes[0]], windows[rows]
		if len(ws) == 0 {
			continue
		}
		var sum float64
		for _, b := range base {
			sum += b.Window.Seconds()
		}
		logf("window, %d rows against %d (mean of %d runs): × %.2f (≤ 1.5); %.2fs (under 30 s)", rows, sizes[0], len(base),
			ws[0].Window.Seconds()/(sum/float64(len(base))), ws[0].Window.Seconds())
	}
	for _, mode := range modes {
		base := results[mode][sizes[0]]
		if mode == "window" {
			continue
		}
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
	for _, rows := range sizes {
		verifies, dries := results["verify"][rows], results["dry-run"][rows]
		if len(verifies) == 0 || len(dries) == 0 {
			continue
		}
		logf("verify, %d rows: CPU %.1f µs per row against the dry run's %.1f: × %.2f (≤ 1.5)", rows,
			mean(verifies, cpu), mean(dries, cpu), mean(verifies, cpu)/mean(dries, cpu))
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
	r, res := scaleTool(t, srv, bin, args)
	if ee, ok := r.Exit.(*exec.ExitError); r.Exit != nil && !(ok && ee.ExitCode() == cmd.ExitPartial) {
		t.Fatalf("%v: %v: %s", args, r.Exit, lastLines(string(r.Stderr), 20))
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

// scaleTool runs the binary bin with args against srv, with the
// collector's trace and the runtime's CPU classes asked for (and
// BIFROST_SCALE_TOOL_ENV's settings), and returns the run and what it
// measured: its CPU, peak RSS, wall time and collector's work.
func scaleTool(t *testing.T, srv *scaleServers, bin string, args []string) (testenv.Timed, scaleResult) {
	t.Helper()
	env := srv.env()
	env["GODEBUG"] = "gctrace=1"
	classes := filepath.Join(t.TempDir(), "cpu-classes.json")
	env["BIFROST_CPU_CLASSES"] = classes
	for _, kv := range strings.Fields(os.Getenv("BIFROST_SCALE_TOOL_ENV")) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	r := testenv.RunTimed(t, env, bin, args...)
	res := scaleResult{RSS: r.MaxRSS, CPU: r.CPU, Wall: r.Wall, GC: parseGCTrace(string(r.Stderr))}
	if b, err := os.ReadFile(classes); err != nil || json.Unmarshal(b, &res.Classes) != nil {
		t.Fatalf("%v: no CPU classes (%v): %s (%s)", args, err, b, lastLines(string(r.Stderr), 20))
	}
	return r, res
}

// scaleVerifyRun runs `verify` (the binary bin) against fresh services
// over w, which serve the docs run writes, and checks its verdict.
func scaleVerifyRun(t *testing.T, bin string, w *scaleWorld) scaleResult {
	t.Helper()
	srv := newScaleServers(w)
	defer srv.Close()
	args := []string{"verify", "--execution-ttl", "full", "--state-dir", filepath.Join(t.TempDir(), "state"), "--output", "json", "--quiet"}
	r, res := scaleTool(t, srv, bin, args)
	if ee, ok := r.Exit.(*exec.ExitError); !ok || ee.ExitCode() != cmd.ExitPartial {
		t.Fatalf("%v: exit %v, want %d (the collisions): %s", args, r.Exit, cmd.ExitPartial, lastLines(string(r.Stderr), 20))
	}
	res.Docs = int64(srv.docs.size(transform.ContainerExecutions))
	rep := verifySummary(t, string(r.Stdout))
	res.Rows = int64(rep.Totals.Rows)
	scaleVerifyCheck(t, srv, rep)
	if u := srv.Unexpected(); len(u) > 0 {
		t.Errorf("requests the services do not know: %q", u)
	}
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

// scaleWindowChanges is how many executions the application writes again
// before its writes stop (scaleWorld.change): each one's row and status
// index row, 100 rows.
const scaleWindowChanges = 50

// scaleCommand runs the tool with args (through the built binary, or in
// this process) and returns its exit code and output.
type scaleCommand func(args ...string) (code int, stdout, stderr string)

// scaleWindow is what one write-stop window measured: the full verify
// before it, the final pass (the command's time and its engine's, the
// summary's elapsedSeconds) and `verify --since`, the window from the
// application's last write to that verdict, and the rows the Table
// service read (scanned) to answer the pass and the verify --since.
type scaleWindow struct {
	Rows                      int
	Full                      time.Duration
	Pass, PassEngine, Since   time.Duration
	Window                    time.Duration
	PassScanned, SinceScanned int64
}

// scaleWindowSteps measures the cutover's write-stop window against srv
// (a world without collisions, whose docs the services serve as run
// wrote them) with the tool run gives: a full verify (in sync: its
// record and its docs file in state), then the application writes k
// executions again (2·k rows), and, timed from that last write, the
// final `replay --since` the full verify's start — which must replace
// exactly their docs, each with what the transform makes of its row now
// — and `verify --since` it, whose verdict must be "in sync: the full
// verify … plus every change since", having judged exactly the changed
// rows and docs.
func scaleWindowSteps(t *testing.T, srv *scaleServers, state string, run scaleCommand, k int) scaleWindow {
	t.Helper()
	w := srv.w
	common := []string{"--execution-ttl", "full", "--state-dir", state, "--output", "json", "--quiet"}
	start := time.Now()
	code, stdout, stderr := run(append([]string{"verify"}, common...)...)
	res := scaleWindow{Full: time.Since(start)}
	if code != cmd.ExitOK {
		t.Fatalf("the full verify: exit %d: %s", code, lastLines(stderr, 10))
	}
	full := verifySummary(t, stdout)
	scaleVerifyCheck(t, srv, full)
	res.Rows = full.Totals.Rows
	rec, err := verify.LoadRecord(state)
	if err != nil || rec == nil || rec.LastFull == nil || !rec.LastFull.OK || rec.LastFull.Docs == "" {
		t.Fatalf("no clean full verify with its docs file recorded in %s: %v %+v", state, err, rec)
	}
	since := rec.LastFull.Started

	ns := w.change(k, time.Now().UTC())
	last := time.Now()
	scanned := srv.rowsScanned.Load()
	code, stdout, stderr = run(append([]string{"replay", "--since", since}, common...)...)
	res.Pass = time.Since(last)
	res.PassScanned = srv.rowsScanned.Load() - scanned
	if code != cmd.ExitOK {
		t.Fatalf("the final replay --since %s: exit %d: %s", since, code, lastLines(stderr, 10))
	}
	var pass struct {
		Totals         migrate.ReplayCounts `json:"totals"`
		ElapsedSeconds float64              `json:"elapsedSeconds"`
	}
	if err := json.Unmarshal([]byte(lastLines(stdout, 1)), &pass); err != nil {
		t.Fatalf("replay's summary: %v: %s", err, lastLines(stdout, 1))
	}
	res.PassEngine = time.Duration(pass.ElapsedSeconds * float64(time.Second))
	if pass.Totals.Rows != int64(2*len(ns)) || pass.Totals.Replaced != int64(len(ns)) || pass.Totals.Created+pass.Totals.Conflicts+pass.Totals.DeadLetters != 0 {
		t.Fatalf("the final replay: %+v, want %d rows read and %d docs replaced", pass.Totals, 2*len(ns), len(ns))
	}

	t1 := time.Now()
	scanned = srv.rowsScanned.Load()
	code, stdout, stderr = run(append([]string{"verify", "--since", since}, common...)...)
	res.Window, res.Since = time.Since(last), time.Since(t1)
	res.SinceScanned = srv.rowsScanned.Load() - scanned
	r := verifySummary(t, stdout)
	if code != cmd.ExitOK || !r.OK || r.Partial || r.Scope.Base.IsZero() || r.Scope.RowsRead != 2*len(ns) || r.Scope.DocsJudged != len(ns) {
		t.Fatalf("verify --since %s: exit %d, ok %v, partial %v, scope %+v (want %d rows and %d docs, on the full verify): %s",
			since, code, r.OK, r.Partial, r.Scope, 2*len(ns), len(ns), lastLines(stderr, 10))
	}
	scaleReplayCheck(t, srv, ns)
	if u := srv.Unexpected(); len(u) > 0 {
		t.Errorf("requests the services do not know: %q", u)
	}
	return res
}

// scaleReplayCheck fails t unless the docs written since the world's are
// exactly those of executions ns, each what the transform makes of its
// row as the table holds it now.
func scaleReplayCheck(t *testing.T, srv *scaleServers, ns []int) {
	t.Helper()
	w := srv.w
	written := srv.docs.written()
	opts := scaleTransform
	opts.Now = time.Now()
	for _, n := range ns {
		pk := w.orgs[w.org(n)]
		tb := w.tables[transform.TableEntities]
		row := tb.Row(tb.Seek(pk, w.execRowKey(n)))
		o := transform.Transform(row, w.execFacts(n), opts)
		doc, ok := written[transform.ContainerExecutions+"/"+o.ID]
		if !ok || !bytes.Equal(doc.json, o.DocJSON) {
			t.Errorf("execution %d (%s): replay's doc %q, want %q", n, o.ID, doc.json, o.DocJSON)
		}
	}
	if len(written) != len(ns) {
		t.Errorf("%d docs written since the world's, want the %d changed executions'", len(written), len(ns))
	}
}

// scaleWindowRun measures the write-stop window with the binary bin on
// a world of rows rows (rows/5 executions) without collisions, against
// fresh services.
func scaleWindowRun(t *testing.T, bin string, rows int) scaleWindow {
	t.Helper()
	srv := newScaleServers(buildScaleWorld(rows/5, false))
	defer srv.Close()
	env := srv.env()
	run := func(args ...string) (int, string, string) {
		r := testenv.RunTimed(t, env, bin, args...)
		code := 0
		if ee, ok := r.Exit.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if r.Exit != nil {
			t.Fatalf("%v: %v", args, r.Exit)
		}
		return code, string(r.Stdout), string(r.Stderr)
	}
	return scaleWindowSteps(t, srv, filepath.Join(t.TempDir(), "state"), run, scaleWindowChanges)
}
