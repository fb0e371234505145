package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/bifrost/bifrost-migrate/migrate"
)

// The state directory proves itself (issue 37, SPEC §11): a dead-letter
// file overwritten with other bytes of the checkpoint's length is refused
// on resume in one line naming the file (exit 1), and left as it is; with
// the file restored the run resumes to the end.
func TestRunRefusesAGarbledDeadLetterFile(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	e.load()
	// --max-errors 5 stops the run in Entities, after a checkpoint that
	// holds Config's four dead letters.
	if code, stdout, stderr := e.cli("--quiet", "run", "--max-errors", "5"); code != ExitFatal {
		t.Fatalf("run --max-errors 5: exit %d, want 1\n%s%s", code, stdout, stderr)
	}
	st, err := migrate.LoadState(e.stateDir)
	if err != nil || st == nil || st.DeadLetterBytes == 0 {
		t.Fatalf("state after --max-errors: %v (%v); want dead letters in its checkpoint", st != nil && st.DeadLetterBytes > 0, err)
	}
	file := filepath.Join(e.stateDir, migrate.DeadLetterFile)
	saved, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	garbage := bytes.Repeat([]byte("#"), int(st.DeadLetterBytes))
	if err := os.WriteFile(file, garbage, 0o600); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := e.cli("--quiet", "run", "--max-errors", "5")
	want := "bifrost-migrate: dead letters: " + file + " is not the file the checkpoint recorded (its first " +
		strconv.FormatInt(st.DeadLetterBytes, 10) + " bytes differ); restore the file, or use --restart to start over\n"
	if code != ExitFatal || stderr != want || stdout != "" {
		t.Errorf("resume over a garbled dead-letter file: exit %d, stdout %q, stderr:\n%s\nwant exit 1 and stderr\n%s", code, stdout, stderr, want)
	}
	if got, _ := os.ReadFile(file); !bytes.Equal(got, garbage) {
		t.Errorf("the refused dead-letter file was changed (%d bytes, it had %d)", len(got), len(garbage))
	}

	if err := os.WriteFile(file, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = e.cli("--quiet", "run")
	if code != ExitPartial || lastLine(stdout) != "run "+st.RunID+" resumed and complete" {
		t.Errorf("resume with the file restored: exit %d, want 3 and the run resumed and complete\n%s%s", code, stdout, stderr)
	}
}

// A state.json holding only {"version":2} is "not valid" (exit 1, one
// line naming the file and --restart), not a usage error about options
// (issue 37); it is left as it is, and --restart starts over.
func TestRunRefusesAVersionOnlyState(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	e.load()
	if err := os.MkdirAll(e.stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(e.stateDir, migrate.StateFile)
	if err := os.WriteFile(file, []byte(`{"version":2}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := e.cli("--quiet", "run")
	want := "bifrost-migrate: state " + file + " is not valid (it has no runId, fingerprint, started, updated or tables); use --restart to start over\n"
	if code != ExitFatal || stderr != want || stdout != "" {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 1 and stderr\n%s", code, stdout, stderr, want)
	}
	if got, _ := os.ReadFile(file); string(got) != `{"version":2}` {
		t.Errorf("the refused state.json was changed: %q", got)
	}
	if code, stdout, stderr := e.cli("--quiet", "run", "--restart"); code != ExitPartial {
		t.Errorf("run --restart: exit %d, want 3 (the fixtures' dead letters)\n%s%s", code, stdout, stderr)
	}
}
