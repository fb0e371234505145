package migrate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// goldenNow is the clock of fixtures/inventory.json and the transform
// goldens.
var goldenNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

type env struct {
	src      *fakes.Tables
	docs     *fakes.Docs
	blobs    *fakes.Blobs
	progress *recordingProgress
	dir      string
}

func newEnv(t *testing.T, pageSize int) *env {
	docs := fakes.NewDocs()
	docs.Charge = 1.5
	return &env{
		src: fixtureTables(t, pageSize), docs: docs, blobs: fixtureBlobs(t),
		progress: newRecordingProgress(), dir: filepath.Join(t.TempDir(), "state"),
	}
}

func (e *env) opts() RunOptions {
	return RunOptions{CountRows: true, Common: Common{StateDir: e.dir, Concurrency: 4}}
}

func (e *env) run(ctx context.Context, opts RunOptions) (Summary, error) {
	return Run(ctx, opts, Deps{Source: e.src, Docs: e.docs, Blobs: e.blobs, Env: Env{Progress: e.progress, Now: func() time.Time { return goldenNow }}})
}

// readDeadLetters reads the dead letters of file (DeadLetterFile,
// ReplayDeadLetterFile or ReverseDeadLetterFile) in dir, one per line.
func readDeadLetters(t *testing.T, dir, file string) []DeadLetter {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []DeadLetter
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var dl DeadLetter
		if err := json.Unmarshal(sc.Bytes(), &dl); err != nil {
			t.Fatalf("%s: dead letter %q: %v", file, sc.Text(), err)
		}
		out = append(out, dl)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return out
}

func TestRunFixturesMatchInventory(t *testing.T) {
	e := newEnv(t, 7)
	s, err := e.run(context.Background(), e.opts())
	if err != nil {
		t.Fatal(err)
	}
	want, err := fixtures.InventoryCounts()
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Kinds(); !reflect.DeepEqual(got, want) {
		t.Errorf("counts per table and kind:\n got %v\nwant %v", got, want)
	}
	if !s.Complete || s.DeadLetters != 6 {
		t.Errorf("complete %v, dead letters %d; want true, 6", s.Complete, s.DeadLetters)
	}
	if n := len(e.docs.Snapshot()); int64(n) != s.Dispositions["doc"] || n != 60 {
		t.Errorf("%d docs written, summary says %d, want 60", n, s.Dispositions["doc"])
	}
	if s.BlobsUploaded != 3 || s.Warnings[transform.ReasonDanglingIndex] != 1 {
		t.Errorf("blobs uploaded %d (want 3), dangling %d (want 1)", s.BlobsUploaded, s.Warnings[transform.ReasonDanglingIndex])
	}
	if s.RequestCharge != 1.5*60 {
		t.Errorf("request charge %v, want %v", s.RequestCharge, 1.5*60)
	}
	if len(readDeadLetters(t, e.dir, DeadLetterFile)) != 6 {
		t.Errorf("dead-letter file does not have 6 lines")
	}
	st, err := LoadState(e.dir)
	if err != nil || st == nil || !st.Done {
		t.Fatalf("state after a complete run: %+v, %v", st, err)
	}
	for _, table := range fixtures.Tables() {
		if e.progress.totals[table] != int64(len(e.src.Rows(table))) || e.progress.advanced[table] != e.progress.totals[table] ||
			e.progress.read[table] != e.progress.totals[table] {
			t.Errorf("%s: progress total %d, advanced %d, read %d", table, e.progress.totals[table], e.progress.advanced[table], e.progress.read[table])
		}
	}

	// The docs are reported as they are written, the dead letters at
	// their page's checkpoint; the pre-count names its tables first.
	if want := (Outcome{Written: 60, DeadLetters: 6}); e.progress.outcomes != want {
		t.Errorf("outcomes %+v, want %+v", e.progress.outcomes, want)
	}
	if !reflect.DeepEqual(e.progress.counting, fixtures.Tables()) {
		t.Errorf("counting %v, want %v", e.progress.counting, fixtures.Tables())
	}

	// A rerun of a complete run does nothing and says so.
	writes := e.docs.Writes()
	s2, err := e.run(context.Background(), e.opts())
	if err != nil || !s2.AlreadyComplete || e.docs.Writes() != writes {
		t.Errorf("rerun: already complete %v, err %v, %d more writes", s2.AlreadyComplete, err, e.docs.Writes()-writes)
	}
	if !strings.Contains(e.progress.text(), "already completed") {
		t.Errorf("rerun message missing: %q", e.progress.text())
	}
	if !reflect.DeepEqual(s2.Kinds(), s.Kinds()) {
		t.Errorf("rerun summary differs")
	}
}

