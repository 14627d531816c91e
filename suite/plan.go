package suite

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// Options is what the user asked for; zero values mean "the profile's".
type Options struct {
	Profile    string        `json:"profile"`
	Tests      []string      `json:"tests,omitempty"`
	Placements []string      `json:"placements,omitempty"`
	Duration   time.Duration `json:"duration,omitempty"`
	Warmup     time.Duration `json:"warmup,omitempty"`
	Rounds     int           `json:"rounds,omitempty"`
	// AutoRounds is the MAX of --rounds auto[:MAX]: rounds are added after
	// the fifth until every question is conclusive, MAX at most (0: off).
	AutoRounds int         `json:"auto_rounds,omitempty"`
	Streams    int         `json:"streams,omitempty"`
	Mode       engine.Mode `json:"mode,omitempty"`
	// FlameGraph names a test of the plan whose CPU stacks are sampled in
	// one extra, unmeasured sample per scenario and placement after the
	// rounds (flamegraph.go); "" for none.
	FlameGraph string `json:"flame_graph,omitempty"`
	// Pairs is how many client→server pairs each sample runs at once
	// (--pairs, 1..MaxPairs; 0 and 1 are one pair): pairs.go.
	Pairs int `json:"pairs,omitempty"`
	// UDPMessageSize is the UDP stream tests' datagram size (--msg-size,
	// cilium connectivity perf's name; 0: the profile's).
	UDPMessageSize int `json:"udp_message_size,omitempty"`
}

// Plan is Options resolved against a profile and validated.
type Plan struct {
	results.Plan
	Specs []TestSpec
	// Ports are server ports, by port name, off their kinds' numbers
	// (kinds.Plan.Ports): tests with a loopback DNS server set "dns".
	Ports map[string]int
}

// Resolve fills defaults from the profile and checks every value, returning
// a one-line error naming the first bad one.
func (o Options) Resolve() (*Plan, error) {
	if o.Profile == "" {
		o.Profile = "quick"
	}
	prof, err := LookupProfile(o.Profile)
	if err != nil {
		return nil, err
	}
	p := &Plan{Plan: results.Plan{
		Profile:        prof.Name,
		Rounds:         prof.Rounds,
		Duration:       engine.Duration(prof.Duration),
		Warmup:         engine.Duration(prof.Warmup),
		Streams:        prof.Streams,
		Pairs:          onePairIsZero(prof.Pairs),
		UDPMessageSize: prof.UDPMessageSize,
		Mode:           engine.Blocking,
		Ask:            prof.Ask,
		// Every question of the profile: the report asks those whose
		// scenarios the run has.
		Questions:     prof.Questions,
		Reproduces:    prof.Reproduces,
		ScenarioTests: prof.ScenarioTests,
	}}
	if err := o.resolveNumbers(p); err != nil {
		return nil, err
	}
	if err := o.resolveLists(p, prof); err != nil {
		return nil, err
	}
	if o.FlameGraph != "" {
		name := strings.ToUpper(strings.TrimSpace(o.FlameGraph))
		if !slices.Contains(p.Tests, name) {
			return nil, fmt.Errorf("--flame-graph %s: not one of the run's tests (%s)", o.FlameGraph, strings.Join(p.Tests, ", "))
		}
		p.FlameGraph = name
	}
	if err := checkPairs(p); err != nil {
		return nil, err
	}
	return p, nil
}

