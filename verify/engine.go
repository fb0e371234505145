package verify

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// MaxDetailedDocs is how many differing docs verify reads again to compute
// their field paths; beyond it only the count is exact. More differences
// than this point to a systematic cause (wrong options, wrong database)
// that the first thousand already show.
const MaxDetailedDocs = 1000

// detailConcurrency is the number of differing docs fetched at once.
const detailConcurrency = 8

// containers are the Cosmos DB containers verify reads, in this order.
var containers = []string{transform.ContainerEntities, transform.ContainerExecutions}

// blobPathFields are the execution doc properties that name a blob.
var blobPathFields = []string{"resultBlobPath", "logsBlobPath", "variablesBlobPath", "snapshotBlobPath"}

// Options say what verify checks.
type Options struct {
	// Transform are the options run used. Now is required for
	// transform.TTLRemaining; it decides which executions are expired.
	Transform transform.Options
	// Tables are the tables checked, in read order; empty means all three.
	Tables []string
	// TablePrefix is put before every table name when reading (tests and
	// side-by-side benchmarks); reports use the names without it.
	TablePrefix string
	// Sample, when 0 < Sample < 1, checks only the rows whose key hash
	// falls below it, and judges only the docs of those rows. 0 means 1.
	Sample float64
	// PageSize is the most docs per query page; 0 means
	// store.DefaultQueryPageSize.
	PageSize int
	// Database is recorded in the report.
	Database string
}

// Verifier compares the source tables with Cosmos DB and Blob Storage.
// Its fields are required except Progress. A Verifier is not meant to run
// twice at once.
type Verifier struct {
	Rows     RowSource
	Docs     DocSource
	Blobs    BlobLister
	Progress Progress
}

// key identifies a doc (container, scope, id) or a row (table, PK, RK).
type key [16]byte

func keyOf(a, b, c string) key {
	h := sha256.New()
	h.Write([]byte(a))
	h.Write([]byte{0})
	h.Write([]byte(b))
	h.Write([]byte{0})
	h.Write([]byte(c))
	var k key
	copy(k[:], h.Sum(nil))
	return k
}

// Sampled reports whether the row (table, partitionKey, rowKey) is in a
// sample of fraction f: the first 53 bits of the SHA-256 of its keys, as a
// fraction of 2^53, fall below f. The choice is deterministic, so two
// verify runs with the same f check the same rows.
func Sampled(table, partitionKey, rowKey string, f float64) bool {
	if f <= 0 || f >= 1 {
		return true
	}
	return sampledKey(keyOf(table, partitionKey, rowKey), f)
}

func sampledKey(k key, f float64) bool {
	if f <= 0 || f >= 1 {
		return true
	}
	return float64(binary.BigEndian.Uint64(k[:8])>>11)/(1<<53) < f
}

// ttlState is what a doc's ttl is.
type ttlState struct {
	present bool
	raw     json.RawMessage
	inRange bool // a number with 0 < ttl ≤ transform.ExecutionRetention
}

type blobIssue struct{ field, path string }

// actualDoc is the compact entry of one doc read from Cosmos DB.
type actualDoc struct {
	ref        DocRef // Table, PartitionKey, RowKey from _migration
	hasMig     bool
	src        key
	docHash    string
	migHash    key
	ttl        ttlState
	blobIssues []blobIssue
	consumed   bool
}

// expectedDoc is the compact entry of one selected row whose disposition
// is doc (or expired, when expired is set).
type expectedDoc struct {
	ref     DocRef
	kind    int // index into state.kinds
	docKey  key
	docHash string
	migHash key
	wantTTL bool
	expired bool
}

type tableKind struct{ table, kind string }