// Every dead letter is one line with its exact reason, redacted.
func TestRunDeadLetters(t *testing.T) {
	e := newEnv(t, 5)
	// A doc over 2 MB: control characters take 6 bytes each in JSON.
	big := transform.Row{Table: "Entities", PartitionKey: "GLOBAL", RowKey: "bigthing:1", Props: map[string]transform.Value{}}
	for i := range 12 {
		big.Props[string(rune('A'+i))+"Blob"] = transform.String(strings.Repeat("\x01", 32000))
	}
	big.Props["SecretRef"] = transform.String("FAKE-SECRET-in-a-big-row")
	e.src.Add("Entities", big)
	// A different blob where an inline result must go.
	if err := e.blobs.Upload(context.Background(), "84999ecb-cfa4-5a6e-8ce7-d517dfb1372b/result.json", []byte(`{"other":"content"}`)); err != nil {
		t.Fatal(err)
	}
	// A doc the service rejects: the first role.
	var rejectID string
	for _, row := range e.src.Rows("Entities") {
		if strings.HasPrefix(row.RowKey, "role:") {
			rejectID = transform.Transform(row, transform.BlobFacts{}, transform.Options{Now: goldenNow}).ID
			break
		}
	}
	e.docs.BeforeWrite = func(ctx context.Context, op fakes.Op) error {
		if op.ID == rejectID {
			return &store.Fault{Kind: store.Refused, Status: 400, Reason: "One of the specified inputs is invalid"}
		}
		return nil
	}
	s, err := e.run(context.Background(), e.opts())
	if err != nil {
		t.Fatal(err)
	}
	dls := readDeadLetters(t, e.dir, DeadLetterFile)
	reasons := map[string]string{}
	for _, dl := range dls {
		reasons[dl.RowKey] = dl.Reason
	}
	want := map[string]string{
		"config:smtp_port": transform.CollisionReason("entities", "GLOBAL", "config-smtp-port"),
		"bigthing:1":       "", // checked below: names the size
		"execution:8205093999999_84999ecb-cfa4-5a6e-8ce7-d517dfb1372b": "blob 84999ecb-cfa4-5a6e-8ce7-d517dfb1372b/result.json already exists with different content",
	}
	for rk, reason := range want {
		got, ok := reasons[rk]
		switch {
		case !ok:
			t.Errorf("%s: no dead letter", rk)
		case reason != "" && got != reason:
			t.Errorf("%s: reason %q, want %q", rk, got, reason)
		}
	}
	if r := reasons["bigthing:1"]; !strings.HasPrefix(r, "doc is ") || !strings.Contains(r, "more than the 2 MB limit") {
		t.Errorf("big doc reason %q", r)
	}
	var found = map[string]bool{}
	for rk, r := range reasons {
		switch {
		case r == transform.DeadLetterConfigInt:
			found["int"] = true
		case strings.Contains(r, "InputData"):
			found["json"] = true
		case strings.Contains(r, "differs from the RowKey's execution id"):
			found["executionId"] = true
		case strings.HasPrefix(r, "Cosmos DB rejected the doc (400): One of the specified inputs is invalid"):
			found["permanent"] = true
		}
		_ = rk
	}
	for _, k := range []string{"int", "json", "executionId", "permanent"} {
		if !found[k] {
			t.Errorf("no dead letter of kind %s in %v", k, reasons)
		}
	}
	if int64(len(dls)) != s.DeadLetters || len(dls) != len(reasons) {
		t.Errorf("%d dead-letter lines, %d rows, summary says %d", len(dls), len(reasons), s.DeadLetters)
	}
	data, _ := os.ReadFile(filepath.Join(e.dir, DeadLetterFile))
	if bytes.Contains(data, []byte("FAKE-SECRET")) {
		t.Errorf("a secret value is in the dead-letter file")
	}
	if !bytes.Contains(data, []byte(`"SecretRef":"***"`)) {
		t.Errorf("the redacted property is not shown as ***")
	}
	// The row is loadable annotated JSON.
	for _, dl := range dls {
		if _, err := transform.DecodeEntity(dl.Table, dl.Row); err != nil {
			t.Errorf("%s: row does not decode: %v", dl.RowKey, err)
		}
	}
}