// resolveNumbers checks the counts, durations and mode, overriding the
// profile's where they are given.
func (o Options) resolveNumbers(p *Plan) error {
	switch {
	case o.Rounds < 0:
		return fmt.Errorf("--rounds must be at least 1, got %d", o.Rounds)
	case o.Rounds > 0 && o.AutoRounds > 0:
		return fmt.Errorf("--rounds: a number or auto[:MAX], not both")
	case o.Rounds > 0:
		p.Rounds = o.Rounds
	case o.AutoRounds > 0:
		level, err := stats.SequentialLevel(o.AutoRounds)
		if err != nil {
			return fmt.Errorf("--rounds auto:%d: the most rounds must be %d to %d", o.AutoRounds, stats.MinAutoRounds, stats.MaxAutoRounds)
		}
		p.Rounds = o.AutoRounds // at most; the schedule stops earlier once the questions are clear
		p.Auto = &results.AutoRounds{Max: o.AutoRounds, Level: level}
	}
	switch {
	case o.Streams < 0:
		return fmt.Errorf("--streams must be at least 1, got %d", o.Streams)
	case o.Streams > 1024:
		return fmt.Errorf("--streams must be at most 1024, got %d", o.Streams)
	case o.Streams > 0:
		p.Streams = o.Streams
	}
	switch {
	case o.Duration < 0:
		return fmt.Errorf("--duration must be positive, got %s", o.Duration)
	case o.Duration > 0 && o.Duration < 100*time.Millisecond:
		return fmt.Errorf("--duration must be at least 100ms, got %s", o.Duration)
	case o.Duration > 0:
		p.Duration = engine.Duration(o.Duration)
	}
	switch {
	case o.Warmup < 0:
		return fmt.Errorf("--warmup must not be negative, got %s", o.Warmup)
	case o.Warmup > 0:
		p.Warmup = engine.Duration(o.Warmup)
	}
	switch {
	case o.UDPMessageSize < 0 || o.UDPMessageSize > 0 && (o.UDPMessageSize < engine.MinUDPStreamSize || o.UDPMessageSize > engine.MaxUDPStreamSize):
		return fmt.Errorf("--msg-size must be %d to %d bytes (a UDP datagram), got %d", engine.MinUDPStreamSize, engine.MaxUDPStreamSize, o.UDPMessageSize)
	case o.UDPMessageSize > 0:
		p.UDPMessageSize = o.UDPMessageSize
	}
	switch {
	case o.Pairs < 0 || o.Pairs > MaxPairs:
		return fmt.Errorf("--pairs must be 1 to %d, got %d", MaxPairs, o.Pairs)
	case o.Pairs > 0: // 0: the profile's
		p.Pairs = onePairIsZero(o.Pairs)
	}
	switch o.Mode {
	case "":
	case engine.Blocking, engine.BusyPoll:
		p.Mode = o.Mode
	default:
		return fmt.Errorf("--mode %q: want blocking or busy-poll", o.Mode)
	}

	return nil
}

// resolveLists resolves the tests and placements (the profile's where none
// are given), dropping repeats.
func (o Options) resolveLists(p *Plan, prof Profile) error {
	tests := o.Tests
	if len(tests) == 0 {
		tests = prof.Tests
	}
	seen := map[string]bool{}
	for _, name := range tests {
		spec, err := LookupTest(name)
		if err != nil {
			return err
		}
		if !seen[spec.Name] {
			seen[spec.Name] = true
			p.Specs = append(p.Specs, spec)
			p.Tests = append(p.Tests, spec.Name)
		}
	}
	placements := o.Placements
	if len(placements) == 0 {
		placements = prof.Placements
	}
	seen = map[string]bool{}
	for _, name := range placements {
		pl, err := LookupPlacement(name)
		if err != nil {
			return err
		}
		if !seen[pl] {
			seen[pl] = true
			p.Placements = append(p.Placements, pl)
		}
	}
	return nil
}

// SamplesOn is the number of measurements the plan takes on the named
// scenarios, each measuring the tests the plan gives it (Measures).
func (p *Plan) SamplesOn(scenarios []string) int {
	n := 0
	for _, sc := range scenarios {
		for _, spec := range p.Specs {
			if p.Measures(sc, spec.Name) {
				n += p.Rounds * len(p.Placements)
			}
		}
	}
	return n
}

// EstimateOn is the plan's expected measuring time on the named
// scenarios, without setup.
func (p *Plan) EstimateOn(scenarios []string) time.Duration {
	return time.Duration(p.SamplesOn(scenarios)) * time.Duration(p.Duration+p.Warmup)
}

// onePairIsZero: one pair is written as none, so that a run without pairs
// has nothing new in results.json.
func onePairIsZero(pairs int) int {
	if pairs <= 1 {
		return 0
	}
	return pairs
}
