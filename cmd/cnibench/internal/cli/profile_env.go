package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// A reader re-running a published report types the knobs of its script:
// TKE's benchmark reads ROUNDS, IPERF_DURATION, FORTIO_DURATION,
// SVC_SCALE_STEPS, SVC_ENDPOINTS and SVC_CREATE_PARALLEL from the
// environment. With that report's profile they are read here and set the
// flag each maps onto, so the same shell runs both; a flag given on the
// command line wins over its variable, and a variable whose flag does
// not apply to this run (the sweep's on `run`, API writers on the lab)
// is named, never silently dropped. docs/profiles.md has the table.

// envKnob is one variable of a report's script and the flag it sets.
type envKnob struct {
	name, flag string
	// parse turns the variable's value into the flag's, or says what it
	// wants in an error.
	parse func(string) (string, error)
}

// profileKnobs are the variables read per profile.
var profileKnobs = map[string][]envKnob{
	"tke": {
		{"ROUNDS", "rounds", positiveInt},
		// cnibench has one duration for every test: the longer of the two.
		{"IPERF_DURATION", "duration", seconds},
		{"FORTIO_DURATION", "duration", seconds},
		{"SVC_SCALE_STEPS", "scale-steps", intList},
		{"SVC_ENDPOINTS", "endpoints-per-service", positiveInt},
		{"SVC_CREATE_PARALLEL", "api-workers", positiveInt},
	},
}

// applyProfileEnv sets the flags of the profile's knobs found in the
// environment and returns the one line that says what it took ("" when
// none was set). A bad value is an error naming its variable.
func applyProfileEnv(fs *pflag.FlagSet, profile, target, schedule string, getenv func(string) string) (string, error) {
	taken := map[string][]string{} // flag → "NAME=value"
	values := map[string]string{}
	var order, notes []string
	for _, k := range profileKnobs[profile] {
		raw := strings.TrimSpace(getenv(k.name))
		if raw == "" {
			continue
		}
		v, err := k.parse(raw)
		if err != nil {
			return "", fmt.Errorf("%s=%q (read for --profile %s as --%s): %v", k.name, raw, profile, k.flag, err)
		}
		fl := fs.Lookup(k.flag)
		switch {
		case fl == nil || flagApplies(fl, target, schedule) != nil:
			notes = append(notes, fmt.Sprintf("%s not used: --%s does not apply to %s", k.name, k.flag, knobWhere(target, schedule)))
			continue
		case schedule == scheduleRounds && target != defaultTarget && slices.Contains(profileScaleFlags, k.flag):
			notes = append(notes, fmt.Sprintf("%s not used: run sweeps --profile %s's Service-scale rows on the lab only (on --target %s: cnibench sweep --target %s --profile %s)", k.name, profile, target, target, profile))
			continue
		case fl.Changed:
			notes = append(notes, fmt.Sprintf("%s not used: --%s given", k.name, k.flag))
			continue
		}
		if len(taken[k.flag]) == 0 {
			order = append(order, k.flag)
		}
		taken[k.flag] = append(taken[k.flag], k.name+"="+raw)
		values[k.flag] = longer(values[k.flag], v)
	}
	var parts []string
	for _, f := range order {
		if err := fs.Set(f, values[f]); err != nil {
			return "", fmt.Errorf("%s (read for --profile %s as --%s): %v", strings.Join(taken[f], ", "), profile, f, err)
		}
		parts = append(parts, fmt.Sprintf("%s → --%s %s", strings.Join(taken[f], ", "), f, values[f]))
	}
	if len(parts)+len(notes) == 0 {
		return "", nil
	}
	return fmt.Sprintf("%s knobs from the environment: %s", profile, strings.Join(append(parts, notes...), "; ")), nil
}

// knobWhere names the run a knob did not apply to.
func knobWhere(target, schedule string) string {
	return scheduleNames([]string{schedule}) + " on --target " + target
}

// longer keeps the larger of two durations, any other value the last: one
// duration serves iperf's and fortio's tests here.
func longer(old, v string) string {
	a, errA := time.ParseDuration(old)
	b, errB := time.ParseDuration(v)
	if errA == nil && errB == nil && a > b {
		return old
	}
	return v
}

func positiveInt(s string) (string, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return "", fmt.Errorf("want a whole number of at least 1")
	}
	return strconv.Itoa(n), nil
}

// seconds reads a duration as the script does (whole seconds), or with
// a unit (30s, 1m).
func seconds(s string) (string, error) {
	if n, err := strconv.Atoi(s); err == nil && n > 0 {
		return (time.Duration(n) * time.Second).String(), nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d.String(), nil
	}
	return "", fmt.Errorf("want seconds (30) or a duration (30s), more than 0")
}

// intList reads "5000,10000,20000" (spaces allowed).
func intList(s string) (string, error) {
	var out []string
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return "", fmt.Errorf("want Service counts separated by commas, %q is not one", p)
		}
		out = append(out, strconv.Itoa(n))
	}
	if len(out) == 0 {
		return "", fmt.Errorf("want Service counts separated by commas")
	}
	return strings.Join(out, ","), nil
}
