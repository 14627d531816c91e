package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	labcfg "github.com/cnibench/cnibench/lab"
	cnbresults "github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/targets/labtarget"
)

// securityLabs are the scenario labs of scenarios under l's --lab, named
// as the CLI names them (shortened with a hash when too long).
func securityLabs(t *testing.T, l *lab, scenarios ...string) []*lab {
	var suffixes []string
	for _, sc := range scenarios {
		cfg, err := labtarget.ScenarioConfig(sc, labcfg.Config{Nodes: 2, PodsPerNode: 2})
		if err != nil {
			t.Fatal(err)
		}
		name := labtarget.FitLabName(l.name+cfg.Name, l.name+"/"+sc)
		suffixes = append(suffixes, strings.TrimPrefix(name, l.name))
	}
	return scenarioLabs(t, l, suffixes...)
}

// What security and visibility cost, in one run: L3/L4 policy, L7 policy
// through sidecars and flow observability against the same eBPF datapath
// without them. Each feature is proved on before anything is measured
// (a denied probe dropped and counted, 403 from the proxy, flow events
// per probe connection), its numbers are compared with the plain
// datapath, and nothing of it is left afterwards.
func TestSecurityScenarios(t *testing.T) {
	l := newLab(t)
	scenarios := []string{"ebpf", "ebpf+policy", "ebpf+l7-sidecar", "ebpf+flows"}
	labs := securityLabs(t, l, scenarios...)
	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := l.run("run", "--scenarios", strings.Join(scenarios, ","), "--tests", "TCP_CRR,HTTP_RPS_C64",
		"--placements", "pod-to-pod/other-node", "--rounds", "1", "--duration", "400ms", "--warmup", "100ms", "--out", out)
	if code != 0 {
		if strings.Contains(stderr, "unsupported") {
			t.Skipf("unsupported here: %s", stderr)
		}
		t.Fatalf("run exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	run, err := cnbresults.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	details := map[string]map[string]any{}
	for _, sc := range run.Scenarios {
		details[sc.Name] = sc.Target.Details
	}
	var pol labtarget.PolicyCheck
	decode(t, details["ebpf+policy"]["policy"], &pol)
	dropped := 0
	for _, p := range pol.Probes {
		if p.Want == "drop" && strings.HasPrefix(p.Got, "dropped") {
			dropped++
		}
	}
	if dropped == 0 || pol.Drops < uint64(dropped) || pol.Counts.Rules == 0 {
		t.Errorf("policy check %+v: want denied probes dropped and counted by the kernel", pol)
	}
	var l7 labtarget.L7Check
	decode(t, details["ebpf+l7-sidecar"]["l7"], &l7)
	if len(l7.Checks) == 0 || !strings.Contains(strings.Join(l7.Checks, ";"), " 403 from server-") {
		t.Errorf("L7 check %+v: want a 403 from the server sidecar", l7)
	}
	var fl labtarget.FlowsCheck
	decode(t, details["ebpf+flows"]["flows"], &fl)
	if fl.SYNs < uint64(fl.Probes) || fl.Probes == 0 {
		t.Errorf("flows check %+v: want a SYN event per probe connection", fl)
	}
	for _, k := range []string{"policy", "l7", "flows"} {
		if _, ok := details["ebpf"][k]; ok {
			t.Errorf("the plain ebpf scenario has %s details", k)
		}
	}
	for _, r := range run.Results {
		for _, s := range r.Samples {
			u := s.DatapathUsage
			switch {
			case s.Error != "":
				t.Errorf("%s %s: %s", r.Scenario, r.Test, s.Error)
			case r.Scenario == "ebpf+l7-sidecar" && r.Test == "HTTP_RPS_C64" && (u == nil || u.CPUSec <= 0):
				t.Errorf("%s %s: no proxy CPU in %+v", r.Scenario, r.Test, u)
			case r.Scenario == "ebpf+flows" && (u == nil || u.FlowEvents == 0):
				t.Errorf("%s %s: no flow events in %+v", r.Scenario, r.Test, u)
			case r.Scenario == "ebpf" && u != nil:
				t.Errorf("%s %s: datapath usage %+v without a feature", r.Scenario, r.Test, u)
			}
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ebpf+policy vs ebpf", "ebpf+l7-sidecar vs ebpf", "L3/L4 policy, enforcement checked before measuring: ebpf:",
		"L7 policy on HTTP, checked before measuring", "Flow observability on, checked before measuring: ebpf events", "| flow events (events/s) |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	for _, sl := range append(labs, l) {
		if left := sl.leftovers(); len(left) > 0 {
			t.Errorf("lab %s left: %v", sl.name, left)
		}
	}
}

// decode turns a details value (a map after loading) into v.
func decode(t *testing.T, raw any, v any) {
	t.Helper()
	b, err := json.Marshal(raw)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil || string(b) == "null" {
		t.Fatalf("details %s: %v", b, err)
	}
}
