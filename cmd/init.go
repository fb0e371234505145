package cmd

import (
	"context"

	"github.com/spf13/cobra"
)

// InitOptions are the flags of `bifrost-migrate init`.
type InitOptions struct{}

// NewCmdInit builds `bifrost-migrate init`.
func NewCmdInit(f *Factory, runF func(context.Context, *InitOptions) error) *cobra.Command {
	opts := &InitOptions{}
	return &cobra.Command{
		Use:   "init",
		Short: "Create or converge the database, containers and blob container (not implemented yet)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return notBuilt("init")
		},
	}
}
