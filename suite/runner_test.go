package suite

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/dnsload"
	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/results"
)

// loopTarget is a target whose every endpoint is one real agent on
// 127.0.0.1: enough to check how the runner orders and records samples.
type loopTarget struct {
	client *agent.Client
	calls  *[]string
	name   string
}

func (t loopTarget) Kind() string            { return "loopback" }
func (t loopTarget) Details() map[string]any { return map[string]any{"name": t.name} }
func (t loopTarget) Placement(name string) (results.Placement, error) {
	path, node, _ := strings.Cut(name, "/")
	return results.Placement{Path: path, Node: node, Client: "c", Server: "s", ServerAddr: "127.0.0.1"}, nil
}
func (t loopTarget) Agent(string) (*agent.Client, error) {
	*t.calls = append(*t.calls, t.name)
	return t.client, nil
}
func (t loopTarget) CPUSeconds(string) (float64, error) { return 0, errors.New("no accounting") }
func (loopTarget) Close() error                         { return nil }

func startAgent(t *testing.T) *agent.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sock := filepath.Join(t.TempDir(), "a.sock")
	done := make(chan error, 1)
	go func() {
		done <- agent.Serve(ctx, agent.Config{Control: "unix:" + sock, Token: "secret", Bind: "127.0.0.1"})
	}()
	t.Cleanup(func() { cancel(); <-done })
	c, err := agent.NewClient("loop", "unix:"+sock, "secret")
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan error, 1)
	go func() { ready <- c.WaitReady(ctx, 5*time.Second) }()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case err := <-done: // the agent could not start: say why, not "not ready"
		done <- err
		t.Fatalf("agent stopped before it was ready: %v", err)
	}
	return c
}

// Scenarios alternate within every round (A B A B), results.json holds
// every sample, and each result is tagged with its scenario.
func TestRunnerInterleavesScenarios(t *testing.T) {
	c := startAgent(t)
	var calls []string
	plan, err := Options{Tests: []string{"TCP_RR", "UDP_RR"}, Placements: []string{"pod-to-pod/same-node"}, Rounds: 2, Duration: 150 * time.Millisecond}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	plan.Warmup = 0
	out := t.TempDir()
	r := &Runner{
		Scenarios: []Scenario{{Name: "a", Target: loopTarget{c, &calls, "a"}}, {Name: "b", Target: loopTarget{c, &calls, "b"}}},
		Plan:      plan, OutDir: out, RunID: "test",
	}
	run, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(calls, ""); got != "abababab" {
		t.Fatalf("sample order %q, want abababab (2 rounds × 2 tests, scenarios alternating)", got)
	}
	disk, err := results.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if disk.Status != results.StatusComplete || len(disk.Scenarios) != 2 || len(disk.Results) != 4 {
		t.Fatalf("results on disk: status %s, %d scenarios, %d results", disk.Status, len(disk.Scenarios), len(disk.Results))
	}
	for _, res := range run.Results {
		if len(res.Samples) != 2 {
			t.Errorf("%s %s: %d samples, want 2", res.Scenario, res.Test, len(res.Samples))
		}
		for _, s := range res.Samples {
			if s.Error != "" || s.Result == nil || s.Result.(*engine.Result).Transactions == 0 {
				t.Errorf("%s %s: bad sample %+v", res.Scenario, res.Test, s)
			}
		}
	}
	if run.Results[0].Scenario != "a" || run.Results[1].Scenario != "b" {
		t.Errorf("results not tagged by scenario: %q %q", run.Results[0].Scenario, run.Results[1].Scenario)
	}
}

// A scenario the plan narrows (Plan.ScenarioTests) measures only its
// tests: no Result for the others, none of their samples taken, and the
// estimate counts only what is measured.
func TestRunnerScenarioTests(t *testing.T) {
	c := startAgent(t)
	var calls []string
	plan, err := Options{Tests: []string{"TCP_RR", "UDP_RR"}, Placements: []string{"pod-to-pod/same-node"}, Rounds: 2, Duration: 100 * time.Millisecond}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	plan.Warmup = 0
	plan.ScenarioTests = map[string][]string{"b": {"UDP_RR"}}
	if got, want := (&Rounds{}).Estimate(plan, []string{"a", "b"}), 3*2*100*time.Millisecond; got != want {
		t.Errorf("estimate %s, want %s (a: 2 tests, b: 1, 2 rounds)", got, want)
	}
	r := &Runner{
		Scenarios: []Scenario{{Name: "a", Target: loopTarget{c, &calls, "a"}}, {Name: "b", Target: loopTarget{c, &calls, "b"}}},
		Plan:      plan, OutDir: t.TempDir(), RunID: "test",
	}
	run, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(calls, ""); got != "aabaab" {
		t.Fatalf("sample order %q, want aabaab (per round: a TCP_RR, a UDP_RR, b UDP_RR)", got)
	}
	var got []string
	for _, res := range run.Results {
		got = append(got, res.Scenario+" "+res.Test)
		if len(res.Samples) != 2 {
			t.Errorf("%s %s: %d samples, want 2", res.Scenario, res.Test, len(res.Samples))
		}
	}
	if strings.Join(got, ", ") != "a TCP_RR, a UDP_RR, b UDP_RR" {
		t.Errorf("results %v, want b's TCP_RR left out", got)
	}
	if run.Plan.ScenarioTests["b"][0] != "UDP_RR" {
		t.Errorf("the narrowing is not recorded in the run's plan: %v", run.Plan.ScenarioTests)
	}
}

