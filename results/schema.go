// Package results defines cnibench's results document (results.json): a
// versioned schema that keeps every sample, with its encoded latency
// histogram, so that reports and comparisons are computed from data alone.
// See docs/results-schema.md for the field-by-field description.
package results

import (
	"slices"
	"time"

	"github.com/cnibench/cnibench/datapath/churn"
	"github.com/cnibench/cnibench/datapath/sweep"
	"github.com/cnibench/cnibench/engine/engineapi"
	"github.com/cnibench/cnibench/engine/kinds"
)

// SchemaVersion is bumped on any incompatible change to Run.
const SchemaVersion = 1

// Status of a run, as last written.
const (
	StatusRunning     = "running"
	StatusComplete    = "complete"
	StatusInterrupted = "interrupted" // Ctrl-C / SIGTERM: completed samples are kept
	StatusFailed      = "failed"
)

// Run is the whole results document.
type Run struct {
	SchemaVersion int         `json:"schema_version"`
	RunID         string      `json:"run_id"`
	Status        string      `json:"status"`
	Error         string      `json:"error,omitempty"`
	Start         time.Time   `json:"start"`
	End           time.Time   `json:"end,omitempty"`
	Tool          Tool        `json:"tool"`
	Environment   Environment `json:"environment"`
	// Target is the first scenario's target, for readers of one-scenario
	// runs; Scenarios lists every scenario with its own target.
	Target    Target     `json:"target"`
	Scenarios []Scenario `json:"scenarios"`
	Plan      Plan       `json:"plan"`
	Results   []Result   `json:"results"`
	// Notes are run-level remarks that are not errors, e.g. why datapath
	// CPU and memory could not be read (said once, not per sample).
	Notes []string `json:"notes,omitempty"`
	// Teardown is what failed when the run's targets were closed (a lab
	// not taken down, cluster objects left): the samples stand, but the
	// machine or cluster may hold leftovers ("" when teardown succeeded).
	Teardown string `json:"teardown,omitempty"`
	// Sweeps is set by a Service-scale run (--tests service-scale): one per
	// scenario, with its programmed steps and why it stopped early, if it
	// did. Its Results carry the step they belong to in Result.Services.
	Sweeps []Sweep `json:"sweeps,omitempty"`
	// Churn is set by a churn run (--tests churn): the churn asked for and
	// how each scenario's steady state was programmed. Its samples of the
	// churned scenarios carry what the churn did in Sample.Churn.
	Churn *Churn `json:"churn,omitempty"`
	// Twins is set by a run whose scenarios are one target with a part
	// switched on and off between samples (--profile security on a
	// cluster): the design that paired them, every switch and its proof,
	// and the parts not measured, each with why.
	Twins *Twins `json:"twins,omitempty"`
	// Dir is the directory Load read the document from, where the files
	// it names (flame graphs) are; not part of the document.
	Dir string `json:"-"`
}

// Sweep is one datapath's Service-scale sweep.
type Sweep struct {
	Scenario string `json:"scenario"`
	Datapath string `json:"datapath"`
	// Placement is where the steps are measured: pod-to-service/other-node,
	// or same-node on a one-node target ("" in results before it existed:
	// other-node).
	Placement string        `json:"placement,omitempty"`
	Options   sweep.Options `json:"options"`
	// AfterRounds: the sweep followed the run's rounds (a profile with
	// Service-scale rows, tke), and its step 0 was not measured again: the
	// run's results without dummy Services (Result.Services 0) are it.
	AfterRounds bool `json:"after_rounds,omitempty"`
	// Conntrack preflight: the most entries the new-connection tests may
	// keep alive in node0's table (ephemeral ports × Service ports) and the
	// table's size (nf_conntrack_max); 0 when not applicable.
	ConntrackExpected int         `json:"conntrack_expected,omitempty"`
	ConntrackMax      int         `json:"conntrack_max,omitempty"`
	Steps             []SweepStep `json:"steps"`
	// Stopped is why the sweep ended before its last step because of
	// --max-step-time; Error is a programming or verification failure.
	Stopped string `json:"stopped,omitempty"`
	Error   string `json:"error,omitempty"`
	// Notes are checks the target could not make (e.g. the conntrack
	// preflight on a cluster) and other caveats of the sweep.
	Notes []string `json:"notes,omitempty"`
}

