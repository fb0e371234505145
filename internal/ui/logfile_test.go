package ui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A log line is stamped in UTC with milliseconds, scrubbed, on one line;
// the file is its owner's alone; a nil *LogFile logs nothing.
func TestLogFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.log")
	clock := func() time.Time { return time.Date(2026, 11, 21, 13, 4, 5, 678e6, time.FixedZone("CET", 3600)) }
	l, err := OpenLogFile(path, clock, func(s string) string { return strings.ReplaceAll(s, "SECRET", "***") })
	if err != nil {
		t.Fatal(err)
	}
	l.Printf("page of %s read: key SECRET\nnext", "Entities")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if want := "2026-11-21T12:04:05.678Z page of Entities read: key *** next\n"; string(b) != want {
		t.Errorf("log %q, want %q", b, want)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	var none *LogFile
	none.Printf("nothing")
	if none.Logf() != nil || none.Close() != nil {
		t.Error("a nil LogFile does something")
	}
	if _, err := OpenLogFile(filepath.Join(path, "x"), clock, nil); err == nil {
		t.Error("a log file under a file opened")
	}
}
