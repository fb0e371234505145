package cmd

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
	"github.com/bifrost/bifrost-migrate/verify"
)

// lastFullStart returns the start of the full verify recorded in dir, as
// RFC 3339 with nanoseconds.
func lastFullStart(t *testing.T, dir string) string {
	t.Helper()
	rec, err := verify.LoadRecord(dir)
	if err != nil || rec == nil || rec.LastFull == nil {
		t.Fatalf("no full verify recorded in %s: %v %+v", dir, err, rec)
	}
	return rec.LastFull.Started
}

// recordFile is the state directory's verify.json, decoded.
func recordFile(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, verify.RecordFile))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("verify.json: %v: %s", err, b)
	}
	return m
}

// newExecution adds an execution row like row with id, as the
// application does.
func (e *replayEnv) newExecution(row transform.Row, id string) {
	e.t.Helper()
	reverseTs, _, _ := strings.Cut(strings.TrimPrefix(row.RowKey, "execution:"), "_")
	props := map[string]any{}
	for name, v := range row.Props {
		if v.Type == transform.EdmString {
			props[name] = v.Str
		}
	}
	props["ExecutionId"] = id
	e.mergeRow(transform.TableEntities, row.PartitionKey, "execution:"+reverseTs+"_"+id, props)
}

// docIDs are the ids of refs, sorted.
func docIDs(refs []verify.DocRef) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.ID)
	}
	slices.Sort(out)
	return out
}

// differingIDs are the ids of the docs among differences, sorted.
func differingIDs(ds []verify.Difference) []string {
	var out []string
	for _, d := range ds {
		if !slices.Contains(out, d.Doc.ID) {
			out = append(out, d.Doc.ID)
		}
	}
	slices.Sort(out)
	return out
}

