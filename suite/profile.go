package suite

import (
	"fmt"
	"strings"
	"time"

	"github.com/cnibench/cnibench/datapath/sweep"
	"github.com/cnibench/cnibench/results"
)

// Profile is a named default plan.
type Profile struct {
	Name       string
	About      string
	Tests      []string
	Placements []string
	Rhythm
	// Scenarios are the lab scenarios run side by side when --scenarios
	// is not given (the lab target; a cluster is its one scenario).
	Scenarios []string
	// ScenarioTests narrows what some scenarios measure
	// (results.Plan.ScenarioTests): an added-part scenario that answers
	// one row of a report runs that row's test only.
	ScenarioTests map[string][]string
	// Ask is the profile's question in words (the report's title), and
	// Questions the comparisons that answer it (results.Plan.Questions).
	Ask       string
	Questions []results.Question
	// Reproduces lays the report out as a published report's table
	// (profile_published.go); nil for a profile of our own.
	Reproduces *results.Reproduction
	// OnCluster lets the profile run on a cluster although its columns
	// are lab scenarios: the cluster fills the column that models its
	// datapath (OnCluster, profile_cluster.go).
	OnCluster bool
	// Scale: the report has rows at Service counts (tke), which the lab
	// sweeps after the rounds, in the same run (ScaleRows); nil for none.
	Scale *ScaleRows
}

// ScaleRows are a profile's rows at Service counts: after its rounds, the
// Service-scale sweep of Tests on Scenarios over Steps dummy Services of
// Endpoints endpoints each (step 0 is the rounds' own measurement).
type ScaleRows struct {
	Steps     []int
	Endpoints int
	Tests     []string
	Scenarios []string
	// MaxStepTime is --max-step-time unless given: a datapath whose next
	// step's programming is predicted to take longer stops there, its
	// rows saying so, so the profile keeps the time it states.
	MaxStepTime time.Duration
}

// After is the schedule that measures first, then sweeps the rows
// (sweep.Options as the sweep's flags resolve them).
func (s *ScaleRows) After(first Schedule, o sweep.Options) Sequence {
	return Sequence{first, s.sweep(o)}
}

func (s *ScaleRows) sweep(o sweep.Options) *ServiceScale {
	return &ServiceScale{Sweep: o, Tests: s.Tests, Scenarios: s.Scenarios, AfterRounds: true}
}

// StepsFromZero are the sweep's steps: 0 (the rounds' state, programmed
// and recorded, not measured again), then Steps.
func (s *ScaleRows) StepsFromZero() []int {
	return append([]int{0}, s.Steps...)
}

// Estimate is the sweep's measuring time on the named scenarios after p's
// rounds (programming left out).
func (s *ScaleRows) Estimate(p *Plan, scenarios []string) time.Duration {
	return s.sweep(sweep.Options{Steps: s.StepsFromZero()}).Estimate(p, scenarios)
}

// Rhythm is how long and how often a profile measures each cell.
type Rhythm struct {
	Duration time.Duration
	Warmup   time.Duration
	Rounds   int
	Streams  int
	// Pairs is the client→server pairs each sample runs at once unless
	// --pairs says otherwise (0: one).
	Pairs int
	// UDPMessageSize is the UDP stream tests' datagram size unless
	// --msg-size says otherwise (0: the engine's, 1,400 bytes).
	UDPMessageSize int
}

// interleaved is the lab profiles' rhythm: 5 interleaved rounds (the
// fewest a verdict needs) of 2 s after 0.5 s of warm-up, with streams
// flows where a test has several.
func interleaved(streams int) Rhythm {
	return Rhythm{Duration: 2 * time.Second, Warmup: 500 * time.Millisecond, Rounds: 5, Streams: streams}
}

// datapathQuestions are the datapaths profile's: what eBPF changes
// against iptables for connections, short HTTP and request-response,
// through a Service and between pods.
func datapathQuestions() []results.Question {
	var qs []results.Question
	for _, pl := range []struct{ name, words string }{{PodToServiceOtherNode, "pod-to-service"}, {PodToPodOtherNode, "pod-to-pod"}} {
		for _, t := range []struct{ test, metric, words string }{
			{"TCP_CRR", "rate", "connection rate"},
			{"HTTP_RPS_SHORT_C64", "request rate", "short-connection HTTP"},
			{"TCP_RR", "rate", "request-response rate"},
		} {
			qs = append(qs, results.Question{Ask: pl.words + " " + t.words, Test: t.test, Placement: pl.name, Metric: t.metric, A: "iptables", B: "ebpf"})
		}
	}
	return qs
}

