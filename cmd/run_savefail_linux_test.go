package cmd

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bifrost/bifrost-migrate/migrate"
)

// TestRunSaveFailsThenResume (issue 37): a checkpoint that cannot be
// saved — here the kernel refuses to let any file of the process grow
// (RLIMIT_FSIZE, set on the running binary once it has saved a
// checkpoint; a write fails with EFBIG as it would with ENOSPC on a full
// disk, for root too) — ends run with exit 1, a summary whose last line
// names the checkpoint state.json still holds and an error line that says
// the checkpoint was not saved; nothing says the state is saved. A rerun
// resumes from that checkpoint and ends with verify clean.
func TestRunSaveFailsThenResume(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	cmd, stdout, stderr := startRunToACheckpoint(t, e, 11)
	bin, args := cmd.Path, cmd.Args[1:]
	// From now on no file of the process may grow past 1 byte: the next
	// state.json (a new file, replacing the old by rename) or dead-letter
	// line cannot be written.
	if err := unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: 1, Max: 1}, nil); err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("prlimit: %v", err)
	}
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != ExitFatal {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	st, err := migrate.LoadState(e.stateDir)
	if err != nil || st == nil || st.Done {
		t.Fatalf("state after the failed save: %+v, %v", st, err)
	}
	var rows int64
	for _, ts := range st.Tables {
		rows += ts.Rows
	}
	want := "run " + st.RunID + " not complete: its last checkpoint could not be saved; state.json holds the one of " +
		st.Updated.UTC().Format(time.RFC3339) + " (" + strconv.FormatInt(rows, 10) + " rows done), from which a rerun resumes"
	if got := lastLine(stdout.String()); got != want {
		t.Errorf("the summary's last line:\n%s\nwant\n%s", got, want)
	}
	errLine := lastLine(stderr.String())
	if !strings.Contains(errLine, "file too large") ||
		!strings.HasSuffix(errLine, "; the checkpoint was not saved, "+e.stateDir+" keeps the one before it: free space there or make it writable, then run again to resume from it") {
		t.Errorf("the error line does not say the checkpoint was not saved: %s", errLine)
	}
	if out := stdout.String() + stderr.String(); strings.Contains(out, "state is saved") || strings.Contains(out, "state saved") {
		t.Errorf("a failed save says the state is saved:\n%s", out)
	}

	stdout.Reset()
	stderr.Reset()
	cmd = exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = e.environ(), stdout, stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("rerun: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "resuming run "+st.RunID) || lastLine(stdout.String()) != "run "+st.RunID+" resumed and complete" {
		t.Errorf("the rerun does not resume run %s to its end:\n%s%s", st.RunID, stdout.String(), stderr.String())
	}
	verify := exec.Command(bin, "--database", e.database, "verify", "--tables", "Entities,Relationships", "--table-prefix", e.prefix, "--blob-container", e.container)
	verify.Env = e.environ()
	if out, err := verify.CombinedOutput(); err != nil {
		t.Errorf("verify after the resumed run: %v\n%s", err, out)
	}
}
