package cmd

import (
	"context"

	"github.com/spf13/cobra"
)

// VerifyOptions are the flags of `bifrost-migrate verify`.
type VerifyOptions struct{}

// NewCmdVerify builds `bifrost-migrate verify`. runF replaces the command's
// work in tests; nil means verifyRun.
func NewCmdVerify(f *Factory, runF func(context.Context, *VerifyOptions) error) *cobra.Command {
	opts := &VerifyOptions{}
	return &cobra.Command{
		Use:   "verify",
		Short: "Compare every source row with what landed in Cosmos DB and Blob Storage (not implemented yet)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return verifyRun(c.Context(), opts)
		},
	}
}

func verifyRun(ctx context.Context, opts *VerifyOptions) error {
	return notBuilt("verify")
}