// state is one verify run's memory.
type state struct {
	v    *Verifier
	opts Options

	blobs       transform.BlobIndex
	blobsListed int

	mu       sync.Mutex // guards actual, byKey, bySrc, docsRead
	actual   []actualDoc
	byKey    map[key]int
	bySrc    map[key]int
	docsRead map[string]int

	// Filled by the row reader alone.
	expected  []expectedDoc
	rowsSeen  map[key]transform.Disposition
	kinds     []Counts
	kindIndex map[tableKind]int
	kindNames []tableKind
	warnings  map[string]int
	dangling  []DanglingIndex
	entities  bool
}

// Run verifies and returns the report. It returns an error only when it
// could not finish (a service error, ctx cancelled); a selected table that
// does not exist is such an error (the RowSource's, naming the table),
// never an empty table. Mismatches and rows that are not migrated are in
// the report (Report.OK false), not errors.
func (v *Verifier) Run(ctx context.Context, opts Options) (*Report, error) {
	start := time.Now()
	if v.Progress == nil {
		v.Progress = noProgress{}
	}
	if len(opts.Tables) == 0 {
		opts.Tables = []string{transform.TableConfig, transform.TableEntities, transform.TableRelationships}
	}
	if opts.Sample <= 0 || opts.Sample > 1 {
		opts.Sample = 1
	}
	opts.Transform = opts.Transform.WithDefaults()
	if err := opts.Transform.Validate(); err != nil {
		return nil, err
	}
	s := &state{
		v: v, opts: opts,
		blobs:     transform.BlobIndex{},
		byKey:     map[key]int{},
		bySrc:     map[key]int{},
		docsRead:  map[string]int{},
		rowsSeen:  map[key]transform.Disposition{},
		kindIndex: map[tableKind]int{},
		warnings:  map[string]int{},
	}
	v.Progress.Step("listing blobs of execution-data")
	if err := s.listBlobs(ctx); err != nil {
		return nil, err
	}
	// The two services are read at the same time: neither side needs the
	// other until the join.
	var wg sync.WaitGroup
	var docsErr, rowsErr error
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Add(2)
	go func() {
		defer wg.Done()
		if docsErr = s.readDocs(gctx); docsErr != nil {
			cancel()
		}
	}()
	go func() {
		defer wg.Done()
		if rowsErr = s.readRows(gctx); rowsErr != nil {
			cancel()
		}
	}()
	wg.Wait()
	if err := errors.Join(firstReal(docsErr, rowsErr)...); err != nil {
		return nil, err
	}
	v.Progress.Step("comparing")
	r, detail := s.join()
	if err := s.details(ctx, r, detail); err != nil {
		return nil, err
	}
	r.ElapsedSeconds = time.Since(start).Seconds()
	return r, nil
}

// firstReal drops a context.Canceled that only follows the other side's
// failure.
func firstReal(errs ...error) []error {
	var real []error
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			real = append(real, err)
		}
	}
	if len(real) == 0 {
		for _, err := range errs {
			if err != nil {
				return []error{err}
			}
		}
	}
	return real
}

func (s *state) listBlobs(ctx context.Context) error {
	return s.v.Blobs.List(ctx, func(name string, size int64) error {
		s.blobsListed++
		return s.blobs.Add(name, size)
	})
}

