package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/suite"
)

// A profile whose report has rows at Service counts (suite.Profile.Scale:
// tke) sweeps them on the lab after its rounds, in the same run and
// results file. The steps and endpoints are the profile's unless
// --scale-steps and --endpoints-per-service (TKE's SVC_SCALE_STEPS and
// SVC_ENDPOINTS) say otherwise; on a cluster the rows say how to sweep.

// profileScaleFlags are the sweep's flags that run also takes for a
// profile's rows at scale (--max-step-time: a patient user lets a slow
// datapath finish every step).
var profileScaleFlags = []string{"scale-steps", "endpoints-per-service", "max-step-time"}

// annotateProfileScale lets run take profileScaleFlags.
func annotateProfileScale(fs *pflag.FlagSet) {
	for _, n := range profileScaleFlags {
		if f := fs.Lookup(n); f != nil && !slices.Contains(f.Annotations[annSchedule], scheduleRounds) {
			appliesTo(fs, annSchedule, append(slices.Clone(f.Annotations[annSchedule]), scheduleRounds), n)
		}
	}
}

// profileScale returns the rounds followed by the profile's sweep when
// the profile has rows at scale and the run can measure them (the lab,
// the rows' test in the plan), with words for the header; sched and ""
// otherwise. A scale flag given where it cannot apply is an error.
func (mf *measureFlags) profileScale(fs *pflag.FlagSet, plan *suite.Plan, sched suite.Schedule) (suite.Schedule, string, error) {
	given := ""
	for _, n := range profileScaleFlags {
		if fs.Changed(n) {
			given = "--" + n
			break
		}
	}
	p, err := suite.LookupProfile(plan.Profile)
	if err != nil || p.Scale == nil {
		if given != "" {
			return nil, "", fmt.Errorf("%s on run sets a profile's Service-scale rows, and --profile %s has none (%s): for a sweep of its own, cnibench sweep", given, plan.Profile, scaleProfiles())
		}
		return sched, "", nil
	}
	if mf.target != defaultTarget {
		if given != "" {
			return nil, "", fmt.Errorf("%s: --profile %s sweeps its Service-scale rows on the lab only; on --target %s: cnibench sweep --target %s --profile %s", given, p.Name, mf.target, mf.target, p.Name)
		}
		return sched, "", nil
	}
	for _, t := range p.Scale.Tests {
		if !slices.ContainsFunc(plan.Specs, func(s suite.TestSpec) bool { return s.Name == t }) {
			return sched, "", nil // --tests left the rows' test out: they say so
		}
	}
	if !hasServicePlacement(plan.Placements) {
		return sched, "", nil // --placements left the Service out: the rows say so
	}
	sf := mf.kinds[scheduleSweep].(*scaleFlags)
	if !fs.Changed("scale-steps") {
		var steps []string
		for _, n := range p.Scale.StepsFromZero() {
			steps = append(steps, strconv.Itoa(n))
		}
		sf.steps = strings.Join(steps, ",")
	}
	if !fs.Changed("endpoints-per-service") {
		sf.endpoints = p.Scale.Endpoints
	}
	if !fs.Changed("max-step-time") && p.Scale.MaxStepTime > 0 {
		sf.maxStepTime = p.Scale.MaxStepTime
	}
	o, err := sf.options()
	if err != nil {
		return nil, "", err
	}
	sf.opt = o
	about := fmt.Sprintf("then %s of %s on %s", sf.about(), strings.Join(p.Scale.Tests, ", "), strings.Join(p.Scale.Scenarios, ", "))
	return p.Scale.After(sched, o), about, nil
}

// scaleProfiles names the profiles with rows at scale.
func scaleProfiles() string {
	var names []string
	for _, p := range suite.Profiles {
		if p.Scale != nil {
			names = append(names, p.Name)
		}
	}
	return strings.Join(names, ", ")
}
