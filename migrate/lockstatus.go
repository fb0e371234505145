package migrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// LockStatus is what the lock of a state directory says (ReadLock).
type LockStatus struct {
	// Held reports whether a process holds the lock now.
	Held bool
	// PID, Command and Since are what the last process to take the lock
	// recorded (the holder, when Held); PID is 0 when none is recorded.
	PID     int
	Command string
	Since   time.Time
}

// ReadLock tells whether a process holds the lock of the state directory
// dir (LockStateDir) and who holds it or held it last, without waiting
// and without writing: it opens dir/lock read-only (no file: not held,
// no holder), tries the lock without waiting and, when it gets it,
// releases it at once. A run, replay or reverse that starts in that
// instant is refused as if the directory were in use. It returns an
// error naming the file when the file cannot be opened or read, or the
// lock cannot be tried (an operating system without flock).
func ReadLock(dir string) (LockStatus, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return LockStatus{}, nil
	}
	if err != nil {
		return LockStatus{}, fmt.Errorf("lock: %w", err)
	}
	defer f.Close()
	locked, err := tryLock(f)
	if err != nil {
		return LockStatus{}, fmt.Errorf("lock %s: %w", path, err)
	}
	if !locked {
		err := busyError(dir, f)
		var busy *StateDirBusyError
		if !errors.As(err, &busy) {
			return LockStatus{Held: true}, err
		}
		return LockStatus{Held: true, PID: busy.PID, Command: busy.Command, Since: busy.Since}, nil
	}
	// Ours for an instant: the record is the last holder's. Closing f
	// (deferred) releases the lock.
	data, err := os.ReadFile(path)
	if err != nil {
		return LockStatus{}, fmt.Errorf("lock: %w", err)
	}
	var rec lockRecord
	if len(data) > 0 && json.Unmarshal(data, &rec) != nil {
		return LockStatus{}, fmt.Errorf("lock %s does not hold a holder's record", path)
	}
	return LockStatus{PID: rec.PID, Command: rec.Command, Since: rec.Since}, nil
}