// readDocs reads every doc of every container, hashing them on all CPUs
// while the next page is fetched.
func (s *state) readDocs(ctx context.Context) error {
	for _, c := range containers {
		s.v.Progress.Step("reading docs of container " + c)
		docs := make(chan []byte, 256)
		var wg sync.WaitGroup
		var workErr error
		var errOnce sync.Once
		for range runtime.GOMAXPROCS(0) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for raw := range docs {
					a, k, err := s.indexDoc(c, raw)
					if err != nil {
						errOnce.Do(func() { workErr = err })
						continue
					}
					s.mu.Lock()
					s.docsRead[c]++
					if _, dup := s.byKey[k]; !dup {
						s.byKey[k] = len(s.actual)
						if a.hasMig {
							if _, dup := s.bySrc[a.src]; !dup {
								s.bySrc[a.src] = len(s.actual)
							}
						}
						s.actual = append(s.actual, a)
					}
					s.mu.Unlock()
				}
			}()
		}
		err := s.v.Docs.QueryAll(ctx, c, "SELECT * FROM c", nil, s.opts.PageSize, func(doc []byte) error {
			select {
			case docs <- doc:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		close(docs)
		wg.Wait()
		if err != nil {
			return err
		}
		if workErr != nil {
			return workErr
		}
	}
	return nil
}

// indexDoc builds the compact entry of one doc of container c.
func (s *state) indexDoc(c string, raw []byte) (actualDoc, key, error) {
	m, err := transform.DecodeDoc(raw)
	if err != nil {
		return actualDoc{}, key{}, fmt.Errorf("container %s: undecodable doc: %w", c, err)
	}
	a := actualDoc{ref: DocRef{Container: c, Scope: str(m["scope"]), ID: str(m["id"])}}
	if mig, ok := m["_migration"].(map[string]any); ok {
		a.hasMig = true
		a.ref.Table, a.ref.PartitionKey, a.ref.RowKey = str(mig["table"]), str(mig["partitionKey"]), str(mig["rowKey"])
		a.src = keyOf(a.ref.Table, a.ref.PartitionKey, a.ref.RowKey)
		if a.migHash, err = canonicalKey(mig); err != nil {
			return actualDoc{}, key{}, fmt.Errorf("doc %s/%s/%s: _migration: %w", c, a.ref.Scope, a.ref.ID, err)
		}
	}
	if a.docHash, err = transform.Hash(m); err != nil {
		// A value canonical JSON refuses (it cannot come from a doc the
		// service stored) simply never matches.
		a.docHash = "unhashable"
	}
	if t, ok := m["ttl"]; ok {
		a.ttl = ttlState{present: true, raw: rawJSON(t)}
		if n, ok := t.(json.Number); ok {
			f, err := n.Float64()
			a.ttl.inRange = err == nil && f > 0 && f <= transform.ExecutionRetention
		}
	}
	if c == transform.ContainerExecutions {
		for _, f := range blobPathFields {
			if p, ok := m[f].(string); ok && !s.blobs.Exists(p) {
				a.blobIssues = append(a.blobIssues, blobIssue{f, p})
			}
		}
	}
	return a, keyOf(c, a.ref.Scope, a.ref.ID), nil
}

// str returns a JSON string's value, or the JSON text of any other value.
func str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return string(rawJSON(v))
}

func canonicalKey(v any) (key, error) {
	b, err := transform.Canonical(v)
	if err != nil {
		return key{}, err
	}
	var k key
	sum := sha256.Sum256(b)
	copy(k[:], sum[:])
	return k, nil
}

