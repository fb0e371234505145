package migrate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/fakes"
)

// lockHelperEnv, when set to a directory, makes the test binary a helper
// process that takes the directory's lock as a replay, says "locked" on
// stdout and waits to be killed (TestLockReleasedWhenTheHolderIsKilled).
const lockHelperEnv = "BIFROST_LOCK_HELPER_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(lockHelperEnv); dir != "" {
		os.Exit(lockHelper(dir))
	}
	os.Exit(m.Run())
}

// lockHelper holds dir's lock until it is killed, or for two minutes at
// most so that no helper outlives a test run that lost it.
func lockHelper(dir string) int {
	if _, err := LockStateDir(dir, "replay", goldenNow); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	os.Stdout.WriteString("locked\n")
	time.Sleep(2 * time.Minute)
	return 1
}

// readLockRecord returns the record in dir's lock file.
func readLockRecord(t *testing.T, dir string) lockRecord {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, LockFile))
	if err != nil {
		t.Fatal(err)
	}
	var rec lockRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("lock file %q: %v", b, err)
	}
	return rec
}

// A second lock on a held directory fails at once with the holder's PID,
// command and time; after release the next one gets it and records
// itself.
func TestLockStateDirExcludesASecondHolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	since := time.Date(2026, 11, 23, 14, 0, 0, 500, time.UTC)
	release, err := LockStateDir(dir, "run", since)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
		t.Fatalf("state directory after the lock: %v, %v; want a directory with mode 0700", st, err)
	}

	start := time.Now()
	_, err = LockStateDir(dir, "replay", since.Add(time.Hour))
	var busy *StateDirBusyError
	if !errors.As(err, &busy) {
		t.Fatalf("second lock: err %v, want a *StateDirBusyError", err)
	}
	if d := time.Since(start); d > holderWait/2 {
		t.Errorf("the second lock took %v to fail; the holder's record was there", d)
	}
	want := StateDirBusyError{Dir: dir, PID: os.Getpid(), Command: "run", Since: since.Truncate(time.Second)}
	if *busy != want {
		t.Errorf("busy error %+v, want %+v", *busy, want)
	}
	if want := "state directory " + dir + " is in use by bifrost-migrate run (PID " + strconv.Itoa(os.Getpid()) + ", since 2026-11-23T14:00:00Z)"; err.Error() != want {
		t.Errorf("error %q\nwant  %q", err, want)
	}

	if err := release(); err != nil {
		t.Fatalf("release: %v", err)
	}
	release, err = LockStateDir(dir, "replay", since.Add(time.Hour))
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	defer release()
	if rec := readLockRecord(t, dir); rec.PID != os.Getpid() || rec.Command != "replay" || !rec.Since.Equal(since.Add(time.Hour).Truncate(time.Second)) {
		t.Errorf("record after the second lock: %+v", rec)
	}
}

// A lock file left by a process that no longer holds the lock (killed,
// say) does not block: its record is replaced, whole, by the new holder's.
func TestLockStateDirIgnoresAStaleRecord(t *testing.T) {
	dir := t.TempDir()
	stale := `{"pid":2147483000,"command":"replay","since":"2026-01-01T00:00:00Z","padding":"` + strings.Repeat("x", 200) + `"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, LockFile), []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	release, err := LockStateDir(dir, "run", goldenNow)
	if err != nil {
		t.Fatalf("lock over a stale record: %v", err)
	}
	defer release()
	b, err := os.ReadFile(filepath.Join(dir, LockFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"pid":` + strconv.Itoa(os.Getpid()) + `,"command":"run","since":"2026-11-21T12:00:00Z"}` + "\n"; string(b) != want {
		t.Errorf("lock file %q, want %q", b, want)
	}
}

// A holder that has recorded nothing (its record is empty for longer
// than holderWait) is reported as unknown, not as the last PID the file
// named or as free.
func TestLockStateDirHolderWithoutRecord(t *testing.T) {
	dir := t.TempDir()
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if ok, err := tryLock(f); !ok || err != nil {
		t.Fatalf("tryLock: %v, %v", ok, err)
	}
	start := time.Now()
	_, err = LockStateDir(dir, "run", goldenNow)
	var busy *StateDirBusyError
	if !errors.As(err, &busy) || busy.PID != 0 {
		t.Fatalf("err %v, want a *StateDirBusyError without a PID", err)
	}
	if d := time.Since(start); d < holderWait {
		t.Errorf("gave up after %v, before holderWait (%v)", d, holderWait)
	}
	if want := "state directory " + dir + " is in use by another process, which has not recorded itself in " + filepath.Join(dir, LockFile); err.Error() != want {
		t.Errorf("error %q\nwant  %q", err, want)
	}
}

