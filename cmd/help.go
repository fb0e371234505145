package cmd

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bifrost/bifrost-migrate/internal/version"
)

// Help reads as gh's does: what the command does in one line, Usage, a
// short paragraph, Examples (the lines an operator types), the flags in
// groups, the exit codes last, and where the manual says more. The long
// explanations live in docs/, not in the help.

// helpGroups are the flag groups after a command's own flags, in order;
// a flag not named here is one of the command's own ("Flags").
var helpGroups = []struct {
	title string
	names []string
}{
	{"Transform flags (verify, replay and reverse take run's from --state-dir)", []string{"execution-ttl", "blob-threshold", "relationships", "strict"}},
	{"Throughput flags", []string{"max-ru", "concurrency", "retry-timeout"}},
	{"Output flags", []string{"output", "quiet", "verbose", "log-file", "progress-interval", "metrics-addr"}},
	{connectionGroup, connectionFlags},
}

// connectionFlags are the flags that say where the accounts are.
var connectionFlags = []string{"tables-connection", "tables-endpoint", "blob-connection",
	"blob-endpoint", "cosmos-connection", "cosmos-endpoint", "database"}

// connectionGroup is the title of the connection flags.
const connectionGroup = "Connection flags (a connection string, or an endpoint for Microsoft Entra ID; or [$VARIABLE])"

// groupNotes say, by command, when it uses a group of flags it does not
// always use: it follows the group's first words in the title.
var groupNotes = map[string]map[string]string{
	"status": {connectionGroup: "with --check"},
}

// rootFlagsUsed names, by command (its path after "bifrost-migrate"),
// the flags of root it uses when it does not use them all: its help
// lists only those. A subcommand not named takes its parent's.
var rootFlagsUsed = map[string][]string{
	"version":    {"output"},
	"completion": {},
	"man":        {},
	// The connection flags only with --check (its help says so).
	"status":   append([]string{"output", "quiet", "verbose", "log-file", "retry-timeout"}, connectionFlags...),
	"fixtures": {"output", "quiet", "verbose", "log-file", "retry-timeout", "tables-connection", "tables-endpoint", "blob-connection", "blob-endpoint"},
}

// usesRootFlag reports whether c uses root's flag name (rootFlagsUsed).
func usesRootFlag(c *cobra.Command, name string) bool {
	for p := c; p.HasParent(); p = p.Parent() {
		if names, ok := rootFlagsUsed[strings.TrimPrefix(p.CommandPath(), p.Root().Name()+" ")]; ok {
			return slices.Contains(names, name)
		}
	}
	return true
}

// helpDocs names the page of docs/ that says more about each command.
var helpDocs = map[string]string{
	"init":    "docs/operations.md (1. Provision) and init/README.md",
	"run":     "docs/operations.md",
	"verify":  "docs/operations.md (verify) and docs/access-patterns.md",
	"replay":  "docs/rollback.md",
	"reverse": "docs/rollback.md",
	"status":  "docs/operations.md (Where it stands: status)",
	"version": "docs/install.md",
	// completion and its shells: what each shell needs.
	"completion": "docs/install.md (Shell completion)",
	"bash":       "docs/install.md (Shell completion)",
	"zsh":        "docs/install.md (Shell completion)",
	"fish":       "docs/install.md (Shell completion)",
	"powershell": "docs/install.md (Shell completion)",
	"fixtures":   "docs/operations.md (a local rehearsal)",
	"load":       "docs/operations.md (a local rehearsal)",
}

// writeHelp writes the help of c (every command's help function).
func writeHelp(w io.Writer, c *cobra.Command) {
	fmt.Fprintf(w, "%s\n\nUsage:\n", strings.TrimSpace(c.Short))
	if c.Runnable() && !c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "  %s\n", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "  %s <command> [flags]\n", c.CommandPath())
	}
	if long := strings.TrimSpace(c.Long); long != "" {
		fmt.Fprintf(w, "\n%s\n", long)
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintln(w, "\nCommands:")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(w, "  %-12s %s\n", sub.Name(), sub.Short)
			}
		}
	}
	if ex := strings.TrimRight(c.Example, "\n "); ex != "" {
		fmt.Fprintf(w, "\nExamples:\n%s\n", ex)
	}
	writeFlagGroups(w, c)
	if ss := commandExitStatuses(c); ss != nil {
		fmt.Fprintln(w, exitStatusHelp(ss))
	}
	if more := learnMore(c, version.Get()); more != "" {
		fmt.Fprintf(w, "\nLearn more: %s\n", more)
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\nUse \"%s <command> --help\" for more about a command.\n", c.CommandPath())
	}
}

