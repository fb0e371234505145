package migrate

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/statedir"
)

// The records of the last replay and the last reverse in the state
// directory (WritePassRecord), which `bifrost-migrate status` reads.
const (
	ReplayRecordFile  = "replay.json"
	ReverseRecordFile = "reverse.json"
)

// passRecordVersion is the format version of a PassRecord.
const passRecordVersion = 1

// PassRecord is what the last replay or reverse of a state directory did:
// rewritten at the end of each of its passes, and once more when the
// command ends (then Ended and ExitCode are set). A record without
// ExitCode is of a command still at work, or of one that was killed.
type PassRecord struct {
	Version int `json:"version"`
	// PID is the process that wrote it (status tells a --follow at work
	// between passes from one that was killed).
	PID int `json:"pid"`
	// Started is when the command started its first pass; Ended when it
	// ended (nil while it works).
	Started time.Time  `json:"started"`
	Ended   *time.Time `json:"ended"`
	// Since is the command's --since; Follow its --follow.
	Since  time.Time `json:"since"`
	Follow bool      `json:"follow"`
	// Passes counts the passes that ended; Last is the last of them.
	Passes int        `json:"passes"`
	Last   PassFigure `json:"last"`
	// ConflictsLeft counts the conflicts the command left unresolved so
	// far (a --follow: the docs or rows in conflict over every pass).
	ConflictsLeft int64 `json:"conflictsLeft"`
	// ExitCode is the command's exit status (nil while it works).
	ExitCode *int `json:"exitCode"`
}

// PassFigure is what one pass of a replay or reverse did.
type PassFigure struct {
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// From is where the pass read from: --since, or with --follow the
	// previous pass's watermark.
	From time.Time `json:"from"`
	// Applied counts the writes; Unchanged what needed none; Conflicts
	// the conflicts it left; DeadLetters what it dead-lettered.
	Applied     int64 `json:"applied"`
	Unchanged   int64 `json:"unchanged"`
	Conflicts   int64 `json:"conflicts"`
	DeadLetters int64 `json:"deadLetters"`
	// LagSeconds is the age of the newest change it read when it ended;
	// nil when it read none.
	LagSeconds *float64 `json:"lagSeconds"`
}

// WritePassRecord replaces dir/file with r (its Version set), atomically
// as state.json is (a temporary file, synced, renamed, the directory
// synced): a reader sees the old record or the new one, whole. It
// returns an error naming the file when it cannot.
func WritePassRecord(dir, file string, r PassRecord) error {
	r.Version = passRecordVersion
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("record %s: %w", filepath.Join(dir, file), err)
	}
	if err := statedir.WriteFile(dir, file, append(data, '\n')); err != nil {
		return fmt.Errorf("record %s: %w", filepath.Join(dir, file), err)
	}
	return nil
}

// LoadPassRecord reads dir/file. It returns nil and no error when there
// is none, and an error naming the file when it cannot be read or is not
// a record of this version.
func LoadPassRecord(dir, file string) (*PassRecord, error) {
	path := filepath.Join(dir, file)
	data, err := statedir.ReadFile(dir, file)
	if data == nil || err != nil {
		return nil, err
	}
	var r PassRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s is not valid (%v)", path, err)
	}
	switch {
	case r.Version != passRecordVersion:
		return nil, fmt.Errorf("%s has version %d, this bifrost-migrate reads %d", path, r.Version, passRecordVersion)
	case (r.Ended == nil) != (r.ExitCode == nil):
		return nil, fmt.Errorf("%s is not valid (ended and exitCode are set together)", path)
	}
	return &r, nil
}
