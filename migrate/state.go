package migrate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/statedir"
	"github.com/bifrost/bifrost-migrate/internal/version"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// File names in the state directory.
const (
	StateFile      = "state.json"
	DeadLetterFile = "dead-letter.jsonl"
)

// stateVersion is the format version of state.json. Version 1 also kept
// the service's continuation of each table ("next"); since the tables are
// read in key ranges at once (SPEC §14, Latency), a run resumes after the
// last row it committed instead, and a version 1 state is read as version
// 2 (its continuation ignored).
const stateVersion = 2

// State is the checkpoint of a run, as saved in state.json. Every field
// describes the run up to the last checkpoint: rows after it will be read
// and written again on resume, which is harmless because writes are
// idempotent upserts and create-only blob uploads.
type State struct {
	Version int `json:"version"`
	// ToolVersion is the build of bifrost-migrate that saved this
	// checkpoint (internal/version); a resumed run saves its own.
	ToolVersion string `json:"toolVersion,omitempty"`
	RunID       string `json:"runId"`
	// Fingerprint is the text of the options that change the output; a
	// resume with a different one is refused.
	Fingerprint string    `json:"fingerprint"`
	Started     time.Time `json:"started"`
	Updated     time.Time `json:"updated"`
	// Done is true once every selected table is done.
	Done bool `json:"done"`
	// DeadLetterBytes is the length of dead-letter.jsonl at this
	// checkpoint; a resume truncates the file to it, so that lines written
	// after the checkpoint are not written twice.
	DeadLetterBytes int64 `json:"deadLetterBytes"`
	// DeadLetterSHA256 is the SHA-256 (hex) of the first DeadLetterBytes
	// bytes of dead-letter.jsonl: a resume refuses a file that does not
	// match. Empty in a state saved by a build before it, whose resume
	// checks the length only.
	DeadLetterSHA256 string       `json:"deadLetterSha256,omitempty"`
	Tables           []TableState `json:"tables"`
}

// TableState is the checkpoint of one table.
type TableState struct {
	Table string `json:"table"`
	// LastPartitionKey and LastRowKey are the keys of the last row
	// checkpointed: a resume reads the rows after them (and, again
	// without writing, those up to them, for collision and dangling-index
	// detection). Rows > 0 and !Done with no last row cannot happen.
	LastPartitionKey string `json:"lastPartitionKey,omitempty"`
	LastRowKey       string `json:"lastRowKey,omitempty"`
	Done             bool   `json:"done"`
	Counts
}

// Counts are the totals of a table up to a checkpoint.
type Counts struct {
	Rows int64 `json:"rows"`
	// Kinds counts rows per kind and disposition.
	Kinds map[string]map[string]int64 `json:"kinds"`
	// Warnings counts warnings per reason.
	Warnings      map[string]int64 `json:"warnings,omitempty"`
	BlobsUploaded int64            `json:"blobsUploaded"`
	BlobBytes     int64            `json:"blobBytes"`
	RequestCharge float64          `json:"requestCharge"`
}

func (c *Counts) add(o Counts) {
	c.Rows += o.Rows
	for kind, ds := range o.Kinds {
		for d, n := range ds {
			c.count(kind, d, n)
		}
	}
	for r, n := range o.Warnings {
		c.warn(r, n)
	}
	c.BlobsUploaded += o.BlobsUploaded
	c.BlobBytes += o.BlobBytes
	c.RequestCharge += o.RequestCharge
}

func (c *Counts) count(kind, disposition string, n int64) {
	if c.Kinds == nil {
		c.Kinds = map[string]map[string]int64{}
	}
	if c.Kinds[kind] == nil {
		c.Kinds[kind] = map[string]int64{}
	}
	c.Kinds[kind][disposition] += n
}

func (c *Counts) warn(reason string, n int64) {
	if c.Warnings == nil {
		c.Warnings = map[string]int64{}
	}
	c.Warnings[reason] += n
}

// disposition returns the number of rows with disposition d.
func (c *Counts) disposition(d string) int64 {
	var n int64
	for _, ds := range c.Kinds {
		n += ds[d]
	}
	return n
}

// SavedCheckpoint is a checkpoint as saved in state.json: when, and how
// many rows it counts done over all tables.
type SavedCheckpoint struct {
	Updated time.Time `json:"updated"`
	Rows    int64     `json:"rows"`
}

// checkpoint is s as a SavedCheckpoint.
func (s *State) checkpoint() SavedCheckpoint {
	c := SavedCheckpoint{Updated: s.Updated}
	for _, ts := range s.Tables {
		c.Rows += ts.Rows
	}
	return c
}