// commandExitStatuses are the exit codes c's help lists: its own, or
// for a command that runs and has none of its own, root's; nil for a
// group of commands that does not run.
func commandExitStatuses(c *cobra.Command) []exitStatus {
	ss, ok := exitStatuses(c.CommandPath())
	switch {
	case ok:
		return ss
	case c.Runnable():
		ss, _ = exitStatuses(c.Root().CommandPath())
		return ss
	}
	return nil
}

// learnMore is where the docs of build say more about c: its page
// (helpDocs) in the repository at the build's tag or commit; "" when
// none does.
func learnMore(c *cobra.Command, build version.Info) string {
	if doc, ok := helpDocs[c.Name()]; ok {
		return doc + ", " + docsAt(build)
	}
	if !c.HasParent() {
		return "README.md and docs/ (one page per question), " + docsAt(build)
	}
	return ""
}

// docsAt says where the docs of build i are: in the repository at the
// tag of its version, or at its commit (a pseudo-version, a build with
// changes not committed, a build from a checkout).
func docsAt(i version.Info) string {
	const repo = "in the bifrost-migrate repository"
	switch {
	case semverTag.MatchString(i.Version) && !pseudoVersion.MatchString(i.Version) && !i.Modified:
		return repo + " at tag " + i.Version
	case i.Revision != "":
		return repo + " at commit " + i.Revision[:min(12, len(i.Revision))]
	}
	return repo + " at the commit `bifrost-migrate version` names"
}

// semverTag is a release's version (v1.2.0, v1.2.0-rc.1); pseudoVersion
// the Go pseudo-version of a commit without a tag
// (v0.0.0-20261120140000-0123456789ab).
var (
	semverTag     = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)
	pseudoVersion = regexp.MustCompile(`[0-9]{14}-[0-9a-f]{12}$`)
)

// flagSection is one group of a command's flags in its help: "Flags"
// (its own), or one of helpGroups.
type flagSection struct {
	title string
	flags *pflag.FlagSet
}

// flagSections are c's flags in the sections its help lists them in:
// its own first ("Flags"), then each of helpGroups that holds one of
// them; hidden flags, and root's flags c does not use (rootFlagsUsed),
// are left out. The man pages list the same.
func flagSections(c *cobra.Command) []flagSection {
	grouped := map[string]bool{}
	for _, g := range helpGroups {
		for _, n := range g.names {
			grouped[n] = true
		}
	}
	var all []*pflag.Flag
	seen := map[string]bool{}
	add := func(f *pflag.Flag) {
		if !f.Hidden && !seen[f.Name] {
			seen[f.Name] = true
			all = append(all, f)
		}
	}
	c.LocalFlags().VisitAll(add)
	c.InheritedFlags().VisitAll(func(f *pflag.Flag) {
		if usesRootFlag(c, f.Name) {
			add(f)
		}
	})
	var out []flagSection
	section := func(title string, keep func(*pflag.Flag) bool) {
		fs := pflag.NewFlagSet(title, pflag.ContinueOnError)
		for _, f := range all {
			if keep(f) {
				fs.AddFlag(f)
			}
		}
		if fs.HasFlags() {
			out = append(out, flagSection{title, fs})
		}
	}
	section("Flags", func(f *pflag.Flag) bool { return !grouped[f.Name] })
	for _, g := range helpGroups {
		title := g.title
		if note := groupNotes[c.Name()][g.title]; note != "" {
			head, rest, _ := strings.Cut(title, " (")
			title = head + ", " + note + " (" + rest
		}
		section(title, func(f *pflag.Flag) bool { return slices.Contains(g.names, f.Name) })
	}
	return out
}

// writeFlagGroups writes c's flags in their sections (flagSections).
func writeFlagGroups(w io.Writer, c *cobra.Command) {
	for _, s := range flagSections(c) {
		fmt.Fprintf(w, "\n%s:\n%s", s.title, s.flags.FlagUsagesWrapped(100))
	}
}
