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
