package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/internal/version"
)

// VersionOptions are the dependencies of `bifrost-migrate version`.
type VersionOptions struct {
	IO
	// Build is the build to describe (version.Get() outside tests).
	Build version.Info
}

// NewCmdVersion builds `bifrost-migrate version`. runF replaces the
// command's work in tests; nil means versionRun.
func NewCmdVersion(f *Factory, runF func(context.Context, *VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{}
	return newCommand(versionDoc, func(c *cobra.Command) error {
		opts.IO, opts.Build = f.IO(), version.Get()
		return runWith(c, opts, runF, versionRun)
	})
}

// versionRun prints the build: three lines of text, or with --output json
// one summary line whose toolVersion is the version (as in every
// summary) and whose other fields are the rest of version.Info.
func versionRun(_ context.Context, opts *VersionOptions) error {
	if opts.JSON {
		b := opts.Build
		return ui.NewJSONLines(opts.Out).Emit(ui.LineSummary, struct {
			Revision     string `json:"revision"`
			RevisionTime string `json:"revisionTime"`
			Modified     bool   `json:"modified"`
			Go           string `json:"go"`
			OS           string `json:"os"`
			Arch         string `json:"arch"`
		}{b.Revision, b.RevisionTime, b.Modified, b.Go, b.OS, b.Arch})
	}
	_, err := fmt.Fprint(opts.Out, opts.Build.Text())
	return err
}

// versionDoc is the help of `bifrost-migrate version`.
var versionDoc = cmdDoc{
	use:   "version",
	short: "Print the version, the revision it was built from and the Go version",
	long: `Print which build this is: its version, the VCS revision and its time
("modified" when the tree had uncommitted changes), the Go version and the
platform; --version prints the same. The version also goes into
state.json, the --log-file header, verify's --report and every JSON
summary, as "toolVersion".`,
	example: `  bifrost-migrate version
  bifrost-migrate --output json version`,
}
