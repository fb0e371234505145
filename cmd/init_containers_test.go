package cmd

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/recorder"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
)

// closedCosmos is a Cosmos DB setting at a port nobody listens on: a
// command that reached it would fail naming it, not with the error a
// test waits for.
var closedCosmos = map[string]string{"CosmosDBConnection": "AccountEndpoint=http://127.0.0.1:1/;AccountKey=" + azure.EmulatorCosmosKey}

// runInit runs `bifrost-migrate args...` in-process against closedCosmos
// through a recorder and fails if any request was sent.
func runInit(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	rec := recorder.New(nil)
	f, out, errOut := newTestFactory(closedCosmos)
	f.Transport = rec
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code = Execute(ctx, f, args)
	if r := rec.Requests(); len(r) != 0 {
		t.Errorf("requests sent: %v", r)
	}
	return code, out.String(), errOut.String()
}

// TestInitContainersFileIsBounded: --containers reads at most 4 MiB
// (/dev/zero is refused at the limit, exit 2, nothing sent), and an error
// about a value in the file quotes at most 64 characters of it: a 1 MB
// container id makes three short lines, not 3 MB. A file that is not JSON
// is said as such (it was once taken for a service's answer).
func TestInitContainersFileIsBounded(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero here")
	}
	code, out, errOut := runInit(t, "init", "--containers", "/dev/zero")
	want := "bifrost-migrate: --containers /dev/zero: larger than 4 MiB; give the JSON file of container definitions (a few kilobytes)\n"
	if code != ExitUsage || errOut != want || out != "" {
		t.Errorf("/dev/zero: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and:\n%s", code, out, errOut, want)
	}

	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	writeFile(t, big, `{"containers":[{"id":"`+strings.Repeat("a", 1<<20)+`"}]}`)
	code, out, errOut = runInit(t, "init", "--containers", big)
	prefix := `  container "` + strings.Repeat("a", 64) + `"…: `
	want = "bifrost-migrate: " + big + ": invalid container definitions:\n" +
		prefix + `id must be 1-255 characters without "/", "\", "?", "#" or surrounding spaces` + "\n" +
		prefix + "partitionKey.paths is empty\n" +
		prefix + `indexingPolicy: the root path "/*" must be in includedPaths or excludedPaths` + "\n"
	if code != ExitUsage || errOut != want || out != "" {
		t.Errorf("1 MB id: exit %d, stdout %q, stderr (%d bytes):\n%.2000s\nwant exit 2 and:\n%s", code, out, len(errOut), errOut, want)
	}

	field := filepath.Join(dir, "field.json")
	writeFile(t, field, `{"`+strings.Repeat("b", 1<<20)+`":1}`)
	code, _, errOut = runInit(t, "init", "--containers", field)
	want = "bifrost-migrate: " + field + `: container definitions: json: unknown field "` + strings.Repeat("b", 200-len(`json: unknown field "`)) + "…\n"
	if code != ExitUsage || errOut != want {
		t.Errorf("1 MB field name: exit %d, stderr (%d bytes):\n%.2000s\nwant exit 2 and:\n%s", code, len(errOut), errOut, want)
	}

	notJSON := filepath.Join(dir, "x.json")
	writeFile(t, notJSON, `{"containers": x}`)
	code, _, errOut = runInit(t, "init", "--containers", notJSON)
	want = "bifrost-migrate: " + notJSON + ": container definitions: invalid character 'x' looking for beginning of value\n"
	if code != ExitUsage || errOut != want {
		t.Errorf("not JSON: exit %d, stderr:\n%s\nwant exit 2 and:\n%s", code, errOut, want)
	}
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestInitContainersFIFOEndsOnSignal: the built binary reading
// --containers from a FIFO nobody writes to — with no writer at all
// (open(2) itself waits) or with one that writes nothing (a read waits)
// — ends at SIGINT or SIGTERM: exit 130 with the interruption said,
// within 1 s of the signal (the acceptance's bound, which catches a hang:
// it takes a few milliseconds; the time is logged).
func TestInitContainersFIFOEndsOnSignal(t *testing.T) {
	const signalBound = time.Second
	bin := testenv.Build(t)
	for _, tc := range []struct {
		name   string
		writer bool
		sig    syscall.Signal
	}{
		{"no writer, SIGINT", false, syscall.SIGINT},
		{"a writer that writes nothing, SIGINT", true, syscall.SIGINT},
		{"no writer, SIGTERM", false, syscall.SIGTERM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fifo, logFile := filepath.Join(dir, "layout.json"), filepath.Join(dir, "log")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Skipf("no FIFO here: %v", err)
			}
			if tc.writer {
				// Read-write never waits for the other end, and keeps a
				// writer on the FIFO that writes nothing.
				w, err := os.OpenFile(fifo, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
			}
			var stderr bytes.Buffer
			c := exec.Command(bin, "--log-file", logFile, "init", "--containers", fifo)
			c.Env = append(os.Environ(), "CosmosDBConnection="+closedCosmos["CosmosDBConnection"])
			c.Stderr = &stderr
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- c.Wait() }()
			// The log's first line is written once the signal handler is
			// in place (Main makes it before Execute).
			waitForFile(t, logFile, "start: ", done)
			sent := time.Now()
			if err := c.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				took := time.Since(sent)
				t.Logf("exit %v %v after the signal", err, took.Round(time.Millisecond))
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != ExitInterrupted {
					t.Fatalf("exit %v, want %d; stderr:\n%s", err, ExitInterrupted, &stderr)
				}
			case <-time.After(signalBound):
				_ = c.Process.Kill()
				t.Fatalf("still running %s after %v", signalBound, tc.sig)
			}
			want := "bifrost-migrate: interrupted: --containers " + fifo + " was not read to its end; nothing was sent, run init again\n"
			if stderr.String() != want {
				t.Errorf("stderr:\n%s\nwant:\n%s", &stderr, want)
			}
		})
	}
}

// waitForFile waits until name holds text, failing if the process ends
// (done) or 30 s pass first.
func waitForFile(t *testing.T, name, text string, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(name); err == nil && strings.Contains(string(b), text) {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the process ended before %s held %q: %v", name, text, err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not hold %q after 30 s", name, text)
		}
	}
}
