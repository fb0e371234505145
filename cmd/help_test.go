package cmd

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestHelpReadsLikeGh: every command's help starts with its one-line
// description, then Usage; it has Examples whose lines run the command
// itself, its own flags before the groups, and its exit codes after them.
func TestHelpReadsLikeGh(t *testing.T) {
	f, _, _ := newTestFactory(nil)
	root := NewRootCmd(f)
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Name() == "help" || !c.IsAvailableCommand() && c.HasParent() {
			return
		}
		n++
		path := strings.Fields(c.CommandPath())[1:]
		f, out, errOut := newTestFactory(nil)
		if code := Execute(context.Background(), f, append(path, "--help")); code != ExitOK {
			t.Fatalf("%s --help: exit %d: %s", c.CommandPath(), code, errOut)
		}
		help := out.String()
		lines := strings.Split(help, "\n")
		if len(lines) < 4 || lines[0] != c.Short || lines[1] != "" || lines[2] != "Usage:" {
			t.Errorf("%s --help does not start with its description and Usage:\n%s", c.CommandPath(), strings.Join(lines[:min(4, len(lines))], "\n"))
		}
		ex := strings.Index(help, "\nExamples:\n")
		if ex < 0 || !strings.Contains(help[ex:], "  "+c.CommandPath()) {
			t.Errorf("%s --help has no Examples that run it:\n%s", c.CommandPath(), help)
		}
		flags, exits := strings.Index(help, "\nFlags:\n"), strings.Index(help, "\nExit status:\n")
		if flags < ex || (exits >= 0 && exits < flags) {
			t.Errorf("%s --help: want Examples, then Flags, then Exit status:\n%s", c.CommandPath(), help)
		}
	}
	walk(root)
	if n < 12 {
		t.Errorf("%d commands' help read, want every command's", n)
	}
}

// TestHelpListsCommandsInWorkflowOrder: init, run, verify, replay,
// reverse, then fixtures.
func TestHelpListsCommandsInWorkflowOrder(t *testing.T) {
	f, out, _ := newTestFactory(nil)
	if code := Execute(context.Background(), f, []string{"--help"}); code != ExitOK {
		t.Fatalf("--help: exit %d", code)
	}
	last := -1
	for _, name := range []string{"init", "run", "verify", "replay", "reverse", "fixtures"} {
		i := strings.Index(out.String(), "\n  "+name+" ")
		if i <= last {
			t.Errorf("%s is not listed after the commands before it in a migration:\n%s", name, out)
		}
		last = i
	}
}
