package cmd

import (
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/bifrost/bifrost-migrate/internal/ui"
)

// IO is what every command's options embed: where its output goes, in
// which form, and its clock (cli/cli's IOStreams). Factory.IO fills it;
// tests fill it with buffers and a fixed clock. A copy is as good as the
// original.
type IO struct {
	// Out gets the data: summaries, reports, plans; with --output json,
	// every line (ui.Output).
	Out io.Writer
	// ErrOut gets status lines and progress bars (text), and the error.
	ErrOut io.Writer
	// JSON is --output json; Quiet is --quiet.
	JSON, Quiet bool
	// ErrIsTerminal says whether ErrOut is a terminal (the progress
	// bar), ErrWidth its columns now (nil or 0: 80).
	ErrIsTerminal bool
	ErrWidth      func() int
	Now           func() time.Time
	// log is --log-file (nil without it): status lines, warnings and
	// progress lines go there too.
	log *ui.LogFile
}

// IO returns the streams, the output flags and the clock of f.
func (f *Factory) IO() IO {
	return IO{
		Out: f.Out, ErrOut: f.ErrOut,
		JSON: f.Global.JSON(), Quiet: f.Global.Quiet,
		ErrIsTerminal: f.ErrIsTerminal != nil && f.ErrIsTerminal(),
		ErrWidth:      f.ErrWidth,
		Now:           f.Now,
		log:           f.log,
	}
}

// output returns the output of the command name through s.
func (s IO) output(name string) *ui.Output {
	return ui.NewOutput(name, s.Out, s.ErrOut, s.JSON, s.Quiet, s.log)
}

// runWith does a command's work with opts: runF when a test gave one,
// else run.
func runWith[O any](c *cobra.Command, opts O, runF, run func(context.Context, O) error) error {
	if runF != nil {
		return runF(c.Context(), opts)
	}
	return run(c.Context(), opts)
}

// cmdDoc is the help of a command: its usage line, its one-line
// summary, a short paragraph and the command lines of its examples
// (help.go).
type cmdDoc struct {
	use, short, long, example string
}

// newCommand returns the command doc describes: it takes no arguments
// and, once its flags are parsed and valid (addFlags), does run.
func newCommand(doc cmdDoc, run func(c *cobra.Command) error) *cobra.Command {
	return &cobra.Command{
		Use: doc.use, Short: doc.short, Long: doc.long, Example: doc.example,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return run(c) },
	}
}