// SweepStep is one programmed and verified step (durations in ns, as
// sweep.Step writes them) and what the datapath held after measuring.
type SweepStep struct {
	sweep.Step
	// Conntrack is nf_conntrack_count in node0's namespace after the
	// step's samples (-1: conntrack not loaded there, -2: the target
	// cannot read it, e.g. a cluster).
	Conntrack int `json:"conntrack"`
	// FlowEntries is the BPF flow map's entries (ebpf-tc conntrack, ebpf
	// UDP reverse-NAT) after the step's samples.
	FlowEntries int `json:"flow_entries,omitempty"`
}

// Tool identifies the binary that produced the run.
type Tool struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
}

// Environment describes the machine the run was driven from.
type Environment struct {
	Hostname    string `json:"hostname"`
	Kernel      string `json:"kernel"`
	OS          string `json:"os"`
	CPUModel    string `json:"cpu_model"`
	CPUCount    int    `json:"cpu_count"`
	MemoryBytes uint64 `json:"memory_bytes"`
}

// Target describes where the traffic ran: its kind ("lab", later "k8s")
// and target-specific provenance (for the lab: topology, routing, MTU,
// sysctls applied inside lab namespaces, CPU pinning).
type Target struct {
	Kind    string         `json:"kind"`
	Details map[string]any `json:"details"`
}

// Scenario is one datapath configuration of a run (e.g. native routing,
// VXLAN), measured on its own target.
type Scenario struct {
	Name   string `json:"name"`
	Target Target `json:"target"`
	// Parts are the scenario's parts as the run parsed its name (older
	// files have none: ScenarioName reads them from Name).
	Parts ScenarioName `json:"parts,omitempty"`
	// Checks are how each part proved itself on before measuring, the
	// lines the report shows beside the scenario (checks.go).
	Checks []Check `json:"checks,omitempty"`
	// IdleNodes is the nodes idle before its first sample (nodecpu.go).
	IdleNodes *NodesCPU `json:"idle_nodes_cpu,omitempty"`
	// IdleUsage is what the datapath's components (proxies, daemons, the
	// CNI agent) used and held over the same idle window.
	IdleUsage *DatapathUsage `json:"idle_datapath_usage,omitempty"`
}

// Plan is what was asked for, after defaults were filled in.
type Plan struct {
	Profile    string             `json:"profile"`
	Tests      []string           `json:"tests"`
	Placements []string           `json:"placements"`
	Rounds     int                `json:"rounds"`
	Duration   engineapi.Duration `json:"duration"`
	Warmup     engineapi.Duration `json:"warmup"`
	// Order of one round: every scenario, test and placement, scenarios
	// innermost so that A and B alternate (A B A B, not A A B B) and drift
	// on a shared machine hits them alike.
	Order   string `json:"order"`
	Streams int    `json:"streams"` // the N of the *_MULTI tests
	// UDPMessageSize is the UDP stream tests' datagram size the plan set
	// (--msg-size, a profile's default); 0: the engine's default.
	UDPMessageSize int            `json:"udp_message_size,omitempty"`
	Mode           engineapi.Mode `json:"mode"`
	// FlameGraph is the test whose CPU stacks were sampled (--flame-graph),
	// each Result of it then has a FlameGraph; "" for none.
	FlameGraph string `json:"flame_graph,omitempty"`
	// Ask is the profile's question in words, the report's title; ""
	// for a profile without one.
	Ask string `json:"ask,omitempty"`
	// Questions are the comparisons the profile is run to answer
	// (Question); a report answers them first, holds their verdicts to a
	// false-discovery rate among themselves, and calls every other
	// comparison exploratory.
	Questions []Question `json:"questions,omitempty"`
	// Reproduces lays the run out as a published report's table, when
	// the profile is named after one (Reproduction).
	Reproduces *Reproduction `json:"reproduces,omitempty"`
	// Auto is set when the rounds ran until the questions were clear
	// (--rounds auto[:MAX]); Rounds is then the rounds taken.
	Auto *AutoRounds `json:"auto_rounds,omitempty"`
	// Pairs is how many client→server pairs every sample ran at once
	// (run --pairs N, docs/pairs.md); 0 (omitted) and 1 are one pair.
	Pairs int `json:"pairs,omitempty"`
	// ScenarioTests narrows what some scenarios measure: a scenario named
	// here runs only the tests listed for it (a profile's added-part
	// scenarios, which answer one row each); the others run every test.
	ScenarioTests map[string][]string `json:"scenario_tests,omitempty"`
}

