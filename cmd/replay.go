package cmd

import (
	"context"

	"github.com/spf13/cobra"
)

// ReplayOptions are the flags of `bifrost-migrate replay`.
type ReplayOptions struct{}

// NewCmdReplay builds `bifrost-migrate replay`. runF replaces the command's
// work in tests; nil means replayRun.
func NewCmdReplay(f *Factory, runF func(context.Context, *ReplayOptions) error) *cobra.Command {
	opts := &ReplayOptions{}
	return &cobra.Command{
		Use:   "replay",
		Short: "Rollback replay: re-apply rows changed in the tables since a time (not implemented yet)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return replayRun(c.Context(), opts)
		},
	}
}

func replayRun(ctx context.Context, opts *ReplayOptions) error {
	return notBuilt("replay")
}
