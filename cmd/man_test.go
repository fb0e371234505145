package cmd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// `man DIR` writes one page per command --help describes, each naming
// the command, its flags as its help lists them, and its exit codes; man
// renders each (when it is installed).
func TestManWritesAPagePerCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man1")
	f, out, errOut := newTestFactory(nil)
	if code := Execute(context.Background(), f, []string{"man", dir}); code != ExitOK {
		t.Fatalf("man: exit %d: %s", code, errOut)
	}
	f, _, _ = newTestFactory(nil)
	var want []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		want = append(want, c)
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				walk(sub)
			}
		}
	}
	walk(NewRootCmd(f))
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(want) || len(want) < 14 {
		t.Errorf("%d pages for %d commands", len(files), len(want))
	}
	if !strings.HasPrefix(out.String(), fmt.Sprintf("wrote %d man pages to %s", len(want), dir)) {
		t.Errorf("man printed %q", out)
	}
	manCmd, _ := exec.LookPath("man")
	for _, c := range want {
		name := strings.ReplaceAll(c.CommandPath(), " ", "-")
		raw, err := os.ReadFile(filepath.Join(dir, name+".1"))
		if err != nil {
			t.Errorf("%s: no page: %v", c.CommandPath(), err)
			continue
		}
		page := string(raw)
		if !strings.HasPrefix(page, `.TH "`+strings.ToUpper(name)+`" 1 `) || !strings.Contains(page, ".SH NAME\n"+roff(name)+` \- `) {
			t.Errorf("%s: the page does not start with its title and name:\n%.200s", c.CommandPath(), page)
		}
		for _, s := range flagSections(c) {
			s.flags.VisitAll(func(fl *pflag.Flag) {
				if !strings.Contains(page, `\fB\-\-`+roff(fl.Name)+`\fR`) {
					t.Errorf("%s: the page does not name --%s", c.CommandPath(), fl.Name)
				}
			})
		}
		if ss := commandExitStatuses(c); len(ss) > 0 && !strings.Contains(page, ".SH EXIT STATUS\n.TP\n\\fB0\\fR\n") {
			t.Errorf("%s: no exit status section", c.CommandPath())
		}
		if manCmd == "" {
			continue
		}
		cmd := exec.Command(manCmd, "-l", filepath.Join(dir, name+".1"))
		cmd.Env = append(os.Environ(), "MANWIDTH=80", "MAN_KEEP_FORMATTING=0")
		text, err := cmd.Output()
		if err != nil || !strings.Contains(string(text), c.CommandPath()) {
			t.Errorf("%s: man -l: %v\n%s", c.CommandPath(), err, text)
		}
	}
	if page, _ := os.ReadFile(filepath.Join(dir, "bifrost-migrate-version.1")); strings.Contains(string(page), `\-\-tables\-connection`) {
		t.Errorf("the version page lists the connection flags:\n%s", page)
	}
}
