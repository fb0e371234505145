package migrate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A pass record reads back as written, with its version; none is nil
// and no error; one of another version, or not JSON, is an error that
// names the file.
func TestPassRecordRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if r, err := LoadPassRecord(dir, ReplayRecordFile); r != nil || err != nil {
		t.Fatalf("no record: %+v, %v", r, err)
	}
	t0 := time.Date(2026, 11, 20, 14, 0, 0, 0, time.UTC)
	lag, code := 2.5, 4
	want := PassRecord{PID: 42, Started: t0, Ended: &t0, Since: t0, Follow: true, Passes: 3,
		Last:          PassFigure{Started: t0, Ended: t0, From: t0, Applied: 1, Unchanged: 2, Conflicts: 1, DeadLetters: 0, LagSeconds: &lag},
		ConflictsLeft: 2, ExitCode: &code}
	if err := WritePassRecord(dir, ReplayRecordFile, want); err != nil {
		t.Fatal(err)
	}
	got, err := LoadPassRecord(dir, ReplayRecordFile)
	if err != nil || got == nil || got.Version != 1 || got.Passes != 3 || *got.ExitCode != 4 || *got.Last.LagSeconds != 2.5 || got.ConflictsLeft != 2 || !got.Ended.Equal(t0) {
		t.Errorf("read back %+v, %v", got, err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ReplayRecordFile+".tmp-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
	for content, wantErr := range map[string]string{
		`{"version":2}`:              "has version 2, this bifrost-migrate reads 1",
		`{`:                          "is not valid",
		`{"version":1,"exitCode":0}`: "is not valid (ended and exitCode are set together)",
	} {
		if err := os.WriteFile(filepath.Join(dir, ReverseRecordFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := LoadPassRecord(dir, ReverseRecordFile)
		if r != nil || err == nil || !strings.Contains(err.Error(), filepath.Join(dir, ReverseRecordFile)+" "+wantErr) {
			t.Errorf("%s: %+v, %v; want an error naming the file: %s", content, r, err, wantErr)
		}
	}
}
