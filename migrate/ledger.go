package migrate

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// ledger is what replay and reverse keep of what they did beside their
// counts (run keeps it in its checkpointed State): warnings by reason,
// the writes a dry run lists, the newest change applied, blobs and
// request units; and it records dead letters in its sink before an item
// counts as done. Each engine keeps its counts by group and kind, and its
// conflicts, in a book of its own (replayBook, reverseBook). It is safe
// for concurrent use.
type ledger struct {
	log    func(format string, args ...any)
	dryRun bool

	mu        sync.Mutex
	sink      deadLetterSink
	warnings  map[string]int64
	plan      []PlannedWrite
	newest    time.Time
	blobs     int64
	blobBytes int64
	ru        float64
}

func newLedger(dryRun bool, log func(string, ...any)) *ledger {
	return &ledger{log: log, dryRun: dryRun, warnings: map[string]int64{}}
}

// entry is one item's record in the ledger.
type entry struct {
	warnings []string
	// plan are the item's writes, listed in a dry run's summary.
	plan []PlannedWrite
	// newest is the item's change time (zero: none that counts).
	newest      time.Time
	blobs       int64
	blobBytes   int64
	ru          float64
	deadLetters []DeadLetter
}

// add records e; it fails only when its dead letters cannot be recorded,
// which must stop the engine: an item is never dropped without a trace.
func (l *ledger) add(e entry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range e.warnings {
		l.warnings[w]++
	}
	if l.dryRun {
		l.plan = append(l.plan, e.plan[:min(len(e.plan), maxListed-len(l.plan))]...)
	}
	if e.newest.After(l.newest) {
		l.newest = e.newest
	}
	l.blobs += e.blobs
	l.blobBytes += e.blobBytes
	l.ru += e.ru
	for _, dl := range e.deadLetters {
		l.log("dead letter %s %s/%s: %s", dl.Table, dl.PartitionKey, dl.RowKey, dl.Reason)
	}
	if len(e.deadLetters) == 0 {
		return nil
	}
	if _, err := l.sink.Append(e.deadLetters); err != nil {
		dl := e.deadLetters[0]
		return fmt.Errorf("%s %s/%s: record the dead letter: %w", dl.Table, dl.PartitionKey, dl.RowKey, err)
	}
	return nil
}

// summary is what the ledger gives every window summary; dir is the state
// directory the dead-letter file name is in.
func (l *ledger) summary(common Common, w WindowOptions, dir, file string, elapsed time.Duration) WindowSummary {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := WindowSummary{
		Since: w.Since.UTC().Format(time.RFC3339Nano), DryRun: common.DryRun, Force: w.Force, Prune: w.Prune,
		Warnings: l.warnings, BlobsUploaded: l.blobs, BlobBytes: l.blobBytes, ElapsedSeconds: elapsed.Seconds(),
	}
	if ms, ok := l.sink.(*memorySink); ok {
		s.DeadLetters = slices.Clone(ms.list)
	} else if l.sink != nil {
		s.DeadLetterFile = filepath.Join(dir, file)
	}
	if !l.newest.IsZero() {
		n := l.newest
		s.Newest = &n
	}
	return s
}

// countsOf returns the counts of kind in group (a table or a container)
// of m, made on first use: replay's and reverse's books.
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

// listed returns list with x appended (when not nil) while it holds fewer
// than maxListed: the conflicts a summary lists.
func listed[X any](list []X, x *X) []X {
	if x == nil || len(list) >= maxListed {
		return list
	}
	return append(list, *x)
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