// deadLetters is how far dead-letter.jsonl reached at this checkpoint.
func (s *State) deadLetters() deadLetterMark {
	return deadLetterMark{size: s.DeadLetterBytes, sum: s.DeadLetterSHA256}
}

func (s *State) table(name string) *TableState {
	for i := range s.Tables {
		if s.Tables[i].Table == name {
			return &s.Tables[i]
		}
	}
	return nil
}

// stateStore reads and writes the state directory. The dry-run store
// writes nothing.
type stateStore interface {
	// Save replaces the saved state with s; it is durable when Save
	// returns.
	Save(s *State) error
}

// dirStore keeps state.json in a directory.
type dirStore struct{ dir string }

// LoadState reads dir/state.json. It returns nil and no error when there
// is none, and an error naming the file and --restart when it is not a
// state this build can resume from: not JSON, another version, or not of
// a state's shape (malformed).
func LoadState(dir string) (*State, error) {
	file := filepath.Join(dir, StateFile)
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("state %s is not valid (%v); use --restart to start over", file, err)
	}
	if s.Version != 0 && s.Version != stateVersion && s.Version != 1 {
		return nil, fmt.Errorf("state %s has version %d, this bifrost-migrate writes %d; use --restart to start over", file, s.Version, stateVersion)
	}
	if why := s.malformed(); why != "" {
		return nil, fmt.Errorf("state %s is not valid (%s); use --restart to start over", file, why)
	}
	for _, ts := range s.Tables {
		if ts.Rows > 0 && !ts.Done && ts.LastPartitionKey == "" && ts.LastRowKey == "" {
			return nil, fmt.Errorf("state %s does not say which row of %s was committed last, so the run cannot resume exactly; use --restart to start over", file, ts.Table)
		}
	}
	s.Version = stateVersion // version 1 upgraded: its continuations are not needed
	return &s, nil
}

// malformed says what makes s, as read from state.json, not a state of
// a run: a field every run saves that it lacks (version, runId,
// fingerprint, started, updated, tables), a table that is not one of
// transform.Tables or is listed twice, a negative count, or a dead-letter
// digest that is not SHA-256 in hex. It returns "" when s has a state's
// shape.
func (s *State) malformed() string {
	var missing []string
	for _, f := range []struct {
		name string
		none bool
	}{
		{"version", s.Version == 0}, {"runId", s.RunID == ""}, {"fingerprint", s.Fingerprint == ""},
		{"started", s.Started.IsZero()}, {"updated", s.Updated.IsZero()}, {"tables", len(s.Tables) == 0},
	} {
		if f.none {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return "it has no " + orList(missing)
	}
	if s.DeadLetterBytes < 0 {
		return fmt.Sprintf("deadLetterBytes is %d", s.DeadLetterBytes)
	}
	if d, err := hex.DecodeString(s.DeadLetterSHA256); err != nil || (len(d) != 0 && len(d) != sha256.Size) {
		return fmt.Sprintf("deadLetterSha256 %q is not a SHA-256 digest in hex", s.DeadLetterSHA256)
	}
	seen := map[string]bool{}
	for _, ts := range s.Tables {
		switch {
		case !slices.Contains(transform.Tables(), ts.Table):
			return fmt.Sprintf("table %q is not one bifrost-migrate reads", ts.Table)
		case seen[ts.Table]:
			return fmt.Sprintf("table %s is listed twice", ts.Table)
		case ts.Rows < 0:
			return fmt.Sprintf("table %s has %d rows", ts.Table, ts.Rows)
		}
		seen[ts.Table] = true
	}
	return ""
}

// orList joins names as "a", "a or b", "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Save writes s, stamped with the running build's version, to a
// temporary file, syncs it, renames it over state.json and syncs the
// directory, so that state.json is always either the old or the new
// state, whole.
func (d dirStore) Save(s *State) error {
	stamped := *s
	stamped.ToolVersion = version.String()
	data, err := json.MarshalIndent(&stamped, "", "  ")
	if err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	data = append(data, '\n')
	if err := statedir.WriteFile(d.dir, StateFile, data); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	return nil
}

// nopStore is the state store of a dry run.
type nopStore struct{}

func (nopStore) Save(*State) error { return nil }

// after is where a resumed read of the table starts: after the last row
// checkpointed (nil when none was).
func (ts *TableState) after() *store.Key {
	if ts.Rows == 0 {
		return nil
	}
	return &store.Key{PartitionKey: ts.LastPartitionKey, RowKey: ts.LastRowKey}
}
