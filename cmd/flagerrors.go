package cmd

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagError is every command's flag error function (cobra's
// SetFlagErrorFunc): the flag parser's error, wrapped once into a usage
// error whose sentence an operator reads (the flag and the form it
// wants, no parser or Go type in it), a mistyped flag with a suggestion.
// On the root, an argument before the flag is a mistyped command, which
// is said first (`verfy --sample 0.1`: verfy is no command, and so
// --sample is no flag of it).
func flagError(c *cobra.Command, err error) error {
	if !c.HasParent() {
		if aerr := rootArgs(c, c.Flags().Args()); aerr != nil {
			return UsageError(aerr)
		}
	}
	return UsageError(errors.New(flagSentence(c, err)))
}

// flagSentence words the parser's error err for command c, by its type
// (pflag's InvalidValueError, ValueRequiredError, NotExistError); any
// other (a shorthand, bad syntax) keeps the parser's own text.
func flagSentence(c *cobra.Command, err error) string {
	var (
		invalid *pflag.InvalidValueError
		needs   *pflag.ValueRequiredError
		unknown *pflag.NotExistError
	)
	switch {
	case errors.As(err, &invalid):
		f := invalid.GetFlag()
		return badValue("--"+f.Name, invalid.GetValue(), valueForm(f)).Error()
	case errors.As(err, &needs) && needs.GetSpecifiedShortnames() == "":
		return needsValue(needs.GetFlag())
	case errors.As(err, &unknown) && unknown.GetSpecifiedShortnames() == "":
		name := unknown.GetSpecifiedName()
		if s := suggestFlag(c, name); s != "" {
			return fmt.Sprintf("unknown flag --%s; did you mean --%s?", name, s)
		}
		return "unknown flag --" + name
	}
	return err.Error()
}

// needsValue says that flag f was given without its value, and what the
// value looks like.
func needsValue(f *pflag.Flag) string {
	if form := valueForm(f); form != "a value it takes" {
		return fmt.Sprintf("--%s needs a value: %s", f.Name, form)
	}
	if name, _ := pflag.UnquoteUsage(f); name != "" && name != "string" {
		return fmt.Sprintf("--%s needs a value (%s)", f.Name, name)
	}
	return fmt.Sprintf("--%s needs a value", f.Name)
}

// usageArgs is check, cobra's check of a command's arguments, with its
// error wrapped once into a usage error (exit 2): cobra's own are plain
// errors ("unknown command …", "accepts 1 arg(s) …").
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if err := check(c, args); err != nil {
			return UsageError(err)
		}
		return nil
	}
}

// rootArgs is the root command's check of its arguments, as cobra's own
// for a root with subcommands: an argument is a command it does not
// know, said with cobra's suggestions (setUsageErrors makes it a usage
// error).
func rootArgs(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + joinOr(s) + "?"
	}
	return errors.New(msg)
}

// valueForm says what a flag's values look like ("a number").
func valueForm(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "float64", "float32":
		return "a number"
	case "int", "int64", "int32", "uint", "uint64", "uint32":
		return "a whole number"
	case "duration":
		return "a duration such as 90s, 10m or 1h30m"
	case "bool":
		return "true or false"
	}
	return "a value it takes"
}

// suggestFlag returns the flag of c (its own or inherited, not hidden)
// whose name is closest to name: within two edits, or name a prefix of
// it; "" when none is.
func suggestFlag(c *cobra.Command, name string) string {
	type cand struct {
		name string
		d    int
	}
	var cands []cand
	seen := map[string]bool{}
	add := func(f *pflag.Flag) {
		if f.Hidden || seen[f.Name] {
			return
		}
		seen[f.Name] = true
		d := editDistance(strings.ToLower(name), f.Name)
		if d <= 2 || (len(name) >= 3 && strings.HasPrefix(f.Name, strings.ToLower(name))) {
			cands = append(cands, cand{f.Name, d})
		}
	}
	c.Flags().VisitAll(add)
	c.InheritedFlags().VisitAll(add)
	if len(cands) == 0 {
		return ""
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].d != cands[j].d {
			return cands[i].d < cands[j].d
		}
		return cands[i].name < cands[j].name
	})
	return cands[0].name
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
