package verify

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/statedir"
)

// RecordFile is the file in the state directory where verify records
// when it last ran and what it concluded (Record): the command `status`
// reads it, and `verify --since` takes the last full verify from it.
const RecordFile = "verify.json"

// recordVersion is the version of RecordFile's format.
const recordVersion = 1

// Record is RecordFile: the last verify and the last full one. A partial
// check (--sample, --tables) and a --since (even one that proves the
// whole on a full verify) replace Last alone; a full one both.
type Record struct {
	Version  int          `json:"version"`
	Last     *RecordEntry `json:"last,omitempty"`
	LastFull *RecordEntry `json:"lastFull,omitempty"`
}

// RecordEntry is one verify as the record keeps it.
type RecordEntry struct {
	// Started and Ended are RFC 3339 with nanoseconds, UTC. Started is
	// the instant changes in flight are measured from: `verify --since`
	// it judges them.
	Started     string `json:"started"`
	Ended       string `json:"ended"`
	ToolVersion string `json:"toolVersion"`
	// OK, Partial and Scope are the report's Verdict; Verdict is the
	// verdict line as printed.
	OK          bool   `json:"ok"`
	Partial     bool   `json:"partial"`
	Scope       Scope  `json:"scope"`
	Verdict     string `json:"verdict"`
	Missing     int    `json:"missing"`
	Different   int    `json:"different"`
	Orphans     int    `json:"orphans"`
	NotMigrated int    `json:"notMigrated"`
	// ChangedWhileRunning counts the changes in flight counted apart.
	ChangedWhileRunning int `json:"changedWhileRunning"`
	// Target names what was verified — the accounts, database, blob
	// container, table prefix and transform options, never a secret — so
	// that a later verify --since builds on a full verify of the same
	// migration only.
	Target string `json:"target"`
	// Docs is the file of the docs a full verify read (DocsFile), in the
	// state directory; "" when none was written.
	Docs string `json:"docs,omitempty"`
}

// NewRecordEntry is the record of report r, which ended at ended, made by
// the build toolVersion, of target.
func NewRecordEntry(r *Report, ended time.Time, toolVersion, target string) RecordEntry {
	e := RecordEntry{
		Started: r.startedAt.UTC().Format(time.RFC3339Nano), Ended: ended.UTC().Format(time.RFC3339Nano), ToolVersion: toolVersion,
		OK: r.OK, Partial: r.Partial, Scope: r.Scope, Verdict: r.VerdictLine(),
		Missing: r.Totals.Missing, Different: r.Totals.Different, Orphans: r.Totals.Orphans, NotMigrated: r.NotMigrated,
		ChangedWhileRunning: r.Totals.ChangedWhileRunning, Target: target,
	}
	if r.docsWritten {
		e.Docs = DocsFile
	}
	return e
}

// StartedAt is e's start as a time (zero when it does not parse).
func (e *RecordEntry) StartedAt() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, e.Started)
	return t
}

// EndedAt is e's end as a time (zero when it does not parse).
func (e *RecordEntry) EndedAt() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, e.Ended)
	return t
}

// LoadRecord reads the record in dir: nil without error when there is
// none; an error naming the file when it cannot be read or is not a
// record.
func LoadRecord(dir string) (*Record, error) {
	path := filepath.Join(dir, RecordFile)
	b, err := statedir.ReadFile(dir, RecordFile)
	if b == nil || err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil || r.Version != recordVersion {
		return nil, fmt.Errorf("%s is not a verify record of version %d", path, recordVersion)
	}
	return &r, nil
}

// Add makes e the last verify, and the last full one when it judged
// every row itself: not partial, not a --since.
func (r *Record) Add(e RecordEntry) {
	r.Version = recordVersion
	r.Last = &e
	if !e.Partial && e.Scope.Since.IsZero() {
		full := e
		r.LastFull = &full
	}
}

// Base decides which full verify of r (in dir) a --since at since, of
// target, builds on: the last full verify, when it was in sync, judged
// target, started at or after since and left its DocsFile (exists tells
// whether a path exists). It returns it, or nil, and in either case a
// sentence saying which, or why none. r may be nil (no record). It is
// pure but for exists.
func (r *Record) Base(dir string, since time.Time, target string, exists func(path string) bool) (*Base, string) {
	var f *RecordEntry
	if r != nil {
		f = r.LastFull
	}
	at := since.UTC().Format(time.RFC3339Nano)
	switch {
	case f == nil:
		return nil, fmt.Sprintf("no full verify is recorded in %s", dir)
	case f.Target != target:
		return nil, fmt.Sprintf("the last full verify recorded in %s (of %s) judged another migration or other options", dir, f.Started)
	case !f.OK:
		return nil, fmt.Sprintf("the last full verify (of %s) was not in sync (%s)", f.Started, f.Verdict)
	case f.StartedAt().IsZero():
		return nil, fmt.Sprintf("the last full verify's start (%q) is not a time", f.Started)
	case since.After(f.StartedAt()):
		return nil, fmt.Sprintf("--since %s is after the start of the last full verify (%s): changes between them would go unjudged; give --since %s or earlier",
			at, f.Started, f.Started)
	case f.Docs == "" || !exists(filepath.Join(dir, f.Docs)):
		return nil, fmt.Sprintf("the docs the last full verify (of %s) read are not in %s", f.Started, dir)
	}
	return &Base{Started: f.StartedAt(), DocsFile: filepath.Join(dir, f.Docs)},
		fmt.Sprintf("building on the full verify of %s (in sync): every change since %s is judged, and the docs of every scope are counted", f.Started, at)
}

// Save writes r into dir atomically: a temporary file, synced, renamed
// over RecordFile, the directory synced; RecordFile is always the old or
// the new record, whole.
func (r *Record) Save(dir string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return statedir.WriteFile(dir, RecordFile, append(b, '\n'))
}
