package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/report"
	"github.com/cnibench/cnibench/results"
)

func newReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report DIR",
		Short: "Render a results directory again: print its tables and rewrite summary.md",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			run, err := results.Load(args[0])
			if err != nil {
				return err
			}
			if err := report.Table(cmd.OutOrStdout(), run); err != nil {
				return err
			}
			if err := report.WriteSummary(args[0], run); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "summary: %s\n", filepath.Join(args[0], report.SummaryFile))
			return nil
		},
	}
}