// readRows reads the selected tables in order, transforms every row
// (collisions need every earlier row, sampled or not) and keeps compact
// entries of the sampled ones.
func (s *state) readRows(ctx context.Context) error {
	ids := transform.NewIDSet()
	var executions transform.ExecutionSet
	if slices.Contains(s.opts.Tables, transform.TableEntities) {
		executions = transform.ExecutionSet{}
		s.entities = true
	}
	for _, table := range s.opts.Tables {
		s.v.Progress.Step("reading table " + table)
		err := s.scan(ctx, table, func(rows []transform.Row) error {
			outcomes := s.transformAll(rows)
			for i, row := range rows {
				o := ids.Check(outcomes[i])
				if executions != nil && table == transform.TableEntities && o.Kind == "execution" {
					// Both ids count, as in run: an index naming either
					// is not dangling.
					executions.AddRow(row)
				}
				src := keyOf(table, row.PartitionKey, row.RowKey)
				if !sampledKey(src, s.opts.Sample) {
					continue
				}
				if err := s.addRow(row, src, o, executions); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// scan reads table page by page, fetching the next page while fn works on
// the current one (store.Scan).
func (s *state) scan(ctx context.Context, table string, fn func([]transform.Row) error) error {
	return store.Scan(ctx, s.v.Rows, s.opts.TablePrefix, table, store.Query{}, store.Cursor{}, func(p store.Page) error {
		return fn(p.Rows)
	})
}

// transformAll transforms a page of rows on all CPUs (Transform is pure).
func (s *state) transformAll(rows []transform.Row) []transform.Outcome {
	out := make([]transform.Outcome, len(rows))
	n := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(rows); i += n {
				out[i] = s.transformRow(rows[i])
			}
		}()
	}
	wg.Wait()
	return out
}

func (s *state) transformRow(row transform.Row) transform.Outcome {
	var facts transform.BlobFacts
	if row.Table == transform.TableEntities && transform.Kind(row.RowKey) == "execution" {
		facts = s.blobs.Facts(transform.ExecutionID(row))
	}
	return transform.Transform(row, facts, s.opts.Transform)
}

func (s *state) kind(table, kind string) int {
	tk := tableKind{table, kind}
	i, ok := s.kindIndex[tk]
	if !ok {
		i = len(s.kinds)
		s.kindIndex[tk] = i
		s.kinds = append(s.kinds, Counts{})
		s.kindNames = append(s.kindNames, tk)
	}
	return i
}

func (s *state) addRow(row transform.Row, src key, o transform.Outcome, executions transform.ExecutionSet) error {
	ki := s.kind(row.Table, transform.Kind(row.RowKey))
	c := &s.kinds[ki]
	c.Rows++
	s.rowsSeen[src] = o.Disposition
	for _, w := range o.Warnings {
		s.warnings[w.Reason]++
	}
	ref := DocRef{Table: row.Table, PartitionKey: row.PartitionKey, RowKey: row.RowKey, Container: o.Container, Scope: o.Scope, ID: o.ID}
	switch o.Disposition {
	case transform.DispositionDoc:
		c.ExpectedDocs++
		e := expectedDoc{ref: ref, kind: ki, docKey: keyOf(o.Container, o.Scope, o.ID)}
		mig, _ := o.Doc.Get("_migration")
		migDoc, _ := mig.(transform.Doc)
		h, _ := migDoc.Get("hash")
		e.docHash, _ = h.(string)
		var err error
		if e.migHash, err = canonicalKey(migDoc); err != nil {
			return fmt.Errorf("table %s %s/%s: %w", row.Table, row.PartitionKey, row.RowKey, err)
		}
		e.wantTTL = o.Doc.Has("ttl")
		s.expected = append(s.expected, e)
	case transform.DispositionExpired:
		c.Expired++
		s.expected = append(s.expected, expectedDoc{ref: ref, kind: ki, docKey: keyOf(o.Container, o.Scope, o.ID), expired: true})
	case transform.DispositionDroppedIndex:
		c.DroppedIndex++
		if executions != nil && o.IndexExecutionID != "" {
			if !executions.Has(o.IndexExecutionID) {
				s.dangling = append(s.dangling, DanglingIndex{PartitionKey: row.PartitionKey, RowKey: row.RowKey, ExecutionID: o.IndexExecutionID})
				s.warnings[transform.ReasonDanglingIndex]++
			}
		}
	case transform.DispositionKeptInTables:
		c.KeptInTables++
	case transform.DispositionDeadLetter:
		c.DeadLetter++
	}
	return nil
}

// detailJob is a differing doc whose field paths must be computed by
// reading it (and its row) again.
type detailJob struct {
	exp    int // index into state.expected
	act    int // index into state.actual
	moved  bool
	fields []fieldDiff // ttl and blob problems, known without reading
}

// join compares the entries and fills the report's counts; it returns the
// docs that need reading again for their field paths.
func (s *state) join() (*Report, []detailJob) {
	r := &Report{
		Settings: Settings{
			Database: s.opts.Database, Tables: s.opts.Tables, Sample: s.opts.Sample,
			ExecutionTTL: string(s.opts.Transform.ExecutionTTL), BlobThreshold: s.opts.Transform.BlobThreshold,
			Relationships: string(s.opts.Transform.Relationships), Strict: s.opts.Transform.Strict,
			Now: transform.FormatTimestamp(s.opts.Transform.Now),
		},
		AppWritten:      map[string]int{},
		Docs:            s.docsRead,
		BlobsListed:     s.blobsListed,
		Warnings:        s.warnings,
		DanglingChecked: s.entities,
		DanglingIndexes: s.dangling,
		Missing:         []DocRef{},
		Orphans:         []Orphan{},
		Differences:     []Difference{},
	}
	for _, c := range containers {
		r.AppWritten[c] = 0
	}
	var jobs []detailJob
	for ei := range s.expected {
		e := &s.expected[ei]
		c := &s.kinds[e.kind]
		ai, found := s.byKey[e.docKey]
		if e.expired {
			if found {
				s.actual[ai].consumed = true
				c.ExpiredPresent++
			}
			continue
		}
		moved := false
		if !found || s.actual[ai].consumed {
			ai, found = s.bySrc[keyOf(e.ref.Table, e.ref.PartitionKey, e.ref.RowKey)]
			if !found || s.actual[ai].consumed {
				c.Missing++
				r.Missing = append(r.Missing, e.ref)
				continue
			}
			moved = true
		}
		a := &s.actual[ai]
		a.consumed = true
		var fields []fieldDiff
		if ttl := s.checkTTL(e, a); ttl != nil {
			fields = append(fields, *ttl)
		}
		for _, b := range a.blobIssues {
			p := rawJSON(b.path)
			fields = append(fields, fieldDiff{b.field, ProblemBlob, p, p})
		}
		same := !moved && a.hasMig && a.docHash == e.docHash && a.migHash == e.migHash
		if same && len(fields) == 0 {
			c.Matched++
			continue
		}
		c.Different++
		jobs = append(jobs, detailJob{exp: ei, act: ai, moved: moved, fields: fields})
		if same {
			jobs[len(jobs)-1].act = -1 // nothing to read: ttl or blob only
		}
	}
	for ai := range s.actual {
		a := &s.actual[ai]
		if a.consumed {
			continue
		}
		if !a.hasMig {
			r.AppWritten[a.ref.Container]++
			continue
		}
		if !slices.Contains(s.opts.Tables, a.ref.Table) || !sampledKey(a.src, s.opts.Sample) {
			r.NotJudged++
			continue
		}
		reason := "its row no longer exists"
		if d, ok := s.rowsSeen[a.src]; ok {
			if d == transform.DispositionDoc {
				reason = "a second doc of a row whose doc is elsewhere"
			} else {
				reason = "its row's disposition is now " + string(d)
			}
		}
		s.kinds[s.kind(a.ref.Table, transform.Kind(a.ref.RowKey))].Orphans++
		r.Orphans = append(r.Orphans, Orphan{DocRef: a.ref, Reason: reason})
	}
	// Orphans in doc read order are not stable; report them by row keys.
	sort.Slice(r.Orphans, func(i, j int) bool {
		a, b := r.Orphans[i], r.Orphans[j]
		if a.Table != b.Table {
			return transform.TableOrder(a.Table) < transform.TableOrder(b.Table)
		}
		if a.PartitionKey != b.PartitionKey {
			return a.PartitionKey < b.PartitionKey
		}
		if a.RowKey != b.RowKey {
			return a.RowKey < b.RowKey
		}
		return a.Container+a.Scope+a.ID < b.Container+b.Scope+b.ID
	})
	s.fillCounts(r)
	return r, jobs
}

// fillCounts copies the per-kind counters into the report, tables in read
// order and kinds by name, and sums them.
func (s *state) fillCounts(r *Report) {
	order := make([]int, len(s.kinds))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := s.kindNames[order[i]], s.kindNames[order[j]]
		if a.table != b.table {
			return transform.TableOrder(a.table) < transform.TableOrder(b.table)
		}
		return a.kind < b.kind
	})
	r.Tables = make([]KindCounts, 0, len(order))
	for _, i := range order {
		r.Tables = append(r.Tables, KindCounts{Table: s.kindNames[i].table, Kind: s.kindNames[i].kind, Counts: s.kinds[i]})
		r.Totals.add(s.kinds[i])
	}
	r.NotMigrated = r.Totals.DeadLetter
	r.OK = r.Failures() == 0
}

// checkTTL applies the relaxed ttl rule of SPEC §12: present exactly when
// the expected doc has one, and then 0 < ttl ≤ 1209600.
func (s *state) checkTTL(e *expectedDoc, a *actualDoc) *fieldDiff {
	switch {
	case e.wantTTL && !a.ttl.present:
		return &fieldDiff{"ttl", ProblemMissing, rawJSON(ttlRange), nil}
	case e.wantTTL && !a.ttl.inRange:
		return &fieldDiff{"ttl", ProblemTTL, rawJSON(ttlRange), a.ttl.raw}
	case !e.wantTTL && a.ttl.present:
		return &fieldDiff{"ttl", ProblemUnexpected, nil, a.ttl.raw}
	}
	return nil
}

var ttlRange = "a number with 0 < ttl <= " + strconv.Itoa(transform.ExecutionRetention)

// details reads the first MaxDetailedDocs differing docs and their rows
// again and computes their field paths, in row order.
func (s *state) details(ctx context.Context, r *Report, jobs []detailJob) error {
	if len(jobs) > MaxDetailedDocs {
		r.DetailsTruncated = true
		jobs = jobs[:MaxDetailedDocs]
	}
	if len(jobs) == 0 {
		return nil
	}
	s.v.Progress.Step(fmt.Sprintf("reading %d differing doc(s) again for their field paths", len(jobs)))
	results := make([][]Difference, len(jobs))
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, detailConcurrency)
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i], errs[i] = s.detail(ctx, jobs[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, d := range results {
		r.Differences = append(r.Differences, d...)
	}
	return nil
}

func (s *state) detail(ctx context.Context, j detailJob) ([]Difference, error) {
	e := s.expected[j.exp]
	var actualRef *DocRef
	fields := j.fields
	if j.act >= 0 {
		a := s.actual[j.act]
		if j.moved {
			ref := a.ref
			actualRef = &ref
		}
		diffs, err := s.readAndCompare(ctx, e.ref, a.ref)
		if err != nil {
			return nil, err
		}
		fields = append(diffs, fields...)
	}
	out := make([]Difference, 0, len(fields))
	for _, f := range fields {
		out = append(out, Difference{Doc: e.ref, ActualDoc: actualRef, Path: f.path, Problem: f.problem, Expected: f.expected, Actual: f.actual})
	}
	if len(out) == 0 {
		// The doc or its row changed between the scan and this read.
		out = append(out, Difference{Doc: e.ref, ActualDoc: actualRef, Path: "", Problem: "changed while verify ran; run verify again"})
	}
	return out, nil
}

// readAndCompare reads the row of exp and the doc at act and compares
// them field by field.
func (s *state) readAndCompare(ctx context.Context, exp, act DocRef) ([]fieldDiff, error) {
	row, found, err := store.Lookup(ctx, s.v.Rows, s.opts.TablePrefix, exp.Table, store.Key{PartitionKey: exp.PartitionKey, RowKey: exp.RowKey})
	if err != nil || !found {
		return nil, err
	}
	o := s.transformRow(row)
	if o.Disposition != transform.DispositionDoc {
		return nil, nil
	}
	want, err := transform.DecodeDoc(o.DocJSON)
	if err != nil {
		return nil, fmt.Errorf("expected doc %s: %w", exp, err)
	}
	raw, found, err := s.v.Docs.Read(ctx, act.Container, act.Scope, act.ID)
	if err != nil || !found {
		return nil, err
	}
	got, err := transform.DecodeDoc(raw)
	if err != nil {
		return nil, fmt.Errorf("doc %s/%s/%s: %w", act.Container, act.Scope, act.ID, err)
	}
	return compareDocs(want, got), nil
}
