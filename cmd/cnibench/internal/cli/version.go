package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/version"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print version, git commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := version.Get()
			fmt.Fprintf(cmd.OutOrStdout(), "cnibench %s (commit %s, %s)\n", v.Version, v.Commit, v.GoVersion)
			return nil
		},
	}
}
