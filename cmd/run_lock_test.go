package cmd_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/cmd"
	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/migrate"
)

// TestRunLockOneProcessPerStateDir is the acceptance test of "one process
// per state directory". The built binary runs `run` over 300 generated
// executions through a proxy that holds every doc write until the test
// lets them go, so the run is certainly still working (and holding its
// state directory) while, from this process and with the same target, a
// second `run`, a `run
// --restart` and a `replay` on the same --state-dir each exit 1 within
// 10 s with the exact sentence naming the first run's PID, and change
// nothing in the directory; a `run --dry-run` beside it works (it takes no
// lock). Then the first run completes, `verify` (the binary, with the
// run's --execution-ttl) is clean, and a rerun is no longer refused.
func TestRunLockOneProcessPerStateDir(t *testing.T) {
	src := newResGenerated(t, 300, 17, time.Now().UTC(), 1)
	bin := testenv.Build(t)
	db := src.newDatabase()
	stateDir := filepath.Join(t.TempDir(), "state")
	ttl := []string{"--execution-ttl", "full"}

	// The proxy holds doc writes until gate is closed; firstWrite is
	// closed when the first one arrives, by which time the run holds the
	// lock (it takes it before it reads anything).
	gate, firstWrite := make(chan struct{}), make(chan struct{})
	var arrived sync.Once
	proxy, err := faultproxy.Start(faultproxy.Config{
		Target: src.cosmos.Endpoint,
		Match: func(r *http.Request) bool {
			if faultproxy.IsDocWrite(r) {
				arrived.Do(func() { close(firstWrite) })
				select {
				case <-gate:
				case <-r.Context().Done():
				}
			}
			return false // no faults: the proxy only holds writes back
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	var openGate sync.Once
	t.Cleanup(func() { openGate.Do(func() { close(gate) }) })

	first := exec.Command(bin, src.runArgs(db, 0, stateDir, ttl...)...)
	first.Env = resEnviron(src.env(proxy.URL()))
	var firstOut, firstErr bytes.Buffer
	first.Stdout, first.Stderr = &firstOut, &firstErr
	startedAt := time.Now().Truncate(time.Second)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- first.Wait() }()
	waited := false
	t.Cleanup(func() {
		if !waited {
			_ = first.Process.Kill()
			<-ended
		}
	})
	select {
	case <-firstWrite:
	case err := <-ended:
		waited = true
		t.Fatalf("the first run ended (%v) before its first doc write:\n%s", err, firstErr.String())
	case <-time.After(3 * time.Minute):
		t.Fatalf("the first run sent no doc write in 3 minutes:\n%s", firstErr.String())
	}

	statePath := filepath.Join(stateDir, migrate.StateFile)
	stateBefore, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatalf("the first run has saved no state: %v", err)
	}
	busy := regexp.MustCompile(`^bifrost-migrate: state directory (.+) is in use by bifrost-migrate run \(PID (\d+), since (\S+)\); wait for it to finish or stop it first\n$`)
	refused := func(t *testing.T, args ...string) {
		t.Helper()
		start := time.Now()
		// Cancelled after 20 s: a command that was let in would wait
		// for the held writes, and must fail the test, not hang it.
		code, stdout, stderr := resExecuteWithin(20*time.Second, src.env(proxy.URL()), nil, append(args, "--quiet")...)
		elapsed := time.Since(start)
		if code != cmd.ExitFatal || elapsed > 10*time.Second {
			t.Fatalf("exit %d after %v, want %d within 10s; stderr:\n%s", code, elapsed.Round(time.Millisecond), cmd.ExitFatal, stderr)
		}
		m := busy.FindStringSubmatch(stderr)
		if m == nil {
			t.Fatalf("stderr %q does not say the state directory is in use", stderr)
		}
		since, err := time.Parse(time.RFC3339, m[3])
		if m[1] != stateDir || m[2] != strconv.Itoa(first.Process.Pid) || err != nil || since.Before(startedAt) || since.After(time.Now()) {
			t.Errorf("stderr %q: want state directory %s, PID %d, since between %s and now", stderr, stateDir, first.Process.Pid, startedAt.UTC().Format(time.RFC3339))
		}
		// Under --output json stdout holds the error line only; in text,
		// nothing.
		if !slices.Contains(args, "json") {
			if stdout != "" {
				t.Errorf("a refused command printed on stdout: %q", stdout)
			}
			t.Logf("refused after %v", elapsed.Round(time.Millisecond))
			return
		}
		var line struct {
			Type    string `json:"type"`
			Exit    int    `json:"exit"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal([]byte(stdout), &line); err != nil || strings.Count(stdout, "\n") != 1 ||
			line.Type != "error" || line.Exit != cmd.ExitFatal || "bifrost-migrate: "+line.Message+"\n" != stderr {
			t.Errorf("a refused command printed on stdout %q; want only the error line with stderr's sentence", stdout)
		}
		t.Logf("refused after %v", elapsed.Round(time.Millisecond))
	}

	t.Run("a second run", func(t *testing.T) {
		refused(t, src.runArgs(db, 0, stateDir, ttl...)...)
	})
	t.Run("run --restart removes nothing", func(t *testing.T) {
		refused(t, src.runArgs(db, 0, stateDir, append(ttl, "--restart")...)...)
		if after, err := os.ReadFile(statePath); err != nil || !bytes.Equal(after, stateBefore) {
			t.Errorf("state.json changed or is gone after the refused --restart (%v)", err)
		}
		if _, err := os.Stat(filepath.Join(stateDir, migrate.DeadLetterFile)); err != nil {
			t.Errorf("dead-letter.jsonl after the refused --restart: %v", err)
		}
	})
	t.Run("replay", func(t *testing.T) {
		refused(t, append([]string{"replay", "--database", db, "--table-prefix", src.prefix, "--blob-container", src.blobs[0],
			"--state-dir", stateDir, "--since", "2020-01-01T00:00:00Z"}, ttl...)...)
		if _, err := os.Stat(filepath.Join(stateDir, migrate.ReplayDeadLetterFile)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the refused replay created %s: %v", migrate.ReplayDeadLetterFile, err)
		}
	})
	t.Run("a dry run is not refused", func(t *testing.T) {
		// The binary, with the clock the run has (the in-process clock
		// is fixed at resNow, the data dated by the real one).
		code, _, stderr := resBinary(t, bin, src.env(""), append(src.runArgs(db, 0, stateDir, ttl...), "--dry-run", "--quiet")...)
		if code != cmd.ExitOK {
			t.Errorf("run --dry-run beside the run: exit %d: %s", code, stderr)
		}
	})

	select {
	case err := <-ended:
		waited = true
		t.Fatalf("the first run ended (%v) while its writes were held:\n%s", err, firstErr.String())
	default:
	}
	openGate.Do(func() { close(gate) })
	select {
	case err = <-ended:
		waited = true
	case <-time.After(5 * time.Minute):
		t.Fatalf("the first run did not end within 5 minutes of its writes being let go")
	}
	if err != nil {
		t.Fatalf("the first run: %v:\n%s", err, firstErr.String())
	}
	s := resSummary(t, firstOut.String())
	if !s.Complete || s.DeadLetters != 0 || s.DocsWritten < 300 {
		t.Fatalf("the first run: complete %v, %d dead letters, %d docs written; want complete, 0, at least 300", s.Complete, s.DeadLetters, s.DocsWritten)
	}

	code, stdout, stderr := resBinary(t, bin, src.env(""), append([]string{"verify", "--database", db, "--table-prefix", src.prefix,
		"--blob-container", src.blobs[0], "--state-dir", stateDir, "--quiet"}, ttl...)...)
	if code != cmd.ExitOK || !strings.Contains(stdout, "verify: OK") {
		t.Fatalf("verify after the run: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// The run released the directory when it ended: the next run (the
	// same target, through the proxy) takes it and finds the run complete.
	code, stdout, stderr = resExecute(src.env(proxy.URL()), nil, append(src.runArgs(db, 0, stateDir, ttl...), "--quiet")...)
	if code != cmd.ExitOK {
		t.Fatalf("run after the first ended: exit %d: %s", code, stderr)
	}
	if again := resSummary(t, stdout); !again.AlreadyComplete || again.RunID != s.RunID {
		t.Errorf("run after the first ended: already complete %v, run %q; want run %q already complete", again.AlreadyComplete, again.RunID, s.RunID)
	}
}

// resEnviron is this process's environment with env added.
func resEnviron(env map[string]string) []string {
	out := os.Environ()
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// resBinary runs the built binary bin with args and env added to this
// process's environment, and returns how it ended.
func resBinary(t *testing.T, bin string, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	c := exec.Command(bin, args...)
	c.Env = resEnviron(env)
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	err := c.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("%s: %v", bin, err)
	}
	return code, out.String(), errOut.String()
}