// The lock of a process killed with SIGKILL is released by the kernel:
// while the helper process lives, the lock names it; once it is killed,
// the lock is free and the new holder records itself.
func TestLockReleasedWhenTheHolderIsKilled(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), lockHelperEnv+"="+dir)
	var errOut bytes.Buffer
	c.Stderr = &errOut
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "locked\n" {
		t.Fatalf("helper said %q (%v), stderr %s", line, err, errOut.String())
	}

	_, err = LockStateDir(dir, "run", goldenNow)
	var busy *StateDirBusyError
	if !errors.As(err, &busy) || busy.PID != c.Process.Pid || busy.Command != "replay" || !busy.Since.Equal(goldenNow) {
		t.Fatalf("lock held by the helper (PID %d): err %v, want a *StateDirBusyError naming it", c.Process.Pid, err)
	}

	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed = true
	err = c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("helper: %v, want killed by SIGKILL", err)
	}
	if rec := readLockRecord(t, dir); rec.PID != c.Process.Pid {
		t.Fatalf("the killed helper's record is gone (%+v): the test proves nothing about a stale file", rec)
	}

	release, err := LockStateDir(dir, "run", goldenNow)
	if err != nil {
		t.Fatalf("lock after the holder was killed: %v", err)
	}
	defer release()
	if rec := readLockRecord(t, dir); rec.PID != os.Getpid() || rec.Command != "run" {
		t.Errorf("record after taking the lock: %+v, want this process's", rec)
	}
}

// Run and Replay refuse a state directory another process holds before
// they touch it: --restart removes nothing, a saved state stays as it
// is, nothing is written to Cosmos DB. A dry run takes no lock and works
// beside the holder. Once the holder releases, both work.
func TestLockRunAndReplayRefuseAHeldStateDir(t *testing.T) {
	e := newEnv(t, 10)
	ctx, cancel := context.WithCancel(context.Background())
	first := true
	e.docs.BeforeWrite = func(ctx context.Context, op fakes.Op) error {
		if first {
			first = false
			cancel()
		}
		return ctx.Err()
	}
	opts := e.opts()
	opts.Concurrency = 1 // e.docs.BeforeWrite is not safe for concurrent use
	if _, err := e.run(ctx, opts); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	e.docs.BeforeWrite = nil
	stateBefore, err := os.ReadFile(filepath.Join(e.dir, StateFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, DeadLetterFile)); err != nil {
		t.Fatal(err)
	}
	docsBefore := e.docs.Writes()

	since := goldenNow.Add(-time.Hour)
	release, err := LockStateDir(e.dir, "replay", since)
	if err != nil {
		t.Fatal(err)
	}
	want := "state directory " + e.dir + " is in use by bifrost-migrate replay (PID " + strconv.Itoa(os.Getpid()) + ", since 2026-11-21T11:00:00Z)"

	restart := e.opts()
	restart.Restart = true
	s, err := e.run(context.Background(), restart)
	var busy *StateDirBusyError
	if !errors.As(err, &busy) || err.Error() != want {
		t.Fatalf("run --restart on a held directory: err %v, want %q", err, want)
	}
	if s.Tables != nil {
		t.Errorf("refused run returned a summary: %+v", s)
	}
	if after, err := os.ReadFile(filepath.Join(e.dir, StateFile)); err != nil || !bytes.Equal(after, stateBefore) {
		t.Errorf("the refused run --restart changed state.json (err %v)", err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, DeadLetterFile)); err != nil {
		t.Errorf("the refused run --restart removed the dead letters: %v", err)
	}

	f := &replayFixture{src: e.src, store: fakes.NewDocs(), blobs: e.blobs, dir: e.dir} // replay over the run's source and blobs
	ropts := ReplayOptions{WindowOptions: WindowOptions{Since: migratedAt}, Common: Common{StateDir: e.dir, Concurrency: 3}}
	_, err = Replay(context.Background(), ropts, ReplayDeps{Source: f.src, Docs: f.store, Blobs: f.blobs, Env: Env{Now: func() time.Time { return goldenNow }}})
	if !errors.As(err, &busy) || err.Error() != want {
		t.Fatalf("replay on a held directory: err %v, want %q", err, want)
	}
	if _, err := os.Stat(filepath.Join(e.dir, ReplayDeadLetterFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused replay created %s: %v", ReplayDeadLetterFile, err)
	}
	if e.docs.Writes() != docsBefore || len(f.store.Snapshot()) != 0 {
		t.Errorf("a refused command wrote docs")
	}

	dry := e.opts()
	dry.DryRun = true
	if s, err := e.run(context.Background(), dry); err != nil || !s.Complete {
		t.Fatalf("dry run beside the holder: complete %v, err %v", s.Complete, err)
	}
	ropts.DryRun = true
	if _, err := Replay(context.Background(), ropts, ReplayDeps{Source: f.src, Docs: f.store, Blobs: f.blobs, Env: Env{Now: func() time.Time { return goldenNow }}}); err != nil {
		t.Fatalf("replay --dry-run beside the holder: %v", err)
	}
	if rec := readLockRecord(t, e.dir); rec.Command != "replay" || !rec.Since.Equal(since) {
		t.Errorf("a dry run touched the lock file: %+v", rec)
	}

	if err := release(); err != nil {
		t.Fatal(err)
	}
	s, err = e.run(context.Background(), restart)
	if err != nil || !s.Complete || s.Resumed {
		t.Fatalf("run --restart after the release: complete %v resumed %v err %v", s.Complete, s.Resumed, err)
	}
	// Run released its lock when it returned: Replay gets it.
	ropts.DryRun = false
	if _, err := Replay(context.Background(), ropts, ReplayDeps{Source: f.src, Docs: f.store, Blobs: f.blobs, Env: Env{Now: func() time.Time { return goldenNow }}}); err != nil {
		t.Fatalf("replay after the run: %v", err)
	}
	if rec := readLockRecord(t, e.dir); rec.Command != "replay" || rec.PID != os.Getpid() || !rec.Since.Equal(goldenNow) {
		t.Errorf("record after the replay: %+v", rec)
	}
}
