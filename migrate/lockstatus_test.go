package migrate

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ReadLock tells a held lock from a free one without taking it for good:
// no lock file is not held; while LockStateDir holds it, held by this
// process's record; once released, not held, the record naming the last
// holder; and a lock it found free can be taken at once after it.
func TestReadLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if got, err := ReadLock(dir); err != nil || got != (LockStatus{}) {
		t.Fatalf("no state directory: %+v, %v; want not held, no holder", got, err)
	}
	since := time.Date(2026, 11, 20, 14, 0, 0, 0, time.UTC)
	release, err := LockStateDir(dir, "replay", since)
	if err != nil {
		t.Fatal(err)
	}
	want := LockStatus{Held: true, PID: os.Getpid(), Command: "replay", Since: since}
	if got, err := ReadLock(dir); err != nil || got != want {
		t.Errorf("held: %+v, %v; want %+v", got, err, want)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	want.Held = false
	if got, err := ReadLock(dir); err != nil || got != want {
		t.Errorf("released: %+v, %v; want %+v", got, err, want)
	}
	release, err = LockStateDir(dir, "run", since)
	if err != nil {
		t.Fatalf("the lock after ReadLock: %v", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
}
