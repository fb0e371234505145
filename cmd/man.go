package cmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bifrost/bifrost-migrate/internal/version"
)

// ManOptions are the arguments and dependencies of `bifrost-migrate
// man`.
type ManOptions struct {
	IO
	// Dir is where the pages go (created if need be).
	Dir string
	// Root is the command tree to describe; Build the build it is of.
	Root  *cobra.Command
	Build version.Info
}

// NewCmdMan builds `bifrost-migrate man DIR`, hidden: it is for
// packagers and docs/install.md. runF replaces the command's work in
// tests; nil means manRun.
func NewCmdMan(f *Factory, runF func(context.Context, *ManOptions) error) *cobra.Command {
	opts := &ManOptions{}
	return &cobra.Command{
		Use:   "man DIR",
		Short: "Write a man page for every command into DIR",
		Long: `Write the manual page of every command, from the same text as its --help
(description, examples, the flags it uses in their groups, exit status),
into DIR as bifrost-migrate.1, bifrost-migrate-run.1, …, creating DIR if
need be. docs/install.md says where to put them.`,
		Example: `  bifrost-migrate man /usr/local/share/man/man1
  bifrost-migrate man ~/.local/share/man/man1`,
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.IO, opts.Dir, opts.Root, opts.Build = f.IO(), args[0], c.Root(), version.Get()
			return runWith(c, opts, runF, manRun)
		},
	}
}

// manRun writes a page for every command of opts.Root that --help
// describes (not hidden, not help) and says how many, where.
func manRun(_ context.Context, opts *ManOptions) error {
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	cmds := manCommands(opts.Root)
	for _, c := range cmds {
		path := filepath.Join(opts.Dir, manName(c)+".1")
		if err := os.WriteFile(path, []byte(manPage(c, opts.Build)), 0o644); err != nil {
			return fmt.Errorf("man pages: %w", err)
		}
	}
	_, err := fmt.Fprintf(opts.Out, "wrote %d man pages to %s (%s.1 and one per command)\n", len(cmds), opts.Dir, manName(opts.Root))
	return err
}

// manCommands are root and every command under it that --help
// describes, in the order of the help.
func manCommands(root *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{root}
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() {
			out = append(out, manCommands(c)...)
		}
	}
	return out
}

// manName is c's page name: its path with dashes (bifrost-migrate-run).
func manName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "-")
}

// manPage is c's page in roff (man(7)): what its --help says (writeHelp),
// in a man page's sections.
func manPage(c *cobra.Command, build version.Info) string {
	var b strings.Builder
	date, _, _ := strings.Cut(build.RevisionTime, "T")
	fmt.Fprintf(&b, ".TH %q 1 %q %q \"bifrost-migrate manual\"\n", strings.ToUpper(manName(c)), date, "bifrost-migrate "+build.Version)
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", roff(manName(c)), roff(c.Short))
	b.WriteString(".SH SYNOPSIS\n")
	if c.Runnable() && !c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\\fB%s\\fR%s\n", roff(c.CommandPath()), roff(strings.TrimPrefix(c.UseLine(), c.CommandPath())))
	} else {
		fmt.Fprintf(&b, "\\fB%s\\fR <command> [flags]\n", roff(c.CommandPath()))
	}
	if long := strings.TrimSpace(c.Long); long != "" {
		b.WriteString(".SH DESCRIPTION\n")
		for i, para := range strings.Split(long, "\n\n") {
			if i > 0 {
				b.WriteString(".PP\n")
			}
			b.WriteString(roffLines(para))
		}
	}
	if c.HasAvailableSubCommands() {
		b.WriteString(".SH COMMANDS\n")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				fmt.Fprintf(&b, ".TP\n\\fB%s\\fR\n%s\n", roff(sub.Name()), roff(sub.Short))
			}
		}
	}
	if ex := strings.TrimRight(c.Example, "\n "); ex != "" {
		fmt.Fprintf(&b, ".SH EXAMPLES\n.nf\n%s.fi\n", roffLines(ex))
	}
	if sections := flagSections(c); len(sections) > 0 {
		b.WriteString(".SH OPTIONS\n")
		for _, s := range sections {
			fmt.Fprintf(&b, ".SS %q\n", s.title)
			s.flags.VisitAll(func(f *pflag.Flag) { b.WriteString(manFlag(f)) })
		}
	}
	if ss := commandExitStatuses(c); ss != nil {
		b.WriteString(".SH EXIT STATUS\n")
		for _, s := range ss {
			fmt.Fprintf(&b, ".TP\n\\fB%d\\fR\n%s\n", s.code, roff(s.meaning))
		}
	}
	b.WriteString(".SH SEE ALSO\n")
	var see []string
	if c.HasParent() {
		see = append(see, "\\fB"+roff(manName(c.Parent()))+"\\fR(1)")
	}
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			see = append(see, "\\fB"+roff(manName(sub))+"\\fR(1)")
		}
	}
	if len(see) > 0 {
		b.WriteString(strings.Join(see, ", ") + "\n")
	}
	if more := learnMore(c, build); more != "" {
		if len(see) > 0 {
			b.WriteString(".PP\n")
		}
		b.WriteString(roff(more) + "\n")
	}
	return b.String()
}

// manFlag is f as a tagged paragraph: its names and value, then its
// usage and default, as --help shows them.
func manFlag(f *pflag.Flag) string {
	name, usage := pflag.UnquoteUsage(f)
	head := "\\fB\\-\\-" + roff(f.Name) + "\\fR"
	if f.Shorthand != "" {
		head = "\\fB\\-" + roff(f.Shorthand) + "\\fR, " + head
	}
	if name != "" {
		head += " \\fI" + roff(name) + "\\fR"
	}
	if d := flagDefault(f); d != "" {
		usage += " (default " + d + ")"
	}
	return ".TP\n" + head + "\n" + roff(usage) + "\n"
}

// flagDefault is f's default as --help shows it ("" when it shows none).
func flagDefault(f *pflag.Flag) string {
	switch f.DefValue {
	case "", "false", "0", "[]", "0s":
		return ""
	}
	if f.Value.Type() == "string" {
		return fmt.Sprintf("%q", f.DefValue)
	}
	return f.DefValue
}

// roffLines is text as roff lines, each escaped (roff), a leading
// indent kept.
func roffLines(text string) string {
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		b.WriteString(roff(line) + "\n")
	}
	return b.String()
}

// roffStart is what must not start a roff text line: a request (. or ').
var roffStart = regexp.MustCompile(`^[.']`)

// roff escapes s for a roff text line: backslashes, dashes (as \-, so
// that options copy as typed) and a leading control character.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	return roffStart.ReplaceAllString(s, `\&$0`)
}
