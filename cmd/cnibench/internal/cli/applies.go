package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Applicability of a flag is written on the flag itself (pflag
// annotations), so one check (checkApplies) and one help layout
// (groupedUsage) serve every target and schedule: a flag a target or
// schedule does not use is an error naming why, never silently ignored.
const (
	annTarget   = "cnibench/target"   // targets the flag applies to; none: all
	annSchedule = "cnibench/schedule" // schedules it applies to; none: all
)

// appliesTo annotates flags (already registered) with the targets or
// schedules they apply to.
func appliesTo(fs *pflag.FlagSet, key string, values []string, names ...string) {
	for _, n := range names {
		if err := fs.SetAnnotation(n, key, values); err != nil {
			panic(err) // a flag name typed wrong here is a programming error
		}
	}
}

// checkApplies returns a one-line error for the first flag set on the
// command line that does not apply to the chosen target or schedule.
func checkApplies(fs *pflag.FlagSet, target, schedule string) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err == nil {
			err = flagApplies(f, target, schedule)
		}
	})
	return err
}

// flagApplies says why a flag does not apply to the target or schedule;
// nil when it does.
func flagApplies(f *pflag.Flag, target, schedule string) error {
	if ts := f.Annotations[annTarget]; len(ts) > 0 && !slices.Contains(ts, target) {
		if len(ts) == 1 && ts[0] == defaultTarget {
			return fmt.Errorf("--%s is a %s setting: it does not apply to --target %s", f.Name, defaultTarget, target)
		}
		return fmt.Errorf("--%s applies to --target %s only", f.Name, strings.Join(ts, " or "))
	}
	if ss := f.Annotations[annSchedule]; len(ss) > 0 && !slices.Contains(ss, schedule) {
		if slices.Contains(ss, scheduleRounds) {
			return fmt.Errorf("--%s does not apply to %s", f.Name, scheduleNames([]string{schedule}))
		}
		return fmt.Errorf("--%s applies to %s only (%s)", f.Name, scheduleNames(ss), scheduleHints(ss))
	}
	return nil
}

// flagGroups are the sections of a schedule command's help (run, sweep, churn): flags for
// every target first, then the chosen target's own (--target, default
// lab); the other targets' flags are one line each that says how to see
// them, so --help shows what applies.
func flagGroups(cmd *cobra.Command) string {
	var b strings.Builder
	local := cmd.LocalFlags()
	chosen := defaultTarget
	if f := cmd.Flags().Lookup("target"); f != nil && f.Value.String() != "" {
		chosen = f.Value.String()
	}
	section := func(target string) *pflag.FlagSet {
		fs := pflag.NewFlagSet(target, pflag.ContinueOnError)
		local.VisitAll(func(f *pflag.Flag) {
			ts := f.Annotations[annTarget]
			if !f.Hidden && ((target == "" && len(ts) == 0) || (target != "" && slices.Contains(ts, target))) {
				fs.AddFlag(f)
			}
		})
		return fs
	}
	fmt.Fprintf(&b, "\nFlags:\n%s", section("").FlagUsages())
	for _, name := range targetNames() {
		fs := section(name)
		n := 0
		fs.VisitAll(func(*pflag.Flag) { n++ })
		switch {
		case n == 0:
		case name == chosen:
			fmt.Fprintf(&b, "\n%s (--target %s):\n%s", targetTitle(name), name, fs.FlagUsages())
		default:
			fmt.Fprintf(&b, "\n%s (--target %s): %d more, see '%s --target %s --help'\n", targetTitle(name), name, n, cmd.CommandPath(), name)
		}
	}
	return b.String()
}

// groupedUsage is cobra's usage template with the local flags in
// flagGroups' sections.
const groupedUsage = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}
{{flagGroups .}}{{if .HasAvailableInheritedFlags}}
Global Flags:
{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}
{{end}}`

func init() { cobra.AddTemplateFunc("flagGroups", flagGroups) }

// scheduleNames says which runs the schedules are, for errors.
func scheduleNames(ss []string) string {
	return scheduleText(ss, func(e scheduleEntry) string { return e.title }, " and ")
}

// scheduleHints say how to run them.
func scheduleHints(ss []string) string {
	return scheduleText(ss, func(e scheduleEntry) string { return e.hint }, "; ")
}
