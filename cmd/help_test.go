package cmd

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/bifrost/bifrost-migrate/internal/version"
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

// helpOf returns the help of the command line args (--help added).
func helpOf(t *testing.T, args ...string) string {
	t.Helper()
	f, out, errOut := newTestFactory(nil)
	if code := Execute(context.Background(), f, append(args, "--help")); code != ExitOK {
		t.Fatalf("%v --help: exit %d: %s", args, code, errOut)
	}
	return out.String()
}

// Each command's help lists only the flags it uses: version, completion
// and its shells none of the connection or throughput flags; status the
// connection flags as those of --check; run all of them.
func TestHelpListsOnlyTheFlagsACommandUses(t *testing.T) {
	connectionFlags := []string{"tables-connection", "tables-endpoint", "blob-connection", "blob-endpoint", "cosmos-connection", "cosmos-endpoint", "database"}
	for _, args := range [][]string{{"version"}, {"completion"}, {"completion", "bash"}, {"completion", "zsh"}} {
		help := helpOf(t, args...)
		for _, name := range append(slices.Clone(connectionFlags), "retry-timeout", "quiet", "verbose", "log-file") {
			if strings.Contains(help, "\n      --"+name+" ") {
				t.Errorf("%v --help lists --%s, which it does not use:\n%s", args, name, help)
			}
		}
		if strings.Contains(help, "Connection flags") || strings.Contains(help, "Throughput flags") {
			t.Errorf("%v --help has a group of flags it does not use:\n%s", args, help)
		}
	}
	if help := helpOf(t, "version"); !strings.Contains(help, "\nOutput flags:\n      --output string ") {
		t.Errorf("version --help does not list --output, which it uses:\n%s", help)
	}
	if help := helpOf(t, "status"); !strings.Contains(help, "\nConnection flags, with --check (") || !strings.Contains(help, "\n      --cosmos-connection string ") {
		t.Errorf("status --help does not list the connection flags as those of --check:\n%s", help)
	}
	if help := helpOf(t, "fixtures", "load"); strings.Contains(help, "--cosmos-connection") || !strings.Contains(help, "--tables-connection") {
		t.Errorf("fixtures load --help: want the storage connection flags and not Cosmos DB's:\n%s", help)
	}
	help := helpOf(t, "run")
	for _, name := range append(slices.Clone(connectionFlags), "retry-timeout", "quiet", "verbose", "log-file", "output") {
		if !strings.Contains(help, "\n      --"+name+" ") {
			t.Errorf("run --help does not list --%s:\n%s", name, help)
		}
	}
}

// The help's "Learn more" names the docs of the running build: at its
// tag, else its commit.
func TestDocsAt(t *testing.T) {
	const repo = "in the bifrost-migrate repository at "
	for _, c := range []struct {
		v    version.Info
		want string
	}{
		{version.Info{Version: "v1.2.0", Revision: "0123456789abcdef"}, repo + "tag v1.2.0"},
		{version.Info{Version: "v1.2.0-rc.1"}, repo + "tag v1.2.0-rc.1"},
		{version.Info{Version: "v1.2.0", Revision: "0123456789abcdef", Modified: true}, repo + "commit 0123456789ab"},
		{version.Info{Version: "v0.0.0-20261120140000-0123456789ab", Revision: "0123456789abcdef"}, repo + "commit 0123456789ab"},
		{version.Info{Version: "(devel)", Revision: "0123456789abcdef"}, repo + "commit 0123456789ab"},
		{version.Info{Version: "(devel)"}, repo + "the commit `bifrost-migrate version` names"},
	} {
		if got := docsAt(c.v); got != c.want {
			t.Errorf("%+v: %q, want %q", c.v, got, c.want)
		}
	}
}
