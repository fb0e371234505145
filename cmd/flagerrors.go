package cmd

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagError is every command's flag error function: the flag parser's
// error as a sentence an operator reads (the flag and the form it wants,
// no parser or Go type in it), a suggestion for a mistyped flag, as a
// usage error.
func flagError(c *cobra.Command, err error) error {
	return UsageError(errors.New(flagSentence(c, err.Error())))
}

var (
	// invalidValue is pflag's error for a value its type refuses:
	// `invalid argument "abc" for "--max-ru" flag: strconv.ParseFloat: …`.
	invalidValue = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-\w, )?--([^"]+)" flag: `)
	unknownFlag  = regexp.MustCompile(`^unknown flag: --(\S+)$`)
	needsValue   = regexp.MustCompile(`^flag needs an argument: --(\S+)$`)
)

// flagSentence rewrites the parser's message msg for command c.
func flagSentence(c *cobra.Command, msg string) string {
	if m := invalidValue.FindStringSubmatch(msg); m != nil {
		value, name, form := m[1], m[2], "a value it takes"
		// pflag quoted the value with %q: say it as given.
		if v, err := strconv.Unquote(`"` + value + `"`); err == nil {
			value = v
		}
		if f := c.Flags().Lookup(name); f != nil {
			form = valueForm(f)
		}
		return badValue("--"+name, value, form).Error()
	}
	if m := needsValue.FindStringSubmatch(msg); m != nil {
		if f := c.Flags().Lookup(m[1]); f != nil {
			if form := valueForm(f); form != "a value it takes" {
				return fmt.Sprintf("--%s needs a value: %s", m[1], form)
			}
			if name, _ := pflag.UnquoteUsage(f); name != "" && name != "string" {
				return fmt.Sprintf("--%s needs a value (%s)", m[1], name)
			}
			return fmt.Sprintf("--%s needs a value", m[1])
		}
	}
	if m := unknownFlag.FindStringSubmatch(msg); m != nil {
		if s := suggestFlag(c, m[1]); s != "" {
			return fmt.Sprintf("unknown flag --%s; did you mean --%s?", m[1], s)
		}
		return "unknown flag --" + m[1]
	}
	return msg
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