// Measures tells whether the plan measures test in scenario.
func (p *Plan) Measures(scenario, test string) bool {
	only, ok := p.ScenarioTests[scenario]
	return !ok || slices.Contains(only, test)
}

// AutoRounds records a run that added rounds after the fifth until every
// question it could answer was conclusive, or MAX rounds.
type AutoRounds struct {
	Max int `json:"max"`
	// Level is the confidence level of each look (stats.SequentialLevel):
	// stricter than 95% so that looking after every round keeps the chance
	// of a false verdict at 5%. The questions' verdicts use it.
	Level float64 `json:"level"`
	// ConclusiveAt[i] is the round after which Questions[i] was first
	// conclusive; 0: never, or not asked of this run.
	ConclusiveAt []int `json:"conclusive_at"`
	// Stopped says why the rounds ended.
	Stopped string `json:"stopped"`
}

// Question is one comparison a profile is run to answer: Metric of Test
// on Placement, scenario B against scenario A, in that orientation
// ("ebpf vs iptables"). A question whose scenarios the run lacks (other
// --scenarios) is not asked.
type Question struct {
	Ask       string `json:"ask"` // in words: "pod-to-service connection rate"
	Test      string `json:"test"`
	Placement string `json:"placement"`
	Metric    string `json:"metric"`
	A         string `json:"a"` // the scenario compared against
	B         string `json:"b"`
	// NotMeasured is why the run could not measure B (its part cannot
	// apply on this target, or was refused before measuring): the
	// question is said with the reason and left out of the primary
	// family, never silently dropped.
	NotMeasured string `json:"not_measured,omitempty"`
}

// Placement is one cell of the placement matrix, as in cilium connectivity
// perf: Path (pod-to-pod, host-to-host, pod-to-service) × Node (same-node,
// other-node).
type Placement struct {
	Path   string `json:"path"`
	Node   string `json:"node"`
	Client string `json:"client"` // endpoint name, e.g. node0-pod0
	Server string `json:"server"`
	// ServerAddr is the address the client dialled.
	ServerAddr string `json:"server_addr"`
}

// Name is "path/node", e.g. "pod-to-pod/other-node".
func (p Placement) Name() string { return p.Path + "/" + p.Node }

// Result is one test on one placement, with every sample taken.
type Result struct {
	Scenario  string    `json:"scenario"`
	Test      string    `json:"test"` // suite test name, e.g. TCP_STREAM_MULTI
	Placement Placement `json:"placement"`
	// Options are the options of the test's kind (a pointer to its
	// options type, e.g. *engineapi.Options), written after Placement
	// under the kind's OptionsKey ("options", "http_options", ...:
	// stored.go).
	Options any `json:"-"`
	// Skipped is why the target could not run this test on this placement
	// (e.g. other-node on a one-node cluster); it then has no samples.
	Skipped string `json:"skipped,omitempty"`
	// Services is the Service-scale step this result belongs to (dummy
	// Services programmed); only meaningful when Run.Sweeps is set.
	Services int      `json:"services,omitempty"`
	Samples  []Sample `json:"samples"`
	// FlameGraph is where this test's CPU stacks were sampled, in an
	// extra sample after the rounds that no statistic uses (nil without
	// --flame-graph).
	FlameGraph *FlameGraph `json:"flame_graph,omitempty"`
	// Pairs are the placements of the client→server pairs each sample ran
	// at once (run --pairs N > 1; pair 0 is Placement), nil for one pair.
	Pairs []Placement `json:"pairs,omitempty"`
}