// A cancelled run is marked interrupted and keeps what it completed.
func TestRunnerInterrupted(t *testing.T) {
	c := startAgent(t)
	var calls []string
	plan, err := Options{Tests: []string{"TCP_RR"}, Placements: []string{"pod-to-pod/same-node"}, Rounds: 100, Duration: 100 * time.Millisecond}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	plan.Warmup = 0
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 450*time.Millisecond)
	defer cancel()
	r := &Runner{Scenarios: []Scenario{{Name: "a", Target: loopTarget{c, &calls, "a"}}}, Plan: plan, OutDir: out, RunID: "test"}
	if _, err := r.Run(ctx); err == nil {
		t.Fatal("cancelled run returned no error")
	}
	disk, err := results.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	n := len(disk.Results[0].Samples)
	if disk.Status != results.StatusInterrupted {
		t.Fatalf("status %s", disk.Status)
	}
	if n < 1 || n >= 100 {
		t.Fatalf("%d samples kept", n)
	}
}

// HTTP tests run the HTTP engine through the agent and record its result
// in the sample; the summary reads their rate and latency.
func TestRunnerHTTP(t *testing.T) {
	c := startAgent(t)
	var calls []string
	plan, err := Options{Tests: []string{"HTTP_RPS_C64", "HTTP_QPS_1000"}, Placements: []string{"pod-to-pod/same-node"}, Rounds: 1, Duration: 300 * time.Millisecond}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	plan.Warmup = 0
	r := &Runner{Scenarios: []Scenario{{Name: "a", Target: loopTarget{c, &calls, "a"}}}, Plan: plan, OutDir: t.TempDir(), RunID: "test"}
	run, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range run.Results {
		if _, ok := res.Options.(*httpload.Options); !ok {
			t.Fatalf("%s: options %T recorded, want HTTP options", res.Test, res.Options)
		}
		s := res.Samples[0]
		h, ok := s.Result.(*httpload.Result)
		if s.Error != "" || !ok || h.OK == 0 || h.Latency == nil {
			t.Fatalf("%s: bad sample %+v", res.Test, s)
		}
		sum, err := results.Summarize(res)
		if err != nil {
			t.Fatal(err)
		}
		if !sum.IsRequestReply || sum.RatePerSec != h.RPS || sum.Latency == nil {
			t.Errorf("%s: summary %+v does not reflect the HTTP sample (rps %.0f)", res.Test, sum, h.RPS)
		}
	}
	if q := run.Results[1].Options.(*httpload.Options).QPS; q != 1000 {
		t.Errorf("HTTP_QPS_1000 ran at QPS %v", q)
	}
}

// DNS tests query the server agent's dnsmasq through the client agent and
// keep the DNS result in the sample.
func TestRunnerDNS(t *testing.T) {
	if _, err := exec.LookPath("dnsmasq"); err != nil {
		if _, err := os.Stat("/usr/sbin/dnsmasq"); err != nil {
			t.Skip("dnsmasq not installed (apt-get install dnsmasq-base)")
		}
	}
	const dnsPort = 15353 // off 53, which the machine's resolver may hold
	ctx, cancel := context.WithCancel(context.Background())
	sock := filepath.Join(t.TempDir(), "a.sock")
	done := make(chan error, 1)
	go func() {
		done <- agent.Serve(ctx, agent.Config{Control: "unix:" + sock, Bind: "127.0.0.1",
			DNS: dnsload.ServerSpec{Listen: "127.0.0.1", Port: dnsPort}})
	}()
	t.Cleanup(func() { cancel(); <-done })
	c, err := agent.NewClient("loop", "unix:"+sock, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	var calls []string
	plan, err := Options{Tests: []string{"DNS_QPS_MAX", "DNS_QPS_1000"}, Placements: []string{"pod-to-pod/same-node"}, Rounds: 1, Duration: 400 * time.Millisecond}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	plan.Warmup, plan.Ports = 0, map[string]int{"dns": dnsPort}
	r := &Runner{Scenarios: []Scenario{{Name: "a", Target: loopTarget{c, &calls, "a"}}}, Plan: plan, OutDir: t.TempDir(), RunID: "test"}
	run, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range run.Results {
		s := res.Samples[0]
		d, ok := s.Result.(*dnsload.Result)
		if o, _ := res.Options.(*dnsload.Options); o == nil || o.Port != dnsPort || s.Error != "" || !ok || d.OK == 0 || d.Latency == nil {
			t.Fatalf("%s: bad sample %+v", res.Test, s)
		}
		m, err := results.Metrics(res)
		if err != nil || m.Kind != results.KindDNS || len(m.Headlines()) == 0 {
			t.Fatalf("%s: metrics %+v %v", res.Test, m, err)
		}
	}
	if q := run.Results[1].Samples[0].Result.(*dnsload.Result).TargetQPS; q != 1000 {
		t.Errorf("DNS_QPS_1000 ran at target %v", q)
	}
}
