package cmd_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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

// anyProgressLine is a timestamped progress line of run, whatever it says.
var anyProgressLine = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ run: `)

// writtenPart is "N docs written;", or "N docs written, M dead letters;".
var writtenPart = regexp.MustCompile(`; [\d,]+ docs written(, [\d,]+ dead letters?)?; `)

// inAllPart reads "N/T (P%) in all" from a progress line.
var inAllPart = regexp.MustCompile(`; [\d,]+/([\d,]+) \((\d+)%\) in all;`)

// TestRunProgressFromTheFirstSecond (issue 40): `run --max-ru 20
// --progress-interval 1s` (the built binary, stderr to a file) prints a
// timestamped progress line within 3 s of starting, long before its
// first checkpoint, saying the rows read, the docs written and in flight
// and the RU/s; the total over every table and its percentage never
// fall from one line to the next; SIGINT makes it print its summary,
// whose last line says it is not complete, then exit 130 with the
// sentence that says to run again.
func TestRunProgressFromTheFirstSecond(t *testing.T) {
	t.Parallel()
	bin := testenv.Build(t)
	src := newResSource(t, 300, 7, resNow, 1)
	db := src.newDatabase()
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	stdout, stderr := filepath.Join(dir, "stdout"), filepath.Join(dir, "stderr")
	fo, err := os.Create(stdout)
	if err != nil {
		t.Fatal(err)
	}
	defer fo.Close()
	fe, err := os.Create(stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer fe.Close()
	c := exec.Command(bin, "run", "--database", db, "--table-prefix", src.prefix, "--blob-container", src.blobs[0], "--state-dir", stateDir,
		"--max-ru", "20", "--progress-interval", "1s")
	c.Env = os.Environ()
	for k, v := range src.env("") {
		c.Env = append(c.Env, k+"="+v)
	}
	c.Stdout, c.Stderr = fo, fe
	started := time.Now()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	progress := func() []string {
		b, _ := os.ReadFile(stderr)
		var out []string
		for _, l := range strings.Split(string(b), "\n") {
			if anyProgressLine.MatchString(l) {
				out = append(out, l)
			}
		}
		return out
	}
	// The first line, within 3 s (a bound against a silent start); then
	// a few more, with the totals.
	for len(progress()) == 0 {
		if time.Since(started) > 3*time.Second {
			b, _ := os.ReadFile(stderr)
			t.Fatalf("no progress line within 3 s of starting; stderr:\n%s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	firstAt := time.Since(started)
	for len(progress()) < 4 || !inAllPart.MatchString(progress()[len(progress())-1]) {
		select {
		case err := <-exited:
			t.Fatalf("run ended (%v) before it was interrupted; stderr:\n%s", err, strings.Join(progress(), "\n"))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Since(started) > time.Minute {
			t.Fatalf("no progress line with the totals within a minute:\n%s", strings.Join(progress(), "\n"))
		}
	}
	if st, _ := migrate.LoadState(stateDir); st != nil && tableRows(st, transform.TableConfig)+tableRows(st, transform.TableEntities) > 0 {
		t.Logf("a checkpoint came before the lines were read: the rate was not low enough to show the lines come first")
	}
	first := progress()
	if err := c.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-exited:
	case <-time.After(30 * time.Second):
		_ = c.Process.Kill()
		t.Fatal("run did not end within 30 s of SIGINT")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != cmd.ExitInterrupted {
		t.Fatalf("exit %v, want %d", err, cmd.ExitInterrupted)
	}
	out, _ := os.ReadFile(stdout)
	errText, _ := os.ReadFile(stderr)
	summary := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if !strings.HasPrefix(summary[0], "TABLE") || !regexp.MustCompile(`^run \S+ not complete: run again to resume$`).MatchString(summary[len(summary)-1]) {
		t.Errorf("stdout is not the summary of an interrupted run:\n%s", out)
	}
	if !strings.HasSuffix(string(errText), "bifrost-migrate: interrupted: state saved in "+stateDir+"; run again to resume\n") {
		t.Errorf("stderr does not end with the interruption's sentence:\n%s", errText)
	}
	// What the lines say before any checkpoint, and that their totals
	// never fall.
	if !regexp.MustCompile(`^\S+ run: (starting|\w+ [\d,]+(/[\d,]+ rows \(\d+%\))?)`).MatchString(first[0]) {
		t.Errorf("the first line: %q", first[0])
	}
	if !strings.Contains(strings.Join(first, "\n"), " read; ") {
		t.Errorf("no line says the rows read:\n%s", strings.Join(first, "\n"))
	}
	var prevTotal, prevPct int64
	for _, l := range progress() {
		if !strings.Contains(l, "starting (for") {
			// The docs written, then the dead letters once a row has
			// gone to the file (the fixtures hold a few such rows).
			if !writtenPart.MatchString(l) {
				t.Errorf("a line without the docs written: %q", l)
			}
			for _, want := range []string{" RU/s, ", " in flight (window "} {
				if !strings.Contains(l, want) {
					t.Errorf("a line without %q: %q", want, l)
				}
			}
		}
		m := inAllPart.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		total, _ := strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64)
		pct, _ := strconv.ParseInt(m[2], 10, 64)
		if total < prevTotal || pct < prevPct {
			t.Errorf("the total or its percentage fell: %q after %d (%d%%)", l, prevTotal, prevPct)
		}
		prevTotal, prevPct = total, pct
	}
	t.Logf("%d progress lines, the first %s after the start:\n%s\nthe summary:\n%s", len(progress()), firstAt.Round(time.Millisecond), strings.Join(progress(), "\n"), out)
}
