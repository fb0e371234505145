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
// conflicts, in a book of its own (book: counts by table or container). It is safe
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

// counter is the counts a book keeps: a struct of plain counts whose
// Add adds another's, field by field.
type counter[C any] interface {
	*C
	Add(C)
}

// book is a pass's counts by group (a table for replay, a container for
// reverse) and kind, and the conflicts its summary lists (at most
// maxListed). It is safe for concurrent use.
type book[C any, P counter[C], X any] struct {
	mu        sync.Mutex
	counts    map[string]map[string]*C
	conflicts []X
}

// add adds c to the counts of kind in group, and lists conflict (when not
// nil) while the list is not full.
func (b *book[C, P, X]) add(group, kind string, c C, conflict *X) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.counts == nil {
		b.counts = map[string]map[string]*C{}
	}
	if b.counts[group] == nil {
		b.counts[group] = map[string]*C{}
	}
	n := b.counts[group][kind]
	if n == nil {
		n = new(C)
		b.counts[group][kind] = n
	}
	P(n).Add(c)
	if conflict != nil && len(b.conflicts) < maxListed {
		b.conflicts = append(b.conflicts, *conflict)
	}
}

// group returns the counts of group by kind, and their sum.
func (b *book[C, P, X]) group(group string) (kinds map[string]C, sum C) {
	b.mu.Lock()
	defer b.mu.Unlock()
	kinds = map[string]C{}
	for k, c := range b.counts[group] {
		kinds[k] = *c
		P(&sum).Add(*c)
	}
	return kinds, sum
}

// listed returns a copy of the conflicts the book lists.
func (b *book[C, P, X]) listed() []X {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]X{}, b.conflicts...)
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
