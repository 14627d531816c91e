package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/suite"
)

// scheduleRounds is the plain schedule: interleaved rounds of the plan.
const scheduleRounds = "rounds"

func init() {
	registerSchedule(scheduleEntry{name: scheduleRounds, title: "plain runs", hint: "run", tests: true, autoRounds: true,
		use:   "run",
		short: "Run the benchmark suite and write results.json, report.md and report.html",
		long: `Run the suite on a target (default: the local lab). If the lab is not up, it is
brought up for the run and taken down afterwards; a lab you started with
'cnibench lab up' is used and left running. Every sample is written to
DIR/results.json as soon as it finishes; Ctrl-C (or SIGTERM) stops cleanly,
keeps them, takes down what the run brought up and exits 130 (143); a second
one exits at once, naming the 'lab down' to run (README: Recovery). A sample
whose agent dies fails with the cause and a fresh agent takes the next.
Exit status: 0 every sample measured; 4 the samples stand but the teardown
failed; 5 the run went to the end but some samples failed (each cause in
results.json); 1 any other error (results.json unwritable, lab busy, ...).

Tests: ` + strings.Join(suite.TestNames(), ", ") + `, service-scale (the
  Service-scale sweep, the same as 'cnibench sweep': see its --help), and churn
  (` + strings.Join(suite.ChurnTests, ", ") + ` with and without a controlled churn of
  --churn-services Services at --churn-rate changes a second, each datapath's lab
  beside its churned twin "X+churn"; default scenarios ` + defaultChurnScenarios + `; the
  same as 'cnibench churn'; see docs/churn.md)
Placements: ` + strings.Join(suite.AllPlacements, ", ") + `, and ` + strings.Join(suite.ServicePlacements, ", ") + `
  when the lab has a Service datapath (--service-datapath, or a scenario like ebpf) and on
  clusters: node0-pod0 dials a ClusterIP whose endpoints are on its own node (same-node,
  what a one-node cluster can run) or on the other node (other-node)
Profiles: ` + profileHelp(),
		new: func() scheduleKind { return &roundsFlags{} },
	})
}

// roundsFlags are the plain schedule's own flags.
type roundsFlags struct {
	streams    int
	flameGraph string
	pairs      int
}

func (f *roundsFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.streams, "streams", 0, "flows of the *_MULTI tests (default 4)")
	fs.IntVar(&f.pairs, "pairs", 1, fmt.Sprintf("client→server pairs each sample runs at once, 1 to %d (default 1, or the profile's): pair k on its own client and server pods, the sample's numbers the pairs' aggregate, each pair's kept (docs/pairs.md)", suite.MaxPairs))
	fs.StringVar(&f.flameGraph, "flame-graph", "", "a test of the run whose kernel and user CPU stacks are sampled on the client's and server's CPUs (perf) in one extra, unmeasured sample per scenario and placement after the rounds; flame graphs in the HTML report, folded stacks in DIR/flamegraphs (lab)")
}

// resolve resolves the plan against its profile.
func (f *roundsFlags) resolve(fs *pflag.FlagSet, o suite.Options) (suite.Schedule, *suite.Plan, error) {
	if fs.Changed("streams") && f.streams < 1 {
		return nil, nil, fmt.Errorf("--streams must be at least 1, got %d", f.streams)
	}
	if f.pairs < 1 || f.pairs > suite.MaxPairs {
		return nil, nil, fmt.Errorf("--pairs must be 1 to %d, got %d", suite.MaxPairs, f.pairs)
	}
	o.Streams, o.FlameGraph = f.streams, f.flameGraph
	if fs.Changed("pairs") {
		o.Pairs = f.pairs // else the profile's
	}
	plan, err := o.Resolve()
	return &suite.Rounds{}, plan, err
}

func (*roundsFlags) about() string { return "" }
