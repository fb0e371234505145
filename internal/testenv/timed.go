package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Timed is one run of a binary under GNU time: its output, its wall-clock
// and CPU time (user + system), its peak RSS in bytes, and its exit (nil,
// or the *exec.ExitError).
type Timed struct {
	Stdout, Stderr []byte
	Wall, CPU      time.Duration
	MaxRSS         int64
	Exit           error
}

// RunTimed runs bin with args, env added to the test's environment, under
// GNU time (/usr/bin/time) for its peak RSS and CPU time. It fails the
// test when GNU time is missing, the binary cannot start, or GNU time's
// figures cannot be read; an exit status other than 0 is in Exit.
func RunTimed(t testing.TB, env map[string]string, bin string, args ...string) Timed {
	t.Helper()
	const gnuTime = "/usr/bin/time"
	if _, err := os.Stat(gnuTime); err != nil {
		t.Fatalf("the RSS and CPU figures need GNU time at %s: %v", gnuTime, err)
	}
	usageFile := filepath.Join(t.TempDir(), "rusage")
	c := exec.Command(gnuTime, append([]string{"-o", usageFile, "-f", "%M %U %S", bin}, args...)...)
	c.Env = os.Environ()
	for k, v := range env {
		c.Env = append(c.Env, k+"="+v)
	}
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	start := time.Now()
	err := c.Run()
	r := Timed{Stdout: out.Bytes(), Stderr: errOut.Bytes(), Wall: time.Since(start)}
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatalf("%v: %v", args, err)
	}
	r.Exit = err
	usage, err := os.ReadFile(usageFile)
	if err != nil {
		t.Fatal(err)
	}
	// The last line: GNU time writes first when the exit status is not 0.
	lines := strings.Split(strings.TrimSpace(string(usage)), "\n")
	var kb int64
	var user, sys float64
	if _, err := fmt.Sscan(lines[len(lines)-1], &kb, &user, &sys); err != nil {
		t.Fatalf("GNU time wrote %q: %v", usage, err)
	}
	r.MaxRSS, r.CPU = kb*1024, time.Duration((user+sys)*float64(time.Second))
	return r
}