func TestRunDryRunWritesNothingAndPlansTheSame(t *testing.T) {
	e := newEnv(t, 10)
	blobsBefore := e.blobs.Snapshot()
	opts := e.opts()
	opts.DryRun, opts.Show = true, 1
	plan, err := e.run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(e.dir); !os.IsNotExist(err) {
		t.Errorf("dry run touched the state directory: %v", err)
	}
	if len(e.docs.Snapshot()) != 0 || !reflect.DeepEqual(e.blobs.Snapshot(), blobsBefore) {
		t.Errorf("dry run wrote docs or blobs")
	}
	p := plan.Plan
	if p == nil || p.CollisionCount != 1 || p.Collisions[0].RowKey != "config:smtp_port" || p.Collisions[0].ID != "config-smtp-port" {
		t.Fatalf("collisions: %+v", p)
	}
	var ids []string
	for _, s := range p.SanitizedIDs {
		ids = append(ids, s.ID)
	}
	if want := []string{"config-disk-alert-threshold-%25", "user-100%25dev@contoso.example"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("sanitized ids %v, want %v", ids, want)
	}
	if p.ResultsToBlob != 1 || p.ResultsToBlobBytes != 40960 {
		t.Errorf("results to blob %d (%d bytes), want 1 (40960)", p.ResultsToBlob, p.ResultsToBlobBytes)
	}
	if len(p.DeadLetters) != 6 || p.EstimatedRU < 5*60 || p.EstimatedBytes == 0 {
		t.Errorf("dead letters %d, estimates %d RU %d bytes", len(p.DeadLetters), p.EstimatedRU, p.EstimatedBytes)
	}
	if len(p.Samples) == 0 {
		t.Errorf("no samples")
	}
	js, _ := json.Marshal(plan)
	if bytes.Contains(js, []byte("FAKE-SECRET")) {
		t.Errorf("a secret value is in the plan")
	}

	real, err := e.run(context.Background(), e.opts())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plan.Kinds(), real.Kinds()) || !reflect.DeepEqual(plan.Warnings, real.Warnings) ||
		plan.BlobsUploaded != real.BlobsUploaded || plan.BlobBytes != real.BlobBytes {
		t.Errorf("dry run and real run differ:\n dry %+v\nreal %+v", plan, real)
	}
}

