package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
)

// targetKind is one place runs go (--target): it owns its flags and opens
// a run's scenarios. A new target is its package plus one file here that
// registers its adapter (targets_lab.go, targets_k8s.go).
type targetKind interface {
	// register adds the target's own flags to a schedule's command (run,
	// sweep, churn), annotating those of one schedule (scheduleRounds, or
	// scheduleReprograms for every schedule that reprograms the Service
	// datapath); newMeasureCmd annotates them all with the target's name.
	register(fs *pflag.FlagSet)
	// open opens the run's scenarios, printing its header line first.
	// No scenarios and no error: nothing to run (a dry run printed
	// manifests). It calls req.claimOut before making anything, so the
	// results directory is checked before a lab or cluster is touched.
	open(ctx context.Context, req *runRequest) ([]suite.Scenario, error)
}

// defaultTarget is --target's default.
const defaultTarget = "lab"

type targetEntry struct {
	title string // for help sections
	new   func(g *globals) targetKind
}

var targetRegistry = map[string]targetEntry{}

// registerTarget adds a target kind under its --target name.
func registerTarget(name, title string, new func(g *globals) targetKind) {
	if _, dup := targetRegistry[name]; dup {
		panic("cnibench: target " + name + " registered twice")
	}
	targetRegistry[name] = targetEntry{title: title, new: new}
}

// targetNames are the registered targets, the default first.
func targetNames() []string {
	var names []string
	for n := range targetRegistry {
		if n != defaultTarget {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return append([]string{defaultTarget}, names...)
}

func targetTitle(name string) string { return targetRegistry[name].title }

// runRequest is what a run asked for, the same for every target and
// schedule.
type runRequest struct {
	opts     suite.Options  // as asked: empty Tests and Placements mean the defaults
	plan     *suite.Plan    // resolved
	entry    scheduleEntry  // the schedule's command-line entry (its default scenarios)
	schedule suite.Schedule // resolved; a target may replace it (security twins on a cluster)
	about    string         // what the schedule runs, for header lines ("" plain rounds)
	runID    string
	out      string
	flags    *pflag.FlagSet // the command's, to tell a flag given from a default
	progress io.Writer      // stderr; a target may wrap it (progressOut)
	stdout   io.Writer      // for what a target prints as output (a dry run's manifests)

	cleanup    []string // commands that remove what an aborted run leaves (set by open)
	createdOut bool     // claimOut made the results directory
}

// reprogramming is what the schedule asks of the scenarios' Service
// datapaths; nil when it does not reprogram them.
func (r *runRequest) reprogramming() *suite.Reprogramming { return suite.ReprogrammingOf(r.schedule) }

// reprograms tells whether the schedule reprograms the Service datapath
// (the sweep, the churn): its scenarios need one, and it measures one
// pod-to-service placement.
func (r *runRequest) reprograms() bool { return r.reprogramming() != nil }

// onePlacement tells whether the run measures only the one pod-to-service
// placement the reprogramming needs (the sweep, the churn), not also the
// plan's placements in rounds (a profile's rows at scale after them).
func (r *runRequest) onePlacement() bool {
	rp := r.reprogramming()
	return rp != nil && !rp.KeepPlacements
}

// estimate is the schedule's measuring time on the named scenarios.
func (r *runRequest) estimate(scenarios []string) time.Duration {
	return r.schedule.Estimate(r.plan, scenarios).Round(time.Second)
}

// claimOut checks that the results directory can be written, remembering
// whether this run made it (a run refused before its first sample then
// removes it again).
func (r *runRequest) claimOut() error {
	_, statErr := os.Stat(r.out)
	if err := results.CheckWritable(r.out); err != nil {
		return err
	}
	r.createdOut = os.IsNotExist(statErr)
	return nil
}

// releaseOut removes a results directory this run made and left empty
// (all: with whatever is in it, for a run refused before any sample).
func (r *runRequest) releaseOut(all bool) {
	if !r.createdOut {
		return
	}
	if all {
		_ = os.RemoveAll(r.out)
	} else {
		_ = os.Remove(r.out) // only if still empty: nothing half-made
	}
}

// targetFlag checks --target against the registry.
func targetFlag(name string) error {
	if _, ok := targetRegistry[name]; !ok {
		return fmt.Errorf("--target %q: want %s", name, strings.Join(targetNames(), " or "))
	}
	return nil
}

// annotateNew adds value to the key annotation of every flag registered
// since before (those not in it).
func annotateNew(fs *pflag.FlagSet, before []string, key, value string) {
	fs.VisitAll(func(f *pflag.Flag) {
		if !slices.Contains(before, f.Name) && !slices.Contains(f.Annotations[key], value) {
			appliesTo(fs, key, append(slices.Clone(f.Annotations[key]), value), f.Name)
		}
	})
}

// flagNames lists a flag set's names.
func flagNames(fs *pflag.FlagSet) []string {
	var n []string
	fs.VisitAll(func(f *pflag.Flag) { n = append(n, f.Name) })
	return n
}
