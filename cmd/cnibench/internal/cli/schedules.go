package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/suite"
)

// scheduleKind is one schedule's face on the command line: its own flags
// and how they make the suite.Schedule and its plan. A new schedule is its
// suite file plus one file here that registers its entry (rounds.go,
// servicescale.go, churn.go); the targets ask the schedule what it needs
// (suite.ReprogrammingOf, suite.ExpandScenarios, Schedule.Estimate).
type scheduleKind interface {
	// register adds the schedule's flags; newMeasureCmd annotates them
	// with the schedule's name (they are an error elsewhere).
	register(fs *pflag.FlagSet)
	// resolve checks the flags and makes the schedule and the plan of o.
	resolve(fs *pflag.FlagSet, o suite.Options) (suite.Schedule, *suite.Plan, error)
	// about says what the resolved schedule runs, for the header line
	// ("churn of 1000 Services × 4 endpoints at 10 changes/s"); "" for
	// plain rounds.
	about() string
}

// scheduleEntry is a registered schedule: its kind and how the command
// line names, documents and runs it.
type scheduleEntry struct {
	name  string // as flag annotations and errors name it
	rank  int    // place in lists ("the Service-scale sweep and the churn schedule")
	title string // in errors: "the churn schedule"
	hint  string // how to run it: "cnibench churn, or run --tests churn"
	// test is the --tests name that picks the schedule in run ("" none).
	test string
	// tests: the command takes --tests, whose schedule names pick their
	// schedule (run); autoRounds: it takes --rounds auto[:MAX].
	tests, autoRounds bool
	// reprograms: it reprograms the Service datapath, so the targets'
	// flags annotated scheduleReprograms apply to it.
	reprograms bool
	// scenarios is the lab's default --scenarios ("": the profile's).
	scenarios string
	// use, short and long make its command (use "": none).
	use, short, long string
	// flagHelp is the usage of run's flags where it differs for this
	// schedule (profile, rounds, placements).
	flagHelp map[string]string
	new      func() scheduleKind
}

// scheduleReprograms annotates a flag for every schedule that reprograms
// the Service datapath (expanded by reprogramsSchedules).
const scheduleReprograms = "reprograms"

var scheduleRegistry = map[string]scheduleEntry{}

// registerSchedule adds a schedule under its name.
func registerSchedule(e scheduleEntry) {
	if _, dup := scheduleRegistry[e.name]; dup || e.name == scheduleReprograms {
		panic("cnibench: schedule " + e.name + " registered twice")
	}
	scheduleRegistry[e.name] = e
}

// scheduleList is every registered schedule, by rank, then name.
func scheduleList() []scheduleEntry {
	var list []scheduleEntry
	for _, e := range scheduleRegistry {
		list = append(list, e)
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		return a.rank < b.rank || a.rank == b.rank && a.name < b.name
	})
	return list
}

// pickSchedule is the schedule a --tests list asks for (run --tests
// churn), else own.
func pickSchedule(tests []string, own scheduleEntry) scheduleEntry {
	for _, e := range scheduleList() {
		for _, t := range tests {
			if e.test != "" && strings.EqualFold(t, e.test) {
				return e
			}
		}
	}
	return own
}

// reprogramsSchedules replaces scheduleReprograms in the flags' schedule
// annotations with the names of the schedules that reprogram.
func reprogramsSchedules(fs *pflag.FlagSet) {
	var names []string
	for _, e := range scheduleList() {
		if e.reprograms {
			names = append(names, e.name)
		}
	}
	fs.VisitAll(func(f *pflag.Flag) {
		var ss []string
		for _, s := range f.Annotations[annSchedule] {
			if s == scheduleReprograms {
				ss = append(ss, names...)
			} else {
				ss = append(ss, s)
			}
		}
		if len(ss) > 0 {
			appliesTo(fs, annSchedule, ss, f.Name)
		}
	})
}

// reprogramFlagHelp is the usage of run's flags for a schedule that
// reprograms the Service datapath and measures one placement.
func reprogramFlagHelp(rounds string) map[string]string {
	return map[string]string{
		"profile":    "the sample durations of a profile (quick, standard, ...); with tke, TKE's SVC_* variables are read (docs/profiles.md)",
		"rounds":     rounds,
		"placements": "the one placement to measure: " + suite.PodToServiceOtherNode + " (default) or " + suite.PodToServiceSameNode,
	}
}

// scheduleText lists schedules by an entry's field, for errors.
func scheduleText(ss []string, text func(scheduleEntry) string, sep string) string {
	var out []string
	for _, s := range ss {
		if e, ok := scheduleRegistry[s]; ok {
			out = append(out, text(e))
		} else {
			out = append(out, fmt.Sprintf("schedule %q", s))
		}
	}
	return strings.Join(out, sep)
}
