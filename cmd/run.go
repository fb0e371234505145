package cmd

import (
	"context"

	"github.com/spf13/cobra"
)

// RunOptions are the flags of `bifrost-migrate run`.
type RunOptions struct{}

// NewCmdRun builds `bifrost-migrate run`. runF replaces the command's
// work in tests; nil means runRun.
func NewCmdRun(f *Factory, runF func(context.Context, *RunOptions) error) *cobra.Command {
	opts := &RunOptions{}
	return &cobra.Command{
		Use:   "run",
		Short: "Stream the tables into Cosmos DB (resumable) (not implemented yet)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runRun(c.Context(), opts)
		},
	}
}

func runRun(ctx context.Context, opts *RunOptions) error {
	return notBuilt("run")
}
