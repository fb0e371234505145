package cmd_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/cmd"
	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/transform"
)

// progressLine is a progress line of run on stderr without a terminal:
// the time, the command, the table's rows done of its total, what was
// written, the rate, the request units, the ETA and the requests in
// flight with what bounds them.
var progressLine = regexp.MustCompile(`^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) run: ((Config|Entities|Relationships) [\d,]+(/[\d,]+)? rows.*; [\d,]+ docs written.*; [\d,]+ rows/s; [\d,]+ RU/s, [\d.]+% throttled; ETA [^;]+; \d+ in flight \(window \d+ of \d+.*\))$`)

// TestRunProgressWithoutTerminal: `run` (the built binary) with stderr
// to a file prints a timestamped progress line every --progress-interval
// (100 ms here), the same lines go to --log-file; killed (SIGKILL) after
// its first Entities checkpoint and run again, it says on stderr that it
// resumes, from where; and the log names every phase of both sessions:
// the start, each table started (or resumed after its checkpoint, or
// done before) and finished, the resume, the end.
func TestRunProgressWithoutTerminal(t *testing.T) {
	t.Parallel()
	bin := testenv.Build(t)
	src := newResSource(t, 3000, 5, resNow, 1)
	// 10 ms added to every Cosmos DB request: a run of a few seconds,
	// long enough for its lines.
	proxy, err := faultproxy.Start(faultproxy.Config{Target: src.cosmos.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	proxy.SetLatency(10*time.Millisecond, 0)
	db := src.newDatabase()
	dir := t.TempDir()
	stateDir, logPath := filepath.Join(dir, "state"), filepath.Join(dir, "run.log")
	args := []string{"run", "--database", db, "--table-prefix", src.prefix, "--blob-container", src.blobs[0], "--state-dir", stateDir,
		"--execution-ttl", "full", "--progress-interval", "100ms", "--log-file", logPath}

	start := func(stderr string) *exec.Cmd {
		f, err := os.Create(stderr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		c := exec.Command(bin, args...)
		c.Env = os.Environ()
		for k, v := range src.env(proxy.URL()) {
			c.Env = append(c.Env, k+"="+v)
		}
		c.Stdout, c.Stderr = nil, f
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	lines := func(name string) []string {
		b, _ := os.ReadFile(name)
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	progress := func(name string) []string {
		var out []string
		for _, l := range lines(name) {
			if progressLine.MatchString(l) {
				out = append(out, l)
			}
		}
		return out
	}

	// The first session: killed once Entities has a checkpoint and a
	// progress line was printed.
	err1 := filepath.Join(dir, "stderr-1")
	c := start(err1)
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, _ := migrate.LoadState(stateDir)
		if st != nil && tableRows(st, transform.TableEntities) > 0 && len(progress(err1)) > 0 {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("run ended (%v) before its first Entities checkpoint and progress line; stderr:\n%s", err, strings.Join(lines(err1), "\n"))
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no Entities checkpoint and progress line within 2 minutes")
		}
	}
	_ = c.Process.Kill()
	var ee *exec.ExitError
	if err := <-exited; !errors.As(err, &ee) {
		t.Fatalf("the killed run: %v", err)
	}
	saved, err := migrate.LoadState(stateDir)
	if err != nil || saved == nil || saved.Done {
		t.Fatalf("state after the kill: %+v, %v", saved, err)
	}
	for _, l := range progress(err1) {
		m := progressLine.FindStringSubmatch(l)
		if _, err := time.Parse(time.RFC3339, m[1]); err != nil {
			t.Errorf("progress line with a bad time: %q", l)
		}
	}

	// The second session resumes and ends as a run of the fixtures does.
	err2 := filepath.Join(dir, "stderr-2")
	c = start(err2)
	err = c.Wait()
	if !errors.As(err, &ee) || ee.ExitCode() != cmd.ExitPartial {
		t.Fatalf("the resumed run: %v, want exit 3 (the fixtures' dead letters); stderr:\n%s", err, strings.Join(lines(err2), "\n"))
	}
	resume := "run: resuming run " + saved.RunID + " from its checkpoint of "
	if !strings.Contains(strings.Join(lines(err2), "\n"), resume) {
		t.Errorf("stderr of the resumed run does not say %q:\n%s", resume, strings.Join(lines(err2), "\n"))
	}

	// The log: both sessions, every phase, the progress lines.
	log := lines(logPath)
	stamp := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z `)
	var body []string
	for _, l := range log {
		if !stamp.MatchString(l) {
			t.Errorf("log line without a timestamp: %q", l)
			continue
		}
		body = append(body, stamp.ReplaceAllString(l, ""))
	}
	text := strings.Join(body, "\n")
	for _, want := range []string{
		"start: bifrost-migrate run ",
		"table Config: started",
		"table Config: finished: ",
		"table Entities: started",
		resume,
		"table Config: done in an earlier session",
		"table Entities: resuming after ",
		"table Entities: finished: ",
		"table Relationships: finished: ",
		"end: ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the log has no %q line:\n%s", want, filterLog(body))
		}
	}
	if n := strings.Count(text, "start: bifrost-migrate run "); n != 2 {
		t.Errorf("%d start lines in the log, want one per session", n)
	}
	// Every progress line of stderr is in the log too.
	for _, l := range append(progress(err1), progress(err2)...) {
		msg := progressLine.FindStringSubmatch(l)[2]
		if !strings.Contains(text, "progress: "+msg) {
			t.Errorf("progress line %q is not in the log", l)
		}
	}
	// --output json keeps its contract: no text lines on stdout, none on
	// stderr.
	out, errOut := filepath.Join(dir, "json-out"), filepath.Join(dir, "json-err")
	jargs := append(append([]string{}, args...), "--output", "json", "--restart")
	jc := exec.Command(bin, jargs...)
	jc.Env = c.Env
	fo, _ := os.Create(out)
	fe, _ := os.Create(errOut)
	jc.Stdout, jc.Stderr = fo, fe
	_ = jc.Run()
	fo.Close()
	fe.Close()
	for _, l := range lines(out) {
		var v struct {
			Type string `json:"type"`
		}
		if json.Unmarshal([]byte(l), &v) != nil || v.Type == "" {
			t.Errorf("--output json: stdout line %q is not a JSON object with a type", l)
		}
	}
	if p := progress(errOut); len(p) > 0 {
		t.Errorf("--output json: %d text progress lines on stderr", len(p))
	}
	t.Logf("%d progress lines before the kill, %d after; %d log lines", len(progress(err1)), len(progress(err2)), len(log))
}

// filterLog is the log without its page and checkpoint lines, for a
// failure's message.
func filterLog(lines []string) string {
	var out []string
	for _, l := range lines {
		if !strings.HasPrefix(l, "page of ") && !strings.HasPrefix(l, "checkpoint ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
