package migrate

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"time"
)

// recorder is the one place where replay and reverse keep what they did
// (run keeps it in its checkpointed State): counts of type C per group (a
// table or a container) and kind, warnings by reason, the first maxListed
// conflicts of type X, the writes a dry run lists, the newest change
// applied, blobs and request units; and it records dead letters in its
// sink. It is safe for concurrent use.
type recorder[C, X any] struct {
	log    func(format string, args ...any)
	dryRun bool

	mu        sync.Mutex
	sink      deadLetterSink
	counts    map[string]map[string]*C
	warnings  map[string]int64
	conflicts []X
	plan      []PlannedWrite
	newest    time.Time
	blobs     int64
	blobBytes int64
	ru        float64
}

func newRecorder[C, X any](sink deadLetterSink, dryRun bool, log func(string, ...any)) *recorder[C, X] {
	return &recorder[C, X]{log: log, dryRun: dryRun, sink: sink, counts: map[string]map[string]*C{}, warnings: map[string]int64{}}
}

// entry is one item's record: what add adds, under the recorder's lock.
type entry[C, X any] struct {
	group, kind string
	// count adds the item's counts to c (dead letters included).
	count    func(c *C)
	warnings []string
	// conflict is listed (up to maxListed) when not nil.
	conflict *X
	// plan are the item's writes, listed in a dry run's summary.
	plan []PlannedWrite
	// newest is the item's change time (zero: none that counts).
	newest      time.Time
	blobs       int64
	blobBytes   int64
	ru          float64
	deadLetters []DeadLetter
}

// add records e; it fails only when its dead letter cannot be recorded,
// which must stop the engine: an item is never dropped without a trace.
func (r *recorder[C, X]) add(e entry[C, X]) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.count != nil {
		e.count(countsOf(r.counts, e.group, e.kind))
	}
	for _, w := range e.warnings {
		r.warnings[w]++
	}
	if e.conflict != nil && len(r.conflicts) < maxListed {
		r.conflicts = append(r.conflicts, *e.conflict)
	}
	if r.dryRun {
		r.plan = append(r.plan, e.plan[:min(len(e.plan), maxListed-len(r.plan))]...)
	}
	if e.newest.After(r.newest) {
		r.newest = e.newest
	}
	r.blobs += e.blobs
	r.blobBytes += e.blobBytes
	r.ru += e.ru
	for _, dl := range e.deadLetters {
		r.log("dead letter %s %s/%s: %s", dl.Table, dl.PartitionKey, dl.RowKey, dl.Reason)
	}
	if len(e.deadLetters) == 0 {
		return nil
	}
	if _, err := r.sink.Append(e.deadLetters); err != nil {
		dl := e.deadLetters[0]
		return fmt.Errorf("%s %s/%s: record the dead letter: %w", dl.Table, dl.PartitionKey, dl.RowKey, err)
	}
	return nil
}

// countsOf returns the counts of kind in group (a table or a container)
// of m, made on first use.
func countsOf[C any](m map[string]map[string]*C, group, kind string) *C {
	if m[group] == nil {
		m[group] = map[string]*C{}
	}
	c := m[group][kind]
	if c == nil {
		c = new(C)
		m[group][kind] = c
	}
	return c
}

// groupCounts are one group's counts per kind and their total.
type groupCounts[C any] struct {
	name  string
	kinds map[string]C
	total C
}

// windowSummary is what the recorder gives every window summary, and
// groups the counts of the groups named in order (each present, even
// when empty). dir is the state directory the dead-letter file name is
// in.
func (r *recorder[C, X]) summary(common Common, w WindowOptions, dir, file string, elapsed time.Duration, order []string) (WindowSummary, []groupCounts[C], []X) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := WindowSummary{
		Since: w.Since.UTC().Format(time.RFC3339Nano), DryRun: common.DryRun, Force: w.Force, Prune: w.Prune,
		Warnings: r.warnings, BlobsUploaded: r.blobs, BlobBytes: r.blobBytes, ElapsedSeconds: elapsed.Seconds(),
	}
	if ms, ok := r.sink.(*memorySink); ok {
		s.DeadLetters = slices.Clone(ms.list)
	} else if r.sink != nil {
		s.DeadLetterFile = filepath.Join(dir, file)
	}
	if !r.newest.IsZero() {
		n := r.newest
		s.Newest = &n
	}
	groups := make([]groupCounts[C], 0, len(order))
	for _, name := range order {
		g := groupCounts[C]{name: name, kinds: map[string]C{}}
		for k, c := range r.counts[name] {
			g.kinds[k] = *c
			addCounts(&g.total, *c)
		}
		groups = append(groups, g)
	}
	conflicts := slices.Clone(r.conflicts)
	if conflicts == nil {
		conflicts = []X{}
	}
	return s, groups, conflicts
}

// addCounts adds every field of o to c's. Count types (ReplayCounts,
// ReverseCounts) are structs of int64 fields only; adding them field by
// field in one place keeps a new count from being forgotten in a sum.
func addCounts[C any](c *C, o C) {
	cv, ov := reflect.ValueOf(c).Elem(), reflect.ValueOf(o)
	for i := range cv.NumField() {
		f := cv.Field(i)
		f.SetInt(f.Int() + ov.Field(i).Int())
	}
}

// WindowSummary is what the summaries of Replay and Reverse share beyond
// their counts.
type WindowSummary struct {
	// Since is the window's start, in RFC 3339.
	Since  string `json:"since"`
	DryRun bool   `json:"dryRun"`
	Force  bool   `json:"force"`
	Prune  bool   `json:"prune"`
	// Warnings are the transform's warnings by reason, and the engine's
	// own.
	Warnings map[string]int64 `json:"warnings"`
	// DeadLetterFile holds the dead letters (empty in a dry run, which
	// lists them, without their rows, in DeadLetters).
	DeadLetterFile string       `json:"deadLetterFile,omitempty"`
	DeadLetters    []DeadLetter `json:"deadLetters,omitempty"`
	// BlobsUploaded and BlobBytes count the blobs created (in a dry run:
	// that would be created).
	BlobsUploaded int64 `json:"blobsUploaded"`
	BlobBytes     int64 `json:"blobBytes"`
	// Newest is the time of the newest change applied (absent when none):
	// where the next pass of --follow starts, less the skew.
	Newest         *time.Time `json:"newest,omitempty"`
	ElapsedSeconds float64    `json:"elapsedSeconds"`
}
