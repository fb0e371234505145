package cmd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/testenv"
)

// completeValues runs cobra's __complete for args (the last one is the
// word being completed) and returns the values offered, descriptions cut
// off, and the directive line.
func completeValues(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	f, out, errOut := newTestFactory(nil)
	if code := Execute(context.Background(), f, append([]string{"__complete"}, args...)); code != 0 {
		t.Fatalf("__complete %v: exit %d: %s", args, code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], ":") {
		t.Fatalf("__complete %v: no directive line:\n%s", args, out)
	}
	var values []string
	for _, l := range lines[:len(lines)-1] {
		v, _, _ := strings.Cut(l, "\t")
		values = append(values, v)
	}
	return values, lines[len(lines)-1]
}

// `completion bash` writes a script that bash accepts and that registers
// the completion of bifrost-migrate; the other shells get theirs.
func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		f, out, errOut := newTestFactory(nil)
		if code := Execute(context.Background(), f, []string{"completion", shell}); code != 0 || out.Len() < 1000 {
			t.Errorf("completion %s: exit %d, %d bytes: %s", shell, code, out.Len(), errOut)
		}
		if shell != "bash" {
			continue
		}
		bash, err := exec.LookPath("bash")
		if err != nil {
			t.Log("bash is not installed: the script is not sourced")
			continue
		}
		script := filepath.Join(t.TempDir(), "bifrost-migrate.bash")
		if err := os.WriteFile(script, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := exec.Command(bash, "-c", `source "$1" && complete -p bifrost-migrate`, "bash", script).CombinedOutput()
		if err != nil || !strings.Contains(string(got), "bifrost-migrate") {
			t.Errorf("sourcing the bash script: %v\n%s", err, got)
		}
	}
	f, _, errOut := newTestFactory(nil)
	if code := Execute(context.Background(), f, []string{"completion", "tcsh"}); code != ExitUsage {
		t.Errorf("completion tcsh: exit %d, want 2: %s", code, errOut)
	}
}

// The enum flags complete their values, --tables the tables not given
// yet, --since the migration's start and now, and none of them file
// names.
func TestCompletionValues(t *testing.T) {
	noFiles := ":4"
	for _, c := range []struct {
		args      []string
		want      []string
		directive string
	}{
		{[]string{"run", "--output", ""}, []string{"text", "json"}, noFiles},
		{[]string{"--output", ""}, []string{"text", "json"}, noFiles},
		{[]string{"run", "--execution-ttl", ""}, []string{"remaining", "full", "none"}, noFiles},
		{[]string{"verify", "--execution-ttl", ""}, []string{"remaining", "full", "none"}, noFiles},
		{[]string{"replay", "--execution-ttl", ""}, []string{"remaining", "full", "none"}, noFiles},
		{[]string{"reverse", "--execution-ttl", ""}, []string{"remaining", "full", "none"}, noFiles},
		{[]string{"run", "--relationships", ""}, []string{"keep", "migrate"}, noFiles},
		{[]string{"verify", "--relationships", ""}, []string{"keep", "migrate"}, noFiles},
		{[]string{"run", "--tables", ""}, []string{"Config", "Entities", "Relationships"}, ":6"},
		{[]string{"verify", "--tables", "Entities,"}, []string{"Entities,Config", "Entities,Relationships"}, ":6"},
		{[]string{"run", "--state-dir", ""}, nil, ":16"},
	} {
		got, directive := completeValues(t, c.args...)
		if !slices.Equal(got, c.want) || directive != c.directive {
			t.Errorf("%v: %q %s, want %q %s", c.args, got, directive, c.want, c.directive)
		}
	}

	// --since: the start of the run saved in --state-dir, then now (the
	// factory's clock); without a state, now only.
	dir := t.TempDir()
	state := `{"version":2,"runId":"r-20261120","fingerprint":"f","started":"2026-11-20T14:00:00.123+01:00","updated":"2026-11-20T15:00:00+01:00","tables":[{"table":"Config"}]}`
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC).Format(time.RFC3339)
	for _, cmd := range []string{"replay", "reverse"} {
		got, directive := completeValues(t, cmd, "--state-dir", dir, "--since", "")
		if want := []string{"2026-11-20T13:00:00Z", now}; !slices.Equal(got, want) || directive != noFiles {
			t.Errorf("%s --since: %q %s, want %q %s", cmd, got, directive, want, noFiles)
		}
		got, _ = completeValues(t, cmd, "--state-dir", t.TempDir(), "--since", "")
		if want := []string{now}; !slices.Equal(got, want) {
			t.Errorf("%s --since without a state: %q, want %q", cmd, got, want)
		}
	}
}

// bashCompletionPackage is where Debian's bash-completion package puts
// the functions cobra's bash script calls (_get_comp_words_by_ref).
const bashCompletionPackage = "/usr/share/bash-completion/bash_completion"

// The bash script completes in a bash that loaded the bash-completion
// package, as docs/install.md says it must: a command, and the values of
// --execution-ttl; without the package it fails as docs/install.md says
// (`_get_comp_words_by_ref: command not found`).
func TestBashCompletionNeedsTheBashCompletionPackage(t *testing.T) {
	if _, err := os.Stat(bashCompletionPackage); err != nil {
		t.Skipf("%s: install the bash-completion package (Debian: apt-get install bash-completion) to run this test", err)
	}
	bin := testenv.Build(t)
	complete := `[ "$1" = with ] && . ` + bashCompletionPackage + `
source <(bifrost-migrate completion bash)
COMP_WORDS=(bifrost-migrate st); COMP_CWORD=1; COMP_LINE="bifrost-migrate st"; COMP_POINT=${#COMP_LINE}
err=$(mktemp)
__start_bifrost-migrate bifrost-migrate st bifrost-migrate 2>"$err"
grep -o '_get_comp_words_by_ref: command not found' "$err" | head -1
rm -f "$err"
echo "commands: ${COMPREPLY[*]}"
COMP_WORDS=(bifrost-migrate run --execution-ttl ""); COMP_CWORD=3; COMP_LINE="bifrost-migrate run --execution-ttl "; COMP_POINT=${#COMP_LINE}
__start_bifrost-migrate bifrost-migrate "" --execution-ttl 2>/dev/null
echo "ttl: ${COMPREPLY[*]}"`
	run := func(with string) string {
		c := exec.Command("bash", "-c", complete, "bash", with)
		c.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v\n%s", err, out)
		}
		return string(out)
	}
	if got, want := run("with"), "commands: status\nttl: remaining full none\n"; got != want {
		t.Errorf("with bash-completion: got\n%s\nwant\n%s", got, want)
	}
	if got := run("without"); !strings.HasPrefix(got, "_get_comp_words_by_ref: command not found\n") {
		t.Errorf("without bash-completion: got\n%s\nwant the error docs/install.md quotes", got)
	}
}
