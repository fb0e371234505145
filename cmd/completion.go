package cmd

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/transform"
	"github.com/bifrost/bifrost-migrate/verify"
)

// A shell completes the values of these flags (cobra's `completion`
// command writes the scripts; `__complete` answers them). Each choice is
// "value\tdescription".
var enumCompletions = map[string][]string{
	"output": {
		"text\ttables and sentences (the default)",
		"json\tone JSON object per line on stdout",
	},
	"execution-ttl": {
		string(transform.TTLRemaining) + "\twhat is left of the 14 days (the default)",
		string(transform.TTLFull) + "\tthe full 14 days from the write",
		string(transform.TTLNone) + "\tno ttl: the container's default applies",
	},
	"relationships": {
		string(transform.RelationshipsKeep) + "\tleave them in Table Storage (the default)",
		string(transform.RelationshipsMigrate) + "\twrite each as a doc in entities",
	},
}

// addCompletions registers, on the command of root's tree that defines
// each flag, what a shell completes for it: the choices of the enum
// flags, the formats of verify's --report for --report-format (f's),
// the tables for --tables, directories for --state-dir, and for
// --since the start of the migration in the state directory and now
// (f's clock). Other flags complete file names, cobra's default.
func addCompletions(root *cobra.Command, f *Factory) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for name, choices := range enumCompletions {
			if c.LocalFlags().Lookup(name) != nil {
				_ = c.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(choices, cobra.ShellCompDirectiveNoFileComp))
			}
		}
		if c.LocalFlags().Lookup("report-format") != nil {
			_ = c.RegisterFlagCompletionFunc("report-format", cobra.FixedCompletions(formatChoices(f.reportFormats()), cobra.ShellCompDirectiveNoFileComp))
		}
		if c.LocalFlags().Lookup("tables") != nil {
			_ = c.RegisterFlagCompletionFunc("tables", completeTables)
		}
		if c.LocalFlags().Lookup("state-dir") != nil {
			_ = c.RegisterFlagCompletionFunc("state-dir", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return nil, cobra.ShellCompDirectiveFilterDirs
			})
		}
		if c.LocalFlags().Lookup("since") != nil {
			_ = c.RegisterFlagCompletionFunc("since", func(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
				dir := migrate.DefaultStateDir
				if fl := c.Flags().Lookup("state-dir"); fl != nil {
					dir = fl.Value.String()
				}
				return sinceCompletions(dir, f.Now()), cobra.ShellCompDirectiveNoFileComp
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// formatChoices are the completions of --report-format: each format's
// name, and the extensions that choose it.
func formatChoices(formats []verify.Format) []string {
	out := make([]string, len(formats))
	for i, f := range formats {
		out[i] = f.Name()
		if exts := f.Exts(); len(exts) > 0 {
			out[i] += "\tthe format of a name ending in " + joinOr(exts)
		}
	}
	return out
}

// sinceCompletions are the times --since is usually given: when the
// migration whose state is in dir started (none when there is no
// readable state.json there), and now, both in UTC to the second.
func sinceCompletions(dir string, now time.Time) []string {
	var out []string
	if st, err := migrate.LoadState(dir); err == nil && st != nil && !st.Started.IsZero() {
		out = append(out, st.Started.UTC().Format(time.RFC3339)+"\tthe start of run "+st.RunID)
	}
	return append(out, now.UTC().Format(time.RFC3339)+"\tnow")
}

// completeTables completes --tables, a comma-separated list: the tables
// not listed yet after what is typed.
func completeTables(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	typed, _ := cutLast(toComplete, ",")
	var out []string
	for _, t := range transform.Tables() {
		if strings.Contains(","+typed+",", ","+t+",") {
			continue
		}
		if typed == "" {
			out = append(out, t)
		} else {
			out = append(out, typed+","+t)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// cutLast splits s around the last sep: what is before it, and what is
// after (all of s, with "" before, when sep is absent).
func cutLast(s, sep string) (before, after string) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return "", s
	}
	return s[:i], s[i+len(sep):]
}
