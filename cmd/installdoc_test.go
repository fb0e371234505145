package cmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// markdownSection returns the text of md's section "## title", up to the
// next "## " heading; "" when md has none.
func markdownSection(md, title string) string {
	_, rest, ok := strings.Cut(md, "\n## "+title+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// shellCommands returns the commands of the fenced code blocks of md,
// each as its words: a line is cut at its comment and split at " && "
// (a subshell's parentheses dropped), as the shell would run it.
func shellCommands(t *testing.T, md string) [][]string {
	t.Helper()
	var out [][]string
	inBlock := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			continue
		}
		for _, part := range strings.Split(line, " && ") {
			words, err := shellWords(strings.Trim(strings.TrimSpace(part), "()"))
			if err != nil {
				t.Errorf("%v: %s", err, line)
				continue
			}
			if len(words) > 0 {
				out = append(out, words)
			}
		}
	}
	return out
}

// installCheck checks the README's install commands in order, each by
// what it runs; it keeps what the commands before made.
type installCheck struct {
	t *testing.T
	// bin is the binary `go build` or `go install` made; tmp where the
	// commands build into.
	bin, tmp string
	// named is what the help of the scripts run so far says they make
	// (a folder, a file, an image): a later command may use it.
	named string
}

// check checks one command: the scripts, paths, flags and commands it
// names exist, and the cheap ones run (go build and go install into a
// temporary folder, bifrost-migrate version).
func (c *installCheck) check(words []string) {
	t := c.t
	switch name, args := words[0], words[1:]; {
	case name == "go":
		c.goBuild(args)
	case name == "bifrost-migrate":
		c.bifrostMigrate(args)
	case strings.HasPrefix(name, "scripts/"):
		c.script(name, args)
	case name == "cd", name == "sha256sum":
		if _, err := exec.LookPath(name); err != nil && name != "cd" {
			t.Errorf("%s: not found on this machine: %v", name, err)
		}
		for _, a := range args {
			if a == "-c" {
				continue
			}
			if !c.made(a) {
				t.Errorf("%s %s: %s is neither in the repository nor made by a script before it", name, strings.Join(args, " "), a)
			}
		}
	case name == "podman" || name == "docker":
		i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "bifrost-migrate:") })
		if len(args) == 0 || args[0] != "run" || i < 0 || !c.made(args[i]) {
			t.Errorf("%s %s: want `run` of the image scripts/image.sh makes", name, strings.Join(args, " "))
			return
		}
		c.bifrostMigrate(args[i+1:])
	default:
		t.Errorf("the README's install commands run %s, which this test does not know: add a check for it", strings.Join(words, " "))
	}
}

// goBuild runs `go build` or `go install` of a package of the
// repository, into c.tmp.
func (c *installCheck) goBuild(args []string) {
	t := c.t
	if len(args) < 2 || (args[0] != "build" && args[0] != "install") || args[len(args)-1] != "." {
		t.Errorf("go %s: want go build or go install of the clone (.), not a module path", strings.Join(args, " "))
		return
	}
	run := slices.Clone(args)
	out := filepath.Join(c.tmp, "gobin", "bifrost-migrate")
	if runtime.GOOS == "windows" {
		out += ".exe"
	}
	if i := slices.Index(run, "-o"); i >= 0 && i+1 < len(run) {
		out = filepath.Join(c.tmp, run[i+1])
		run[i+1] = out
	}
	cmd := exec.Command("go", run...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOBIN="+filepath.Dir(out))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, b)
		return
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("go %s made no %s: %v", strings.Join(args, " "), filepath.Base(out), err)
		return
	}
	c.bin = out
}

// bifrostMigrate parses a bifrost-migrate command line as the tool does
// and, for version and --version, runs it with the binary built before.
func (c *installCheck) bifrostMigrate(args []string) {
	t := c.t
	if !slices.Equal(args, []string{"--version"}) {
		if err := checkCommandLine(args); err != nil {
			t.Errorf("bifrost-migrate %s: %v", strings.Join(args, " "), err)
			return
		}
	}
	if c.bin == "" || !(slices.Equal(args, []string{"version"}) || slices.Equal(args, []string{"--version"})) {
		return
	}
	code, out, errOut := runBinary(t, c.bin, os.Environ(), args...)
	if code != 0 || !strings.HasPrefix(out, "bifrost-migrate ") {
		t.Errorf("bifrost-migrate %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
}

// script checks that the script exists and runs, that its help names
// every flag it is given, and keeps its help for the commands after it.
func (c *installCheck) script(name string, args []string) {
	t := c.t
	path := filepath.Join("..", filepath.FromSlash(name))
	if st, err := os.Stat(path); err != nil || st.Mode()&0o111 == 0 {
		t.Errorf("%s: not an executable script of the repository (%v)", name, err)
		return
	}
	// From the repository's root, as the README runs it.
	cmd := exec.Command(name, "--help")
	cmd.Dir = ".."
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("%s --help: %v\n%s", name, err, b)
		return
	}
	help := string(b)
	for _, a := range args {
		flag, _, _ := strings.Cut(a, "=")
		if strings.HasPrefix(flag, "-") && !strings.Contains(help, flag) {
			t.Errorf("%s %s: its help does not name %s", name, strings.Join(args, " "), flag)
		}
	}
	c.named += help
}

// made reports whether path is in the repository or named by the help
// of a script run before (dist, SHA256SUMS, the image's tag).
func (c *installCheck) made(path string) bool {
	if _, err := os.Stat(filepath.Join("..", filepath.FromSlash(path))); err == nil {
		return true
	}
	return strings.Contains(c.named, path)
}

// The README's install commands are true as written for someone holding
// this repository: go install and go build of the clone run (into a
// temporary folder), the binary they make prints its version, the
// scripts exist and their help names the flags given and what the
// commands after them use (dist, SHA256SUMS, the image), and nothing
// points outside the repository (no module path, no URL).
func TestReadmeInstallCommands(t *testing.T) {
	md, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	install := markdownSection(string(md), "Install")
	for _, outside := range []string{"://", "@latest", "@v", "github.com/"} {
		if strings.Contains(install, outside) {
			t.Errorf("the README's Install section names %q: it must not send a reader outside the repository", outside)
		}
	}
	cmds := shellCommands(t, install)
	c := &installCheck{t: t, tmp: t.TempDir()}
	var ran []string
	for _, words := range cmds {
		c.check(words)
		ran = append(ran, words[0])
	}
	for _, want := range []string{"go", "bifrost-migrate", "scripts/release.sh", "sha256sum", "scripts/image.sh"} {
		if !slices.Contains(ran, want) {
			t.Errorf("the README's install commands do not run %s: %v", want, ran)
		}
	}
	if c.bin == "" {
		t.Error("no install command built a binary")
	}
}