// The acceptance test of verify --since (issue 39): after a clean full
// verify, the application changes rows and docs — an edit, a new row, a
// deleted doc, a tampered doc. verify --since the full verify's start
// (the change feed through the fault proxy, the Cosmos DB stand-in having
// none) reports exactly those: the edited row's doc and the tampered doc
// different, the new row's doc and the deleted doc missing, no orphan,
// nothing else. Once replay has applied the edit and the new row, it
// reports the other two alone; once the deleted and tampered docs' rows
// are saved again and replay --force writes their docs, it exits 0 and
// says the whole is in sync. Without the full verify (another state
// directory) it says what it covers: the changes since then.
func TestVerifySinceAfterFullVerify(t *testing.T) {
	e := newReverseEnv(t, nil)
	e.dropDeadLetterRows()
	if code, stdout, r := e.verify(); code != ExitOK || !r.OK || r.Partial {
		t.Fatalf("the full verify: exit %d:\n%s", code, stdout)
	}
	start := lastFullStart(t, e.stateDir)
	full := recordFile(t, e.stateDir)
	if full["version"] != 1.0 || !reflect.DeepEqual(full["last"], full["lastFull"]) {
		t.Errorf("verify.json after a full verify: %v", full)
	}
	lf, _ := full["lastFull"].(map[string]any)
	for _, k := range []string{"started", "ended", "toolVersion", "ok", "partial", "scope", "verdict", "missing", "different", "orphans", "notMigrated", "docs"} {
		if _, ok := lf[k]; !ok {
			t.Errorf("verify.json's lastFull has no %q: %v", k, lf)
		}
	}
	if lf["ok"] != true || lf["partial"] != false || lf["verdict"] != "verify: OK" || lf["docs"] != verify.DocsFile {
		t.Errorf("verify.json's lastFull: %v", lf)
	}
	rows := e.executionRows(4)
	edited, tampered, deleted, model := rows[0], rows[1], rows[2], rows[3]
	refOf := func(row transform.Row) verify.DocRef {
		row.Table = transform.TableEntities
		o := transform.Transform(row, transform.BlobFacts{}, transform.Options{Now: testNow}.WithDefaults())
		return verify.DocRef{Container: o.Container, Scope: o.Scope, ID: o.ID}
	}
	time.Sleep(20 * time.Millisecond)
	e.mergeRow(transform.TableEntities, edited.PartitionKey, edited.RowKey, map[string]any{"Status": "Cancelled"})
	const newID = "5ee1ce00-0000-4000-8000-000000000001"
	e.newExecution(model, newID)
	d := refOf(deleted)
	e.deleteDoc(d.Container, d.Scope, d.ID)
	tr := refOf(tampered)
	doc := e.readDoc(tr.Container, tr.Scope, tr.ID)
	doc["status"] = "Tampered"
	e.replaceDoc(tr.Container, doc)

	code, stdout, r := e.verify("--since", start)
	if got, want := docIDs(r.Missing), []string{newID, d.ID}; !slices.Equal(got, want) {
		t.Errorf("missing %q, want %q", got, want)
	}
	if got, want := differingIDs(r.Differences), sorted(refOf(edited).ID, tr.ID); !slices.Equal(got, want) {
		t.Errorf("different %q, want %q", got, want)
	}
	if code != ExitPartial || r.Totals.Missing != 2 || r.Totals.Different != 2 || r.Totals.Orphans != 0 || r.NotMigrated != 0 || r.Partial {
		t.Errorf("exit %d, totals %+v, not migrated %d, partial %v; want exit 3, 2 missing, 2 different, nothing else:\n%s",
			code, r.Totals, r.NotMigrated, r.Partial, stdout)
	}
	if want := "verify: 2 missing, 2 different, 0 orphan doc(s) in the full verify of "; !strings.Contains(stdout, want) {
		t.Errorf("stdout does not say %q:\n%s", want, stdout)
	}
	// The --since is the last verify; the full one stays lastFull.
	after := recordFile(t, e.stateDir)
	last, _ := after["last"].(map[string]any)
	scope, _ := last["scope"].(map[string]any)
	if !reflect.DeepEqual(after["lastFull"], full["lastFull"]) || last["ok"] != false || scope["since"] == nil || scope["base"] == nil ||
		last["missing"] != 2.0 || last["different"] != 2.0 || !strings.HasPrefix(last["verdict"].(string), "verify: 2 missing") {
		t.Errorf("verify.json after the --since: %v", after)
	}

	// replay applies the application's two changes to the rows.
	if code, _, stderr := e.replay(nil, "--since", start); code != ExitOK {
		t.Fatalf("replay: exit %d: %s", code, stderr)
	}
	code, stdout, r = e.verify("--since", start)
	if code != ExitPartial || !slices.Equal(docIDs(r.Missing), []string{d.ID}) || !slices.Equal(differingIDs(r.Differences), []string{tr.ID}) ||
		r.Totals.Orphans != 0 {
		t.Errorf("after replay: exit %d, missing %q, different %q; want the deleted and the tampered doc alone:\n%s",
			code, docIDs(r.Missing), differingIDs(r.Differences), stdout)
	}

	// The repair: their rows saved again (the application re-saves
	// them), and replay --force writes their docs from the rows.
	repair := e.since()
	e.mergeRow(transform.TableEntities, deleted.PartitionKey, deleted.RowKey, map[string]any{})
	e.mergeRow(transform.TableEntities, tampered.PartitionKey, tampered.RowKey, map[string]any{})
	if code, _, stderr := e.replay(nil, "--since", repair, "--force"); code != ExitOK {
		t.Fatalf("replay --force: exit %d: %s", code, stderr)
	}
	code, stdout, r = e.verify("--since", start)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if want := "verify: OK — in sync: the full verify of "; code != ExitOK || !r.OK || r.Partial || !strings.HasPrefix(lines[len(lines)-1], want) ||
		!strings.Contains(lines[len(lines)-1], " plus every change since ") {
		t.Errorf("after the repair: exit %d, ok %v, partial %v; want exit 0 and a last line starting %q:\n%s", code, r.OK, r.Partial, want, stdout)
	}

	// Without the full verify: what it covers, no more.
	other := e.stateDir
	e.stateDir = filepath.Join(t.TempDir(), "fresh")
	code, stdout, r = e.verify("--since", start)
	e.stateDir = other
	lines = strings.Split(strings.TrimSpace(stdout), "\n")
	if code != ExitOK || !r.OK || !r.Partial || !strings.HasPrefix(lines[len(lines)-1], "verify: OK for changes since ") {
		t.Errorf("without a full verify: exit %d, ok %v, partial %v:\n%s", code, r.OK, r.Partial, stdout)
	}
}

func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}

// hookTransport runs before on each request it carries, and after once
// the service answered.
type hookTransport struct {
	base   http.RoundTripper
	before func(*http.Request)
	after  func(*http.Request, *http.Response)
}

func (h hookTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.before != nil {
		h.before(r)
	}
	resp, err := h.base.RoundTrip(r)
	if err == nil && h.after != nil {
		h.after(r, resp)
	}
	return resp, err
}

// isDocsQuery reports whether r is a query of a container's docs.
func isDocsQuery(r *http.Request, container string) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/colls/"+container+"/docs") &&
		strings.EqualFold(r.Header.Get("x-ms-documentdb-query"), "true")
}

