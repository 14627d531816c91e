package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/published"
	"github.com/cnibench/cnibench/stats"
	"github.com/cnibench/cnibench/suite"
)

// newProfilesCmd lists the profiles: what each answers, how long it
// measures, which targets run it and which published report it
// reproduces, so that a reader holding a report finds its profile by name.
func newProfilesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "profiles",
		Short: "List the profiles: what each answers, its measuring time, its targets and the published report it reproduces",
		Long: "List every profile of `run --profile`: what it answers, its measuring time (rounds × tests × placements × scenarios × " +
			"(duration + warm-up); the lab's setup and teardown come on top), the targets that run it, and the " +
			"published report it reproduces (its report then opens with the original's table beside ours; docs/profiles.md).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return writeProfiles(cmd.OutOrStdout()) },
	}
}

// writeProfiles writes one block per profile.
func writeProfiles(w io.Writer) error {
	for i, p := range suite.Profiles {
		plan, err := suite.Options{Profile: p.Name}.Resolve()
		if err != nil {
			return fmt.Errorf("profile %s: %w", p.Name, err)
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		names := p.Scenarios
		if len(names) == 0 {
			names = []string{""} // the target's one
		}
		fmt.Fprintf(w, "%s\n  answers:   %s\n", p.Name, p.About)
		fmt.Fprintf(w, "  measures:  %s: %s of %s on %s in %s, %s + %s warm-up each%s; plus the lab's setup\n",
			roundedDuration(plan.EstimateOn(names)+scaleEstimate(p, plan, names)), count(plan.Rounds, "round"), count(len(plan.Tests), "test"),
			count(len(plan.Placements), "placement"), count(len(names), "scenario")+narrowed(p), time.Duration(plan.Duration), time.Duration(plan.Warmup), scaleMeasures(p, plan, names))
		fmt.Fprintf(w, "  targets:   %s\n", profileTargets(p))
		if id := p.ReproducedReport(); id != "" {
			r, err := published.Lookup(id)
			if err != nil {
				return fmt.Errorf("profile %s: %w", p.Name, err)
			}
			fmt.Fprintf(w, "  reproduces: %s, %s (its report opens with the original's table: docs/profiles.md)\n", r.Title, r.Date)
			fmt.Fprintf(w, "  rows:      %s\n", reproducedRows(p))
		}
	}
	return nil
}

// scaleEstimate is the measuring time of a profile's rows at scale (0
// for none).
func scaleEstimate(p suite.Profile, plan *suite.Plan, names []string) time.Duration {
	if p.Scale == nil {
		return 0
	}
	return p.Scale.Estimate(plan, names)
}

// scaleMeasures says what a profile's rows at scale add to its rounds.
func scaleMeasures(p suite.Profile, plan *suite.Plan, names []string) string {
	if p.Scale == nil {
		return ""
	}
	s := fmt.Sprintf("; then (lab) %s of the Service-scale sweep: %s at %s dummy Services × %d endpoints on %s, the same rounds, plus programming",
		roundedDuration(scaleEstimate(p, plan, names)), strings.Join(p.Scale.Tests, ", "), joinInts(p.Scale.Steps), p.Scale.Endpoints, strings.Join(p.Scale.Scenarios, ", "))
	if p.Scale.MaxStepTime > 0 {
		s += fmt.Sprintf(" (a datapath stops where its next step would take over %s to program)", p.Scale.MaxStepTime)
	}
	return s
}

// joinInts writes 5000,10000 as "5,000, 10,000".
func joinInts(ns []int) string {
	var out []string
	for _, n := range ns {
		out = append(out, stats.Thousands(n))
	}
	return strings.Join(out, ", ")
}

// profileTargets says where a profile runs: one comparing lab scenarios
// side by side runs on the lab only (k8sApplies), the security profile
// on a cluster as twins, a report's profile with OnCluster as the column
// the cluster is.
func profileTargets(p suite.Profile) string {
	lab := "lab (it compares lab scenarios: " + strings.Join(p.Scenarios, ", ") + ")"
	switch {
	case p.Name == suite.SecurityProfile:
		return "lab; k8s as twins of the cluster (docs/k8s.md)"
	case p.OnCluster:
		return lab + "; k8s as the one column the cluster's datapath is (docs/profiles.md)"
	case len(p.Scenarios) > 0:
		return lab
	}
	return "lab, k8s"
}

// reproducedRows says how many of the original's cells the profile
// measures, on which targets, and which rows it cannot.
func reproducedRows(p suite.Profile) string {
	var none, labOnly, scaled []string
	seen := map[string]bool{}
	measured := 0
	for _, c := range p.Reproduces.Cells {
		switch {
		case c.NoEquivalent != "":
			if !seen[c.Row] {
				seen[c.Row] = true
				none = append(none, c.Row)
			}
		case c.Change && p.OnCluster:
			measured++
			if !slices.Contains(labOnly, c.Row) {
				labOnly = append(labOnly, c.Row)
			}
		case c.Services > 0:
			measured++
			if !slices.Contains(scaled, c.Row) {
				scaled = append(scaled, c.Row)
			}
		default:
			measured++
		}
	}
	on := "the lab and k8s"
	switch {
	case p.OnCluster:
		on = "the lab; on k8s the cluster's column"
	case len(p.Scenarios) > 0:
		on = "the lab"
	}
	s := fmt.Sprintf("%d of the original's %d cells measured, on %s", measured, len(p.Reproduces.Cells), on)
	if len(labOnly) > 0 {
		s += "; on the lab only (a part added to a datapath; on k8s --profile security): " + strings.Join(labOnly, "; ")
	}
	if len(scaled) > 0 {
		s += "; on the lab only (the Service-scale sweep after the rounds; on k8s cnibench sweep): " + strings.Join(scaled, "; ")
	}
	if len(none) > 0 {
		s += "; rows without an equivalent here (the report says why): " + strings.Join(none, "; ")
	}
	return s
}

// clusterProfiles are the profiles --target k8s runs, for its refusal.
func clusterProfiles() string {
	var names []string
	for _, p := range suite.Profiles {
		if len(p.Scenarios) == 0 || p.Name == suite.SecurityProfile || p.OnCluster {
			names = append(names, p.Name)
		}
	}
	return strings.Join(names, ", ")
}

// roundedDuration is d to the second, "2m33s".
func roundedDuration(d time.Duration) string { return d.Round(time.Second).String() }

// count is "1 round", "5 rounds".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// narrowed says which of a profile's scenarios measure only some tests
// (Profile.ScenarioTests), "" when all measure every test.
func narrowed(p suite.Profile) string {
	byTests := map[string]int{}
	var order []string
	for _, sc := range p.Scenarios {
		if only, ok := p.ScenarioTests[sc]; ok {
			k := strings.Join(only, ", ")
			if byTests[k] == 0 {
				order = append(order, k)
			}
			byTests[k]++
		}
	}
	var parts []string
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%d of them only %s", byTests[k], k))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}