// The checkpoint never passes a page with an unacknowledged write, even
// when later pages are done.
func TestRunCheckpointWaitsForAcks(t *testing.T) {
	e := newEnv(t, 3)
	release := make(chan struct{})
	var blocked atomic.Bool
	// The second page (rows 3–5 in key order) holds the blocked doc.
	var blockID string
	for _, row := range e.src.Rows("Config")[3:6] {
		if o := transform.Transform(row, transform.BlobFacts{}, transform.Options{Now: goldenNow}); o.Disposition == transform.DispositionDoc {
			blockID = o.ID
			break
		}
	}
	e.docs.BeforeWrite = func(ctx context.Context, op fakes.Op) error {
		if op.ID == blockID {
			blocked.Store(true)
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	opts := e.opts()
	opts.Tables = []string{"Config"}
	done := make(chan error, 1)
	go func() { _, err := e.run(context.Background(), opts); done <- err }()

	// Wait until the pipeline has written what it may ahead of the
	// blocked page (bounded by pagesInFlight) and stalls.
	deadline := time.Now().Add(10 * time.Second)
	for last := -1; ; {
		time.Sleep(100 * time.Millisecond)
		n := e.docs.Writes()
		if n == last && n > 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d writes", n)
		}
		last = n
	}
	if !blocked.Load() {
		t.Fatal("the blocked write never started")
	}
	st, err := LoadState(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	if ts := st.table("Config"); ts.Rows != 3 || ts.Done || ts.LastRowKey != e.src.Rows("Config")[2].RowKey {
		t.Errorf("checkpoint passed the unacknowledged page: %+v", ts)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st, _ = LoadState(e.dir)
	if ts := st.table("Config"); !ts.Done || ts.Rows != 34 {
		t.Errorf("after the ack: %+v", ts)
	}
}

// An interrupted run resumes from its checkpoint and ends exactly like an
// uninterrupted one: same docs, same blobs, same dead-letter file, same
// counts.
func TestRunResume(t *testing.T) {
	ref := newEnv(t, 4)
	refSummary, err := ref.run(context.Background(), ref.opts())
	if err != nil {
		t.Fatal(err)
	}
	refDL, _ := os.ReadFile(filepath.Join(ref.dir, DeadLetterFile))

	for _, stopAfter := range []int{1, 13, 31, 45, 59} {
		e := newEnv(t, 4)
		ctx, cancel := context.WithCancel(context.Background())
		var n atomic.Int64
		e.docs.BeforeWrite = func(ctx context.Context, op fakes.Op) error {
			if n.Add(1) > int64(stopAfter) {
				cancel()
				return ctx.Err()
			}
			return nil
		}
		_, err := e.run(ctx, e.opts())
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("stop after %d: err %v, want context.Canceled", stopAfter, err)
		}
		e.docs.BeforeWrite = nil
		s, err := e.run(context.Background(), e.opts())
		if err != nil {
			t.Fatal(err)
		}
		if !s.Resumed || !strings.Contains(e.progress.text(), "resuming run") {
			t.Errorf("stop after %d: not resumed (%q)", stopAfter, e.progress.text())
		}
		if !reflect.DeepEqual(s.Kinds(), refSummary.Kinds()) || !reflect.DeepEqual(s.Warnings, refSummary.Warnings) {
			t.Errorf("stop after %d: counts differ:\n got %v %v\nwant %v %v", stopAfter, s.Kinds(), s.Warnings, refSummary.Kinds(), refSummary.Warnings)
		}
		if !reflect.DeepEqual(e.docs.Snapshot(), ref.docs.Snapshot()) || !reflect.DeepEqual(e.blobs.Snapshot(), ref.blobs.Snapshot()) {
			t.Errorf("stop after %d: docs or blobs differ", stopAfter)
		}
		dl, _ := os.ReadFile(filepath.Join(e.dir, DeadLetterFile))
		if !bytes.Equal(dl, refDL) {
			t.Errorf("stop after %d: dead-letter file differs:\n%s\nwant\n%s", stopAfter, dl, refDL)
		}
	}
}

func TestRunRestartAndFingerprint(t *testing.T) {
	e := newEnv(t, 10)
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	e.docs.BeforeWrite = func(ctx context.Context, op fakes.Op) error {
		once.Do(cancel)
		return ctx.Err()
	}
	if _, err := e.run(ctx, e.opts()); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	e.docs.BeforeWrite = nil
	opts := e.opts()
	opts.Transform.Strict = true
	_, err := e.run(context.Background(), opts)
	var fe *FingerprintError
	if !errors.As(err, &fe) {
		t.Fatalf("other options: err %v, want a FingerprintError", err)
	}
	if want := "the saved run in " + e.dir + " used strict=false, this run strict=true; run with the saved options to resume, or use --restart to start over"; err.Error() != want {
		t.Errorf("other options: err %q, want %q", err, want)
	}
	opts.Restart = true
	s, err := e.run(context.Background(), opts)
	if err != nil || s.Resumed || !s.Complete {
		t.Fatalf("--restart: resumed %v complete %v err %v", s.Resumed, s.Complete, err)
	}
	if n := len(readDeadLetters(t, e.dir, DeadLetterFile)); n != 8 { // --strict: two more
		t.Errorf("%d dead letters after --restart --strict, want 8", n)
	}
}

func TestParseFingerprint(t *testing.T) {
	topts := transform.Options{ExecutionTTL: transform.TTLFull, Strict: true}
	fp := fingerprint(topts, []string{"Config", "Entities"}, "t1", "cosmos=http://127.0.0.1:8081/;database=bifrost;tables=http://127.0.0.1:10002/devstoreaccount1;blobs=http://127.0.0.1:10000/devstoreaccount1/execution-data")
	want := []Setting{
		{"blob-threshold", "32768"}, {"execution-ttl", "full"}, {"relationships", "keep"}, {"strict", "true"},
		{"tables", "Config,Entities"}, {"table-prefix", "t1"},
		{"target.cosmos", "http://127.0.0.1:8081/"}, {"target.database", "bifrost"},
		{"target.tables", "http://127.0.0.1:10002/devstoreaccount1"}, {"target.blobs", "http://127.0.0.1:10000/devstoreaccount1/execution-data"},
	}
	if got := ParseFingerprint(fp); !reflect.DeepEqual(got, want) {
		t.Errorf("ParseFingerprint(%q) =\n%v\nwant\n%v", fp, got, want)
	}
	if got, want := ParseFingerprint("strict=false;tables=Config;table-prefix=;target="), []Setting{{"strict", "false"}, {"tables", "Config"}, {"table-prefix", ""}, {"target", ""}}; !reflect.DeepEqual(got, want) {
		t.Errorf("empty target: %v, want %v", got, want)
	}
}

func TestDiffFingerprints(t *testing.T) {
	const target = "cosmos=http://c/;database=bifrost;tables=http://t/a;blobs=http://b/a/execution-data"
	base := fingerprint(transform.Options{}, []string{"Config", "Entities", "Relationships"}, "", target)
	for _, tc := range []struct {
		name          string
		saved, wanted string
		want          []SettingDiff
	}{
		{"same", base, base, nil},
		{"execution-ttl", fingerprint(transform.Options{ExecutionTTL: transform.TTLFull}, []string{"Config", "Entities", "Relationships"}, "", target), base,
			[]SettingDiff{{"execution-ttl", "full", "remaining"}}},
		{"strict and blob threshold", base, fingerprint(transform.Options{Strict: true, BlobThreshold: 1000}, []string{"Config", "Entities", "Relationships"}, "", target),
			[]SettingDiff{{"blob-threshold", "32768", "1000"}, {"strict", "false", "true"}}},
		{"tables", base, fingerprint(transform.Options{}, []string{"Entities"}, "", target),
			[]SettingDiff{{"tables", "Config,Entities,Relationships", "Entities"}}},
		{"database and tables account", base, fingerprint(transform.Options{}, []string{"Config", "Entities", "Relationships"}, "", "cosmos=http://c/;database=other;tables=http://t2/b;blobs=http://b/a/execution-data"),
			[]SettingDiff{{"target.database", "bifrost", "other"}, {"target.tables", "http://t/a", "http://t2/b"}}},
		{"a key only one side has", "strict=false;old=1", "strict=false;new=2",
			[]SettingDiff{{"new", "", "2"}, {"old", "1", ""}}},
	} {
		if got := DiffFingerprints(tc.saved, tc.wanted); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: DiffFingerprints = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRunMaxErrors(t *testing.T) {
	e := newEnv(t, 5)
	opts := e.opts()
	opts.MaxErrors = 2
	s, err := e.run(context.Background(), opts)
	if !errors.Is(err, ErrTooManyDeadLetters) {
		t.Fatalf("err %v, want ErrTooManyDeadLetters", err)
	}
	if n := len(readDeadLetters(t, e.dir, DeadLetterFile)); n != 2 || s.DeadLetters != 2 {
		t.Errorf("%d dead-letter lines, summary %d; want 2", n, s.DeadLetters)
	}
	// Raising the limit resumes without duplicating them.
	opts.MaxErrors = 0
	s, err = e.run(context.Background(), opts)
	if err != nil || !s.Resumed {
		t.Fatalf("resume: %v", err)
	}
	if n := len(readDeadLetters(t, e.dir, DeadLetterFile)); n != 6 || s.DeadLetters != 6 {
		t.Errorf("%d dead-letter lines, summary %d; want 6", n, s.DeadLetters)
	}
}

// Relationships alone still finds dangling indexes: Entities is scanned
// for execution ids only.
func TestRunRelationshipsAlone(t *testing.T) {
	e := newEnv(t, 50)
	opts := e.opts()
	opts.Tables = []string{"Relationships"}
	s, err := e.run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if s.Warnings[transform.ReasonDanglingIndex] != 1 || len(s.Tables) != 1 || s.Tables[0].Rows != 73 {
		t.Errorf("summary %+v", s)
	}
}
