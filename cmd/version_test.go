package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/internal/version"
	"github.com/bifrost/bifrost-migrate/migrate"
)

// `version` and `--version` print the build: version, revision, Go.
func TestVersionCommand(t *testing.T) {
	want := version.Get().Text()
	if !strings.HasPrefix(want, "bifrost-migrate ") || !strings.Contains(want, "\nrevision: ") || !strings.Contains(want, "\ngo: "+runtime.Version()+" ") {
		t.Fatalf("version text lacks the version, revision or Go version:\n%s", want)
	}
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		f, out, errOut := newTestFactory(nil)
		if code := Execute(context.Background(), f, args); code != 0 || out.String() != want || errOut.Len() != 0 {
			t.Errorf("%v: exit %d, stdout\n%s\nwant\n%s\nstderr %q", args, code, out, want, errOut)
		}
	}

	f, out, _ := newTestFactory(nil)
	if code := Execute(context.Background(), f, []string{"--output", "json", "version"}); code != 0 {
		t.Fatalf("--output json version: exit %d", code)
	}
	lines := parseJSONLines(t, out.String())
	b := version.Get()
	if len(lines) != 1 || lines[0].Type != ui.LineSummary || lines[0].str("toolVersion") != b.Version ||
		lines[0].str("go") != b.Go || lines[0].str("os") != runtime.GOOS || lines[0].str("arch") != runtime.GOARCH {
		t.Errorf("--output json version:\n%s", out)
	}

	f, _, errOut := newTestFactory(nil)
	if code := Execute(context.Background(), f, []string{"version", "extra"}); code != ExitUsage {
		t.Errorf("version extra: exit %d, want 2: %s", code, errOut)
	}
}

// A build stamped by the linker, as scripts/release.sh stamps it, names
// its version in `version`, state.json, the --log-file header, the JSON
// summary and verify's --report.
func TestVersionStampedByTheLinker(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	e.load()
	const (
		pkg = "github.com/bifrost/bifrost-migrate/internal/version"
		v   = "v9.8.7-stamped"
		rev = "0123456789abcdef0123456789abcdef01234567"
	)
	bin := testenv.Build(t, "-ldflags", "-X "+pkg+".version="+v+" -X "+pkg+".revision="+rev+
		" -X "+pkg+".revisionTime=2026-11-20T14:00:00Z -X "+pkg+".modified=false")
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runBinary(t, bin, e.environ(), args...)
	}

	wantText := "bifrost-migrate " + v + "\nrevision: " + rev + " (2026-11-20T14:00:00Z)\ngo: " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	for _, arg := range []string{"version", "--version"} {
		if code, out, errOut := cli(arg); code != 0 || out != wantText {
			t.Errorf("%s: exit %d\n%s\nwant\n%s\n%s", arg, code, out, wantText, errOut)
		}
	}

	logFile := filepath.Join(t.TempDir(), "run.log")
	code, out, errOut := cli(e.binaryArgs("--log-file", logFile, "--output", "json", "run", "--execution-ttl", "full")...)
	if code != ExitPartial {
		t.Fatalf("run: exit %d, want 3 (the fixtures' dead letters)\n%s", code, errOut)
	}
	var summaries int
	for _, l := range parseJSONLines(t, out) {
		if l.Type == ui.LineSummary {
			summaries++
			if got := l.str("toolVersion"); got != v {
				t.Errorf("run's summary: toolVersion %q, want %q", got, v)
			}
		}
	}
	if summaries != 1 {
		t.Errorf("%d summary lines in run's output:\n%s", summaries, out)
	}

	raw, err := os.ReadFile(filepath.Join(e.stateDir, migrate.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		ToolVersion string `json:"toolVersion"`
	}
	if err := json.Unmarshal(raw, &st); err != nil || st.ToolVersion != v {
		t.Errorf("state.json: toolVersion %q (%v), want %q:\n%s", st.ToolVersion, err, v, raw)
	}

	log, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	header := strings.SplitN(string(log), "\n", 3)
	wantHeader := " toolVersion: " + v + " (revision " + rev + ", 2026-11-20T14:00:00Z; " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"
	if len(header) < 3 || !strings.Contains(header[0], " start: bifrost-migrate ") || !strings.HasSuffix(header[1], wantHeader) {
		t.Errorf("the log's header is not the start line then%q:\n%s", wantHeader, log)
	}

	report := filepath.Join(t.TempDir(), "report.json")
	if code, _, errOut := cli(e.binaryArgs("verify", "--execution-ttl", "full", "--report", report)...); code != ExitPartial {
		t.Fatalf("verify: exit %d, want 3 (rows not migrated)\n%s", code, errOut)
	}
	raw, err = os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Type        string `json:"type"`
		ToolVersion string `json:"toolVersion"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil || rep.Type != "verify" || rep.ToolVersion != v {
		t.Errorf("verify --report: type %q, toolVersion %q (%v); want verify, %q", rep.Type, rep.ToolVersion, err, v)
	}
}

// runBinary runs the built binary bin with args in the environment env
// and returns its exit status, stdout and stderr; a binary that cannot
// start fails the test.
func runBinary(t *testing.T, bin string, env []string, args ...string) (int, string, string) {
	t.Helper()
	c := exec.Command(bin, args...)
	c.Env = env
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	err := c.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%v: %v", args, err)
	}
	return c.ProcessState.ExitCode(), out.String(), errOut.String()
}
