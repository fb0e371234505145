package migrate

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// LockFile is the file in the state directory that run and replay hold
// locked while they work (LockStateDir). It stays in the directory after
// they end; its content names the last process that held it, which is
// only the current holder while the lock is held.
const LockFile = "lock"

// holderWait bounds how long a process that finds the state directory
// locked waits for the holder's record to appear: the holder writes it
// right after taking the lock, so an empty record is read again for a
// moment before the holder is reported as unknown.
const holderWait = time.Second

// lockRecord is the content of LockFile: who holds the lock.
type lockRecord struct {
	PID     int       `json:"pid"`
	Command string    `json:"command"`
	Since   time.Time `json:"since"`
}

// StateDirBusyError is returned by LockStateDir, Run and Replay when
// another process holds the state directory's lock.
type StateDirBusyError struct {
	Dir string
	// PID, Command ("run" or "replay") and Since (when it took the lock)
	// are what the holder recorded in LockFile. PID is 0 when the holder
	// had recorded nothing readable (then Command and Since are zero).
	PID     int
	Command string
	Since   time.Time
}

// Error names the directory and the holder, e.g. "state directory
// .bifrost-migrate is in use by bifrost-migrate run (PID 12345, since
// 2026-11-23T14:00:00Z)".
func (e *StateDirBusyError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("state directory %s is in use by another process, which has not recorded itself in %s", e.Dir, filepath.Join(e.Dir, LockFile))
	}
	return fmt.Sprintf("state directory %s is in use by bifrost-migrate %s (PID %d, since %s)", e.Dir, e.Command, e.PID, e.Since.UTC().Format(time.RFC3339))
}

// LockStateDir creates dir if need be and takes the exclusive lock of
// dir/lock for this process, then records in that file this process's
// PID, command ("run" or "replay") and now, so that a process refused
// the lock can name the holder. The lock is an advisory lock of the
// operating system (flock(2)) on the open file: release closes the file,
// and the kernel releases it too when the process dies, however it dies
// (SIGKILL included), so a lock file left behind never blocks anybody;
// only a live holder does. Child processes do not inherit it (the file is
// opened close-on-exec).
//
// When another process holds the lock, LockStateDir returns a
// *StateDirBusyError naming it; it never waits for the lock. Any other
// failure (the directory cannot be created, the file cannot be opened or
// written) is returned wrapped, naming the directory. release must be
// called exactly once; it returns the error of closing the file.
// LockStateDir is safe for concurrent use; two calls on the same
// directory exclude each other even within one process.
func LockStateDir(dir, command string, now time.Time) (release func() error, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state directory: lock: %w", err)
	}
	locked, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("state directory: lock %s: %w", path, err)
	}
	if !locked {
		defer f.Close()
		return nil, busyError(dir, f)
	}
	rec, err := json.Marshal(lockRecord{PID: os.Getpid(), Command: command, Since: now.UTC().Truncate(time.Second)})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("state directory: lock %s: %w", path, err)
	}
	// One write after the truncation: a reader sees the whole record or
	// none (and then reads again, see busyError).
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("state directory: lock %s: %w", path, err)
	}
	if _, err := f.WriteAt(append(rec, '\n'), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("state directory: lock %s: %w", path, err)
	}
	return func() error {
		if err := f.Close(); err != nil {
			return fmt.Errorf("state directory: unlock %s: %w", path, err)
		}
		return nil
	}, nil
}

// busyError reads the holder's record from f, the lock file another
// process holds, and returns the *StateDirBusyError that names it. The
// holder writes its record just after taking the lock, so an empty or
// partial record is read again until holderWait has passed; then the
// holder is reported as unknown. A file that cannot be read at all gives
// an error saying so.
func busyError(dir string, f *os.File) error {
	deadline := time.Now().Add(holderWait)
	for {
		b, err := io.ReadAll(io.NewSectionReader(f, 0, 4096))
		if err != nil {
			return fmt.Errorf("state directory %s is in use by another process; reading its record in %s: %w", dir, f.Name(), err)
		}
		var rec lockRecord
		if json.Unmarshal(b, &rec) == nil && rec.PID > 0 {
			return &StateDirBusyError{Dir: dir, PID: rec.PID, Command: rec.Command, Since: rec.Since}
		}
		if time.Now().After(deadline) {
			return &StateDirBusyError{Dir: dir}
		}
		time.Sleep(20 * time.Millisecond)
	}
}
