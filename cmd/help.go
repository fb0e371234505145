package cmd

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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
	{"Connection flags (or their environment variables)", []string{"tables-connection", "tables-endpoint", "blob-connection",
		"blob-endpoint", "cosmos-connection", "cosmos-endpoint", "database"}},
}

// helpDocs names the page of docs/ that says more about each command.
var helpDocs = map[string]string{
	"init":     "docs/operations.md (1. Provision) and init/README.md",
	"run":      "docs/operations.md",
	"verify":   "docs/operations.md (verify) and docs/access-patterns.md",
	"replay":   "docs/rollback.md",
	"reverse":  "docs/rollback.md",
	"status":   "docs/operations.md (Where it stands: status)",
	"fixtures": "docs/operations.md (a local rehearsal)",
	"load":     "docs/operations.md (a local rehearsal)",
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
	if ss, ok := exitStatuses(c.CommandPath()); ok || c.Runnable() {
		if !ok {
			ss, _ = exitStatuses(c.Root().CommandPath())
		}
		fmt.Fprintln(w, exitStatusHelp(ss))
	}
	if doc, ok := helpDocs[c.Name()]; ok {
		fmt.Fprintf(w, "\nLearn more: %s\n", doc)
	} else if !c.HasParent() {
		fmt.Fprintln(w, "\nLearn more: README.md, and docs/ (one page per question)")
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\nUse \"%s <command> --help\" for more about a command.\n", c.CommandPath())
	}
}

// writeFlagGroups writes c's flags, its own and inherited: its own first
// ("Flags"), then each of helpGroups that holds one of them.
func writeFlagGroups(w io.Writer, c *cobra.Command) {
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
	c.InheritedFlags().VisitAll(add)
	section := func(title string, keep func(*pflag.Flag) bool) {
		fs := pflag.NewFlagSet(title, pflag.ContinueOnError)
		for _, f := range all {
			if keep(f) {
				fs.AddFlag(f)
			}
		}
		if fs.HasFlags() {
			fmt.Fprintf(w, "\n%s:\n%s", title, fs.FlagUsagesWrapped(100))
		}
	}
	section("Flags", func(f *pflag.Flag) bool { return !grouped[f.Name] })
	for _, g := range helpGroups {
		section(g.title, func(f *pflag.Flag) bool { return slices.Contains(g.names, f.Name) })
	}
}
