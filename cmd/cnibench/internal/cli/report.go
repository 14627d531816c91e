package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/report"
	"github.com/cnibench/cnibench/results"
)

func newReportCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "report DIR",
		Short: "Render a results directory: print its tables, write report.md and report.html",
		Long: `Render DIR/results.json again: print the tables to stdout and write the
reports into DIR, computed from the results alone.

  report.md    Markdown: provenance, plan, "At a glance" (headline metrics per
               scenario with 95% CIs and the winner), every test's metrics
  report.html  the same, self-contained (inline CSS and SVG charts, no script,
               no external reference)
  report.json  the same data for machines (tables, CIs, verdicts)

--format takes a comma-separated list of md, html, json, short (report-short.md:
the answers and warnings, under 10,000 characters, for a pull-request comment),
csv (cells.csv: one row per scenario, test, placement and metric), or all; the default
is md,html. summary.md (the Markdown report under its old name) is rewritten
too. See docs/report.md for how intervals and verdicts are computed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			formats, err := report.ParseFormats(format)
			if err != nil {
				return err
			}
			dir := args[0]
			run, err := results.Load(dir)
			if err != nil {
				return err
			}
			rep, err := report.Build([]report.Input{{Run: run}}, report.Options{})
			if err != nil {
				return err
			}
			if err := report.TableOf(cmd.OutOrStdout(), rep); err != nil {
				return err
			}
			dir = resultsDir(dir)
			paths, err := report.Write(dir, rep, formats)
			if err != nil {
				return err
			}
			if err := report.WriteSummary(dir, run); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "report: %s\n", strings.Join(paths, ", "))
			report.WriteAnswers(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "md,html", "reports to write into DIR: md, html, json, short, csv (comma-separated) or all")
	return cmd
}