// addedPartQuestions ask what each scenario that adds a part to a base
// costs on one metric: "base+part" against "base".
func addedPartQuestions(scenarios []string, test, placement, metric, words string) []results.Question {
	var qs []results.Question
	for _, b := range scenarios {
		for _, a := range scenarios {
			if strings.HasPrefix(b, a+"+") && !strings.Contains(strings.TrimPrefix(b, a+"+"), "+") {
				part := strings.TrimPrefix(b, a+"+")
				qs = append(qs, results.Question{Ask: fmt.Sprintf("%s: %s %s", a, part, words), Test: test, Placement: placement, Metric: metric, A: a, B: b})
			}
		}
	}
	return qs
}

// SecurityProfile is the profile a cluster runs as twins (TwinQuestions).
const SecurityProfile = "security"

// SecurityParts are the parts the security profile adds to a datapath,
// each against the same datapath without it.
var SecurityParts = []string{"policy", "l7-node", "l7-egress", "l7-sidecar", "flows"}

// securityQuestion is the security profile's one question shape: what a
// part costs short-connection HTTP through a Service across nodes.
const (
	securityTest   = "HTTP_RPS_SHORT_C64"
	securityMetric = "request rate"
	securityWords  = "cost on short-connection HTTP"
)

// securityScenarios are the lab's: each part on both datapaths, every
// node finishing its own receive work (node-rps).
func securityScenarios() []string {
	var out []string
	for _, dp := range []string{"iptables+node-rps", "ebpf+node-rps"} {
		out = append(out, dp)
		for _, p := range SecurityParts {
			out = append(out, dp+"+"+p)
		}
	}
	return out
}

// TwinQuestions are the security profile's questions asked of one target
// measured as twins (a cluster): base+part against base for every part,
// one datapath instead of the lab's two.
func TwinQuestions(base string) []results.Question {
	var scs []string
	for _, p := range SecurityParts {
		scs = append(scs, base+"+"+p)
	}
	return addedPartQuestions(append([]string{base}, scs...), securityTest, PodToServiceOtherNode, securityMetric, securityWords)
}

var encryptionScenarios = []string{"native", "native+wireguard", "vxlan", "vxlan+wireguard"}

