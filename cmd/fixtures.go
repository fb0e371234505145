package cmd

import (
	"github.com/spf13/cobra"
)

// NewCmdFixtures builds `bifrost-migrate fixtures` and its `load` subcommand.
func NewCmdFixtures(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "fixtures",
		Short: "Sample data for demos and benchmarks",
		Args:  cobra.NoArgs,
	}
	c.AddCommand(&cobra.Command{
		Use:   "load",
		Short: "Load the sample data in fixtures/ into Table and Blob Storage (not implemented yet)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return notBuilt("fixtures load")
		},
	})
	return c
}
