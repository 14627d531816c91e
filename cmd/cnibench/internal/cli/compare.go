package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/report"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// ExitRegression is compare --fail-if-regress's exit status when a metric
// got significantly worse by more than the allowed percentage.
const ExitRegression = 3

func newCompareCmd() *cobra.Command {
	var (
		out          string
		format       string
		regress      string
		allMetrics   bool
		allowMissing bool
	)
	cmd := &cobra.Command{
		Use:   "compare DIR1 DIR2 [DIR...]",
		Short: "Compare separate runs: one report with a column per run and scenario, or a CI regression gate",
		Long: `Render one report across separate runs. Columns are run × scenario, labelled
by the run's directory name (and scenario when a run has several); the first
column is the baseline every other column is judged against. Runs with
different plans are compared on the (test, placement) cells they share, the
others are shown as missing.

Without --out the report is printed to stdout in the one --format given
(default md). With --out DIR the reports are written there (default md,html):
report.md, report.html, report.json.

--fail-if-regress PCT BASE NEW is a gate for CI pipelines: it compares NEW
against BASE (scenarios paired by name; two single-scenario runs pair
whatever their names; a sweep's steps by Service count) on the headline
metrics (--all-metrics: every judged one), prints one line per metric whose
interval lies entirely beyond PCT percent worse, and exits with status 3 if
there is any, 0 otherwise. NEW losing rounds BASE did not (failed samples, or a
rate of 0) is a regression too. Everything only BASE has (a scenario, a cell, a
sweep step NEW never reached, a metric) is named and fails the gate like a
regression unless --allow-missing. It exits with 1 when nothing could be judged
(a verdict needs at least 5 rounds per side): a gate that cannot see must not
pass silently.

Exit status: 0 no regression (or plain comparison), 1 error, 3 regression.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := &compareFlags{out: out, format: format, regress: regress, allMetrics: allMetrics, allowMissing: allowMissing}
			if err := c.parse(cmd, len(args)); err != nil {
				return err
			}
			var in []report.Input
			for _, a := range args {
				run, err := results.Load(a)
				if err != nil {
					return err
				}
				in = append(in, report.Input{Run: run, Label: runLabel(a, run)})
			}
			uniqueLabels(in)
			if err := c.render(cmd, in); err != nil {
				return err
			}
			if regress == "" {
				return nil
			}
			return c.gate(cmd, in)
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "directory to write the reports into (default: print to stdout)")
	f.StringVar(&format, "format", "md", "md, html, json, short (answers and warnings for a pull-request comment), csv (one row per cell) (comma-separated, or all; several need --out); with --out the default is md,html")
	f.StringVar(&regress, "fail-if-regress", "", "PCT: exit 3 if any headline metric of NEW is worse than BASE by more than PCT percent (the whole interval)")
	f.BoolVar(&allMetrics, "all-metrics", false, "with --fail-if-regress: judge every metric, not only the headline ones")
	f.BoolVar(&allowMissing, "allow-missing", false, "with --fail-if-regress: pass although NEW lacks scenarios, cells, sweep steps or metrics that BASE has (they are still listed)")
	return cmd
}

// resultsDir is the directory of a results path given as a directory or
// as the results.json file itself.
func resultsDir(p string) string {
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		return filepath.Dir(p)
	}
	return p
}

// runLabel names a run's columns: its directory's name, or the run id
// when the directory says nothing ("." or a bare results.json).
func runLabel(path string, run *results.Run) string {
	name := filepath.Base(filepath.Clean(resultsDir(path)))
	if abs, err := filepath.Abs(resultsDir(path)); err == nil {
		name = filepath.Base(abs)
	}
	if name == "" || name == "." || name == string(filepath.Separator) {
		return run.RunID
	}
	return name
}

// uniqueLabels falls back to run ids, then numbers, when directory names
// collide (a/results and b/results).
func uniqueLabels(in []report.Input) {
	count := map[string]int{}
	for _, x := range in {
		count[x.Label]++
	}
	for i := range in {
		if count[in[i].Label] > 1 && in[i].Run.RunID != "" {
			in[i].Label = in[i].Run.RunID
		}
	}
	seen := map[string]int{}
	for i := range in {
		seen[in[i].Label]++
		if n := seen[in[i].Label]; n > 1 {
			in[i].Label = fmt.Sprintf("%s#%d", in[i].Label, n)
		}
	}
}

// compareFlags are compare's flags, parsed.
type compareFlags struct {
	out, format, regress string
	allMetrics           bool
	allowMissing         bool
	formats              []string // with --format or --out
	pct                  float64  // --fail-if-regress
}

// parse checks the flags against each other and the number of runs.
func (c *compareFlags) parse(cmd *cobra.Command, runs int) error {
	if cmd.Flags().Changed("format") || c.out != "" {
		f := c.format
		if !cmd.Flags().Changed("format") {
			f = "md,html"
		}
		var err error
		if c.formats, err = report.ParseFormats(f); err != nil {
			return err
		}
	}
	if c.out == "" && len(c.formats) > 1 {
		return fmt.Errorf("--format %s: several formats need --out DIR (stdout takes one)", c.format)
	}
	if c.allMetrics && c.regress == "" {
		return fmt.Errorf("--all-metrics applies to --fail-if-regress only")
	}
	if c.allowMissing && c.regress == "" {
		return fmt.Errorf("--allow-missing applies to --fail-if-regress only")
	}
	if c.regress != "" {
		var err error
		c.pct, err = strconv.ParseFloat(strings.TrimSuffix(c.regress, "%"), 64)
		if err != nil || c.pct < 0 {
			return fmt.Errorf("--fail-if-regress %q: want a percentage ≥ 0, e.g. 5", c.regress)
		}
		if runs != 2 {
			return fmt.Errorf("--fail-if-regress takes exactly two runs, BASE and NEW; got %d", runs)
		}
	}
	return nil
}

// render writes the report into --out, or prints it in its one format
// (not with the gate alone, which prints only its verdict lines).
func (c *compareFlags) render(cmd *cobra.Command, in []report.Input) error {
	rep, err := report.Build(in, report.Options{})
	if err != nil {
		return err
	}
	switch {
	case c.out != "":
		if err := os.MkdirAll(c.out, 0o755); err != nil {
			return fmt.Errorf("--out %s: %v", c.out, err)
		}
		paths, err := report.Write(c.out, rep, c.formats)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "report: %s\n", strings.Join(paths, ", "))
	case c.regress == "":
		render := report.Markdown
		if len(c.formats) == 1 {
			render = report.Renderer(c.formats[0])
		}
		return render(cmd.OutOrStdout(), rep)
	}
	return nil
}

// gate is --fail-if-regress: a line per significant regression beyond the
// threshold and exit 3, or an error when nothing could be judged.
func (c *compareFlags) gate(cmd *cobra.Command, in []report.Input) error {
	chk, err := report.Regressions(in[0].Run, in[1].Run, c.pct, report.Options{AllMetrics: c.allMetrics})
	if err != nil {
		return err
	}
	w := cmd.ErrOrStderr()
	for _, u := range chk.Unpaired {
		fmt.Fprintf(w, "note: %s\n", u)
	}
	if chk.TooFew > 0 {
		fmt.Fprintf(w, "note: %d metric comparisons had too few rounds for a verdict\n", chk.TooFew)
	}
	if chk.Judged == 0 {
		return fmt.Errorf("--fail-if-regress: no metric could be judged between %s and %s (a verdict needs at least %d rounds per side)", in[0].Label, in[1].Label, stats.DefaultMinRounds)
	}
	for _, r := range chk.Regressions {
		fmt.Fprintf(cmd.OutOrStdout(), "REGRESSION %s\n", r)
	}
	for _, m := range chk.Missing {
		if c.allowMissing {
			fmt.Fprintf(w, "note: %s (allowed: --allow-missing)\n", m)
		} else {
			fmt.Fprintf(cmd.OutOrStdout(), "MISSING %s\n", m)
		}
	}
	missing := len(chk.Missing) > 0 && !c.allowMissing
	if len(chk.Regressions) > 0 || missing {
		msg := fmt.Sprintf("%d of %d judged metrics regressed by more than %g%% (or lost rounds)", len(chk.Regressions), chk.Judged, c.pct)
		if missing {
			msg += fmt.Sprintf("; %d things BASE has are missing from NEW (--allow-missing to pass anyway)", len(chk.Missing))
		}
		fmt.Fprintln(w, msg)
		return exitError(ExitRegression)
	}
	fmt.Fprintf(w, "no regression beyond %g%% in %d judged metrics\n", c.pct, chk.Judged)
	return nil
}