// FlameGraph is one profiled sample's stacks: the folded stacks and the
// rendered SVG sit beside results.json (paths relative to it).
type FlameGraph struct {
	CPUs    string    `json:"cpus"` // sampled, e.g. "0,1": the client's and server's
	Tool    string    `json:"tool"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Folded  string    `json:"folded,omitempty"` // "flamegraphs/<name>.folded"
	SVG     string    `json:"svg,omitempty"`
	Samples int       `json:"samples"`      // stack samples in the graph
	Idle    int       `json:"idle_samples"` // samples of an idle CPU, left out
	// Sample is the profiled sample itself (its numbers are not used:
	// sampling costs the CPUs it watches).
	Sample *Sample `json:"sample,omitempty"`
	Error  string  `json:"error,omitempty"` // why there is no graph
}

// Sample is one measurement (one round of one test on one placement).
type Sample struct {
	Round int       `json:"round"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Error string    `json:"error,omitempty"`
	// Result is what the sample's kind measured (a pointer to its result
	// type, e.g. *engineapi.Result; nil for a failed sample), written
	// after Error under the kind's Key ("engine", "http", ...: stored.go).
	Result any `json:"-"`
	// CPU used by the client's and server's endpoint (pod or node cgroup)
	// over the whole sample, including kernel work charged to them.
	ClientCPUSec float64 `json:"client_cpu_sec"`
	ServerCPUSec float64 `json:"server_cpu_sec"`
	// DatapathUsage is the CPU and memory of the datapath components on
	// the run's nodes during the sample (k8s target; nil when not read).
	DatapathUsage *DatapathUsage `json:"datapath_usage,omitempty"`
	// Host is how busy the machine the traffic ran on was during the
	// sample (lab target: this machine; nil elsewhere).
	Host *HostLoad `json:"host,omitempty"`
	// Pinned is what the CPUs the agents were pinned to spent during the
	// sample (lab target; nil elsewhere).
	Pinned *PinnedCPU `json:"pinned_cpu,omitempty"`
	// Churn is what the churn did to the datapath during the sample (a
	// churned scenario of a churn run; nil elsewhere).
	Churn *churn.Result `json:"churn,omitempty"`
	// Pairs are what each pair of a sample with several pairs measured
	// (pairs.go); Result is then their aggregate (kinds.Kind.Merge), and
	// ClientCPUSec and ServerCPUSec every pair's endpoints' CPU. nil for
	// one pair.
	Pairs []PairSample `json:"pairs,omitempty"`
	// Nodes is what each lab node spent during the sample (nodecpu.go).
	Nodes *NodesCPU `json:"nodes_cpu,omitempty"`
}

// PinnedCPU is the time the client's and server's CPUs spent over one
// sample, from /proc/stat (10 ms ticks), beside the endpoints' cgroup CPU.
// This kernel charges softirq to whatever task it interrupts, so most of
// the datapath's softirq is inside the endpoints' CPU already; what ran
// in the idle task's or ksoftirqd's context, kworkers and anything else on
// those CPUs is in no endpoint's: BusySec − ClientCPUSec − ServerCPUSec.
type PinnedCPU struct {
	CPUs       string  `json:"cpus"`        // the CPUs read, "0,1"; "all" when the agents were not pinned
	BusySec    float64 `json:"busy_sec"`    // user + nice + system + irq + softirq
	SoftirqSec float64 `json:"softirq_sec"` // irq + softirq, whoever was charged
	SystemSec  float64 `json:"system_sec"`
	UserSec    float64 `json:"user_sec"` // user + nice
}

// HostLoad is the machine's state over one sample, from /proc: a noisy
// neighbour shows as load, a busy hypervisor as steal.
type HostLoad struct {
	// StealPct is the share of CPU time the hypervisor gave to other
	// guests during the sample (/proc/stat steal over all CPU time).
	StealPct float64 `json:"steal_pct"`
	// Load1 is the 1-minute load average at the sample's end.
	Load1 float64 `json:"load1"`
	// BusyCores is how many CPUs the whole machine kept busy on average
	// during the sample (/proc/stat), and OwnCores how many of them the
	// benchmark's own processes used (the agents' cgroups and the
	// datapath processes the lab runs: proxies, daemons, flow consumers),
	// so that a loaded machine can be told from other work beside the
	// benchmark. Both 0 in results before they were recorded.
	BusyCores float64 `json:"busy_cores,omitempty"`
	OwnCores  float64 `json:"own_cores,omitempty"`
}

// OtherCores is the machine's busy cores that the benchmark's own
// processes did not use (never below 0): other work beside it, and kernel
// work charged to no process of ours.
func (h HostLoad) OtherCores() float64 { return max(0, h.BusyCores-h.OwnCores) }

// Measured is the sample's result, whichever kind produced it (nil for a
// failed sample): what package kinds reads metrics from.
func (s Sample) Measured() any { return s.Result }

// Kind is the engine kind of the result's test, as the test catalogue
// (package kinds) decides it. A test no longer in the catalogue is placed
// by the kind that owns its options.
func (r Result) Kind() string {
	if t, ok := kinds.LookupTest(r.Test); ok {
		return t.Kind
	}
	if k, ok := kinds.OfOptions(r.Options); ok {
		return k.Name
	}
	return KindStream
}