// The acceptance test of a full verify while rows change under it (issue
// 39): `replay --follow` keeps Cosmos DB in step, and once verify has
// started (its first request to the tables) the application edits two
// execution rows and adds one; the follow's writes wait until verify has
// read the executions, so verify reads the rows changed and their docs
// not yet. A doc tampered with before verify started (its row unchanged)
// is reported, and nothing else: the changes in flight are read again
// and either agree by then or are counted apart as changed while verify
// ran, which `verify --since` its start judges.
func TestVerifyWhileReplayFollows(t *testing.T) {
	e := newReplayEnv(t)
	e.dropDeadLetterRows()
	rows := e.executionRows(4)
	tr := rows[3]
	tr.Table = transform.TableEntities
	o := transform.Transform(tr, transform.BlobFacts{}, transform.Options{Now: testNow}.WithDefaults())
	doc := e.readDoc(o.Container, o.Scope, o.ID)
	doc["status"] = "Tampered"
	e.replaceDoc(o.Container, doc)
	since := e.since()

	// replay --follow, its doc writes held until verify read the docs.
	read := make(chan struct{})
	var readOnce sync.Once
	hold := hookTransport{base: http.DefaultTransport, before: func(r *http.Request) {
		if strings.Contains(r.URL.Path, "/docs") && r.Method != http.MethodGet && r.Header.Get("x-ms-documentdb-query") == "" {
			<-read
		}
	}}
	f, _, errOut := newTestFactory(e.env)
	f.Transport = hold
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	done := make(chan int, 1)
	go func() {
		done <- Execute(ctx, f, append([]string{"--output", "json"}, e.replayArgs("--since", since, "--follow", "--interval", "1s")...))
	}()

	var changeOnce sync.Once
	watch := hookTransport{base: http.DefaultTransport,
		before: func(r *http.Request) {
			if strings.Contains(r.URL.Path, e.prefix+transform.TableConfig) {
				changeOnce.Do(func() {
					time.Sleep(20 * time.Millisecond)
					e.mergeRow(transform.TableEntities, rows[0].PartitionKey, rows[0].RowKey, map[string]any{"Status": "Cancelled"})
					e.mergeRow(transform.TableEntities, rows[1].PartitionKey, rows[1].RowKey, map[string]any{"ErrorMessage": "changed while verify ran"})
					e.newExecution(rows[2], "5ee1ce00-0000-4000-8000-000000000002")
				})
			}
		},
		after: func(r *http.Request, resp *http.Response) {
			if isDocsQuery(r, transform.ContainerExecutions) && resp.Header.Get("x-ms-continuation") == "" {
				readOnce.Do(func() { close(read) })
			}
		}}
	code, stdout, r := e.verifyWith(watch)
	readOnce.Do(func() { close(read) })
	stopFollowing(t, interrupt, done, errOut)

	if code != ExitPartial || r.OK || r.Totals.Different != 1 || r.Totals.Missing != 0 || r.Totals.Orphans != 0 ||
		!slices.Equal(differingIDs(r.Differences), []string{o.ID}) {
		t.Errorf("exit %d, totals %+v, different %q; want exit 3 for the tampered doc %s alone:\n%s", code, r.Totals, differingIDs(r.Differences), o.ID, stdout)
	}
	t.Logf("changed while verify ran: %d (the others agreed when read again)", r.Totals.ChangedWhileRunning)
}

// TestRangesFileInTheStateDirectory: a full verify writes where each
// table splits (ranges.json: the fixtures' tables are smaller than one
// range, so each without a split). A ranges file that cannot be read
// stops verify --since and replay --since (exit 2) before any request,
// each saying which file and what to do; the replay wrote
// nothing: once the file is removed, the row changed before is replaced.
func TestRangesFileInTheStateDirectory(t *testing.T) {
	e := newReverseEnv(t, nil)
	e.dropDeadLetterRows()
	if code, stdout, r := e.verify(); code != ExitOK || !r.OK {
		t.Fatalf("the full verify: exit %d:\n%s", code, stdout)
	}
	ranges, err := store.LoadRanges(e.stateDir)
	if err != nil || len(ranges) != len(transform.Tables()) {
		t.Fatalf("ranges after a full verify: %v, %v; want each of the %d tables", ranges, err, len(transform.Tables()))
	}
	for table, keys := range ranges {
		if len(keys) != 0 {
			t.Errorf("%s splits at %v, want nowhere (fewer rows than %d)", table, keys, store.RangeRows)
		}
	}
	start := lastFullStart(t, e.stateDir)
	row := e.executionRows(1)[0]
	time.Sleep(20 * time.Millisecond)
	e.mergeRow(transform.TableEntities, row.PartitionKey, row.RowKey, map[string]any{"Status": "Cancelled"})

	file := filepath.Join(e.stateDir, store.RangesFile)
	if err := os.WriteFile(file, []byte("{garbled"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := file + " is not a file of key ranges this version writes: remove it (the passes then split each table as before, and the next full verify writes it again)"
	record := recordFile(t, e.stateDir)
	code, _, stderr := e.cli("verify", "--database", e.db, "--table-prefix", e.prefix, "--blob-container", e.blobs,
		"--state-dir", e.stateDir, "--quiet", "--since", start)
	if code != ExitUsage || !strings.Contains(stderr, want) {
		t.Errorf("verify --since: exit %d, stderr %q; want exit 2 saying %q", code, stderr, want)
	}
	if !reflect.DeepEqual(recordFile(t, e.stateDir), record) {
		t.Error("verify --since changed verify.json")
	}
	code, _, stderr = e.cli(e.replayArgs("--since", start)...)
	if code != ExitUsage || !strings.Contains(stderr, want) {
		t.Errorf("replay --since: exit %d, stderr %q; want exit 2 saying %q", code, stderr, want)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	code, s, stderr := e.replay(nil, "--since", start)
	if code != ExitOK || s.Totals.Replaced != 1 {
		t.Errorf("replay --since without the file: exit %d, totals %+v; want the changed row's doc replaced: %s", code, s.Totals, stderr)
	}
}