// Profiles: quick answers in under 3 minutes on 2 cores; standard repeats
// rounds so the statistics have something to work with.
var Profiles = append([]Profile{
	{
		Name:       "quick",
		About:      "the TCP, UDP and HTTP tests on every placement once, 4 s each, no DNS; under 3 min",
		Tests:      []string{"TCP_STREAM", "TCP_STREAM_MULTI", "UDP_STREAM", "TCP_RR", "UDP_RR", "TCP_CRR", "HTTP_RPS_C64", "HTTP_RPS_SHORT_C64"},
		Placements: AllPlacements,
		Rhythm:     Rhythm{Duration: 4 * time.Second, Warmup: 1 * time.Second, Rounds: 1, Streams: 4},
	},
	{
		Name: "datapaths",
		About: "kube-proxy-style iptables vs eBPF Service datapaths side by side: TCP_RR, TCP_CRR and HTTP_RPS_SHORT_C64 on " +
			"pod-to-service/other-node, and pod-to-pod/other-node (what the datapath costs traffic without a Service), " +
			"5 interleaved rounds of 2 s; under 5 min (the quickstart)",
		Tests:      []string{"TCP_RR", "TCP_CRR", "HTTP_RPS_SHORT_C64"},
		Placements: []string{PodToServiceOtherNode, PodToPodOtherNode},
		Rhythm:     interleaved(4),
		Scenarios:  []string{"iptables", "ebpf"},
		Ask:        "what the eBPF Service datapath changes against kube-proxy-style iptables",
		Questions:  datapathQuestions(),
	},
	{
		Name: SecurityProfile,
		About: "what NetworkPolicy, an L7 proxy (per node on the server's node or the client's, and as sidecars) and flow observability cost, each against the same " +
			"datapath without it, for iptables and eBPF: HTTP_RPS_C64, HTTP_RPS_SHORT_C64 and TCP_CRR on pod-to-service/other-node, " +
			"every feature proved on before measuring, each node finishing what it receives on its own CPUs (node-rps: else the client's CPU carries " +
			"the server node's work and a proxy that shortens the client's path looks free), 5 interleaved rounds of 2 s; about 10 min",
		Tests:      []string{"HTTP_RPS_C64", "HTTP_RPS_SHORT_C64", "TCP_CRR"},
		Placements: []string{PodToServiceOtherNode},
		Rhythm:     interleaved(4),
		Scenarios:  securityScenarios(),
		Ask:        "what NetworkPolicy, L7 proxies and flow observability cost each datapath",
		Questions:  addedPartQuestions(securityScenarios(), securityTest, PodToServiceOtherNode, securityMetric, securityWords),
	},
	{
		Name: "encryption",
		About: "what WireGuard between the nodes costs, natively routed and under VXLAN, each against the same path without it: " +
			"TCP_STREAM (1 stream), TCP_STREAM_MULTI (N), TCP_RR and TCP_CRR on pod-to-pod/other-node with CPU per unit of work " +
			"on both ends, in softirq and in the WireGuard daemons, encryption proved on before measuring, 5 interleaved rounds " +
			"of 2 s; about 5 min",
		Tests:      []string{"TCP_STREAM", "TCP_STREAM_MULTI", "TCP_RR", "TCP_CRR"},
		Placements: []string{PodToPodOtherNode},
		Rhythm:     interleaved(4),
		Scenarios:  encryptionScenarios,
		Ask:        "what WireGuard between the nodes costs, natively routed and under VXLAN",
		Questions: append(addedPartQuestions(encryptionScenarios, "TCP_STREAM", PodToPodOtherNode, "throughput", "cost on throughput"),
			addedPartQuestions(encryptionScenarios, "TCP_RR", PodToPodOtherNode, "rate", "cost on request-response rate")...),
	},
	{
		Name: "tuning",
		About: "the tuning matrix on the eBPF datapath, each tuning against ebpf without it: congestion control cubic and bbr, " +
			"GRO on, GSO off, MTU 9000, conntrack bypass (notrack), busy polling, the socket LB off; TCP_STREAM, TCP_RR and TCP_CRR " +
			"on pod-to-service/other-node, every tuning read back before measuring (one that cannot apply on this host is reported " +
			"so and measured never), 5 interleaved rounds of 2 s; about 6 min",
		Tests:      []string{"TCP_STREAM", "TCP_RR", "TCP_CRR"},
		Placements: []string{PodToServiceOtherNode},
		Rhythm:     interleaved(4),
		Scenarios: []string{"ebpf", "ebpf+cc-cubic", "ebpf+cc-bbr", "ebpf+gro-on", "ebpf+gso-off", "ebpf+mtu-9000", "ebpf+notrack",
			"ebpf+busy-poll", "ebpf+socklb-off"},
	},
	{
		Name:       "standard",
		About:      "every test on every placement, 10 s each, 5 interleaved rounds (the fewest a verdict needs); fortio's tests by name only",
		Tests:      StandardTestNames(),
		Placements: AllPlacements,
		Rhythm:     Rhythm{Duration: 10 * time.Second, Warmup: 2 * time.Second, Rounds: 5, Streams: 4},
	},
}, publishedProfiles()...)

// LookupProfile finds a profile by name.
func LookupProfile(name string) (Profile, error) {
	var names []string
	for _, p := range Profiles {
		if p.Name == strings.ToLower(strings.TrimSpace(name)) {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return Profile{}, fmt.Errorf("unknown profile %q (known: %s)", name, strings.Join(names, ", "))
}

// ProfileNames are the profiles' names, in the order they are listed.
func ProfileNames() []string {
	var out []string
	for _, p := range Profiles {
		out = append(out, p.Name)
	}
	return out
}
