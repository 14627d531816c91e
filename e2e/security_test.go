package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	labcfg "github.com/cnibench/cnibench/lab"
	cnbresults "github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/targets/labtarget"
	"github.com/cnibench/cnibench/targets/labtarget/part"
)

// securityLabs are the scenario labs of scenarios under l's --lab, named
// as the CLI names them (shortened with a hash when too long).
func securityLabs(t *testing.T, l *lab, scenarios ...string) []*lab {
	var suffixes []string
	for _, sc := range scenarios {
		n, err := cnbresults.ParseScenarioName(sc)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := labtarget.ScenarioConfig(n, labcfg.Config{Nodes: 2, PodsPerNode: 2})
		if err != nil {
			t.Fatal(err)
		}
		name := part.FitLabName(l.name+cfg.Lab.Name, l.name+"/"+sc)
		suffixes = append(suffixes, strings.TrimPrefix(name, l.name))
	}
	return scenarioLabs(t, l, suffixes...)
}

// What security and visibility cost, in one run: L3/L4 policy, L7 policy
// through a proxy and flow observability against the same datapath
// without them, for eBPF and iptables. Each feature is proved on before
// anything is measured (denied probes dropped and counted by the kernel,
// 403 from the proxy, flow events per probe connection), its numbers are
// compared with the plain datapath, and nothing of it is left afterwards.
func TestSecurityScenarios(t *testing.T) {
	l := newLab(t)
	scenarios := []string{"ebpf", "ebpf+policy", "ebpf+l7-sidecar", "ebpf+flows", "iptables", "iptables+policy", "iptables+policy-1000", "iptables+l7-node", "iptables+flows", "iptables+l7-egress"}
	labs := securityLabs(t, l, scenarios...)
	// Two scenario labs are up before the run and left up: what the run
	// adds to them (proxies and their nat rules, flow tables and tc
	// programs, Service programs) must be gone from them afterwards, not
	// only from the labs the run takes down.
	up := map[*lab]string{labs[2]: "ebpf", labs[8]: "iptables"} // ebpf+l7-sidecar, iptables+flows
	before := map[*lab]string{}
	for ul, dp := range up {
		if _, stderr, code := ul.run("lab", "up", "--service-datapath", dp); code != 0 {
			t.Fatalf("lab up %s: %s", ul.name, stderr)
		}
		before[ul] = labState(t, ul)
	}
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
	for _, sc := range run.Scenarios {
		checkFeatureDetails(t, sc.Name, sc.Target.Details)
	}
	for _, r := range run.Results {
		for _, s := range r.Samples {
			u := s.DatapathUsage
			switch {
			case s.Error != "":
				t.Errorf("%s %s: %s", r.Scenario, r.Test, s.Error)
			case strings.Contains(r.Scenario, "+l7-") && r.Test == "HTTP_RPS_C64" && (u == nil || u.CPUSec <= 0):
				t.Errorf("%s %s: no proxy CPU in %+v", r.Scenario, r.Test, u)
			case strings.HasSuffix(r.Scenario, "+flows") && (u == nil || u.FlowEvents == 0 || u.CPUSec <= 0 || len(u.Components) != 2):
				t.Errorf("%s %s: want flow events and each node's consumer CPU in %+v", r.Scenario, r.Test, u)
			case !strings.Contains(r.Scenario, "+") && u != nil:
				t.Errorf("%s %s: datapath usage %+v without a feature", r.Scenario, r.Test, u)
			}
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ebpf+policy vs ebpf", "iptables+l7-node vs iptables", "L3/L4 policy, enforcement checked before measuring: iptables:",
		"L7 policy on HTTP, checked before measuring", "Flow observability on, checked before measuring: nflog events", "| flow events (events/s) |",
		"## Policy scale", "- iptables (iptables enforcer): 0 rules per pod", "1,000 rules per pod: "} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	for ul := range up {
		if _, stderr, code := ul.run("lab", "status"); code != 0 {
			t.Fatalf("lab %s that was up is not after the run: %s", ul.name, stderr)
		}
		if after := labState(t, ul); after != before[ul] {
			t.Errorf("lab %s left up changed; after the run:\n%s\nbefore:\n%s", ul.name, after, before[ul])
		}
		if _, stderr, code := ul.run("lab", "down"); code != 0 {
			t.Fatalf("lab down %s: %s", ul.name, stderr)
		}
	}
	for _, sl := range append(labs, l) {
		if left := sl.leftovers(); len(left) > 0 {
			t.Errorf("lab %s left: %v", sl.name, left)
		}
	}
}

// stateScript prints a namespace's datapath state without counters:
// nftables, iptables, links, qdiscs and tc filters of every link.
const stateScript = `nft -s list ruleset
iptables-save | grep -v '^#' | sed 's/\[[0-9]*:[0-9]*\]/[0:0]/g'
ip -br link show
tc qdisc show
for d in $(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1); do
	tc filter show dev "$d" ingress; tc filter show dev "$d" egress
done
true`

// labState is what a run must leave as it found in a lab left up: each
// node's and pod's stateScript output, and the processes running from
// the lab's state dir (L7 proxies, agents).
func labState(t *testing.T, l *lab) string {
	t.Helper()
	var b strings.Builder
	for _, ep := range []string{"node0", "node1", "node0-pod0", "node0-pod1", "node1-pod0", "node1-pod1"} {
		out, stderr, code := l.run("lab", "exec", ep, "--", "sh", "-c", stateScript)
		if code != 0 {
			t.Fatalf("lab exec %s: %s", ep, stderr)
		}
		b.WriteString("== " + ep + "\n" + out)
	}
	procs, _ := exec.Command("pgrep", "-af", l.stateDir+"/"+l.name+"/").Output()
	b.WriteString("== processes\n" + string(procs))
	return b.String()
}

// checkFeatureDetails checks the proof each feature of scenario recorded:
// policy's denied probes dropped and counted, the proxy's 403, a SYN
// event per flows probe; a scenario without a feature records none.
func checkFeatureDetails(t *testing.T, scenario string, details map[string]any) {
	t.Helper()
	parts := strings.Split(scenario, "+")
	has := func(p string) bool { return slices.Contains(parts, p) }
	scaled := strings.HasPrefix(parts[len(parts)-1], "policy-")
	if has("policy") || scaled {
		var pol cnbresults.PolicyCheck
		decode(t, details["policy"], &pol)
		dropped := 0
		for _, p := range pol.Probes {
			if p.Want == "drop" && strings.HasPrefix(p.Got, "dropped") {
				dropped++
			}
		}
		if dropped == 0 || pol.Drops < uint64(dropped) || pol.Counts.Rules == 0 {
			t.Errorf("%s: policy check %+v: want denied probes dropped and counted by the kernel", scenario, pol)
		}
		if scaled && (pol.ScaleRules != 1000 || pol.Counts.Rules < 1000) {
			t.Errorf("%s: %d scale rules, %d rules held: want 1,000 dummies per server read back", scenario, pol.ScaleRules, pol.Counts.Rules)
		}
	} else if _, ok := details["policy"]; ok {
		t.Errorf("%s: policy details without policy", scenario)
	}
	if has("l7-node") || has("l7-egress") || has("l7-sidecar") {
		var l7 cnbresults.L7Check
		decode(t, details["l7"], &l7)
		if len(l7.Checks) == 0 || !strings.Contains(strings.Join(l7.Checks, ";"), " 403 from ") {
			t.Errorf("%s: L7 check %+v: want a 403 from the enforcing proxy", scenario, l7)
		}
	} else if _, ok := details["l7"]; ok {
		t.Errorf("%s: l7 details without L7", scenario)
	}
	if has("flows") {
		var fl cnbresults.FlowsCheck
		decode(t, details["flows"], &fl)
		if fl.SYNs < uint64(fl.Probes) || fl.Probes == 0 {
			t.Errorf("%s: flows check %+v: want a SYN event per probe connection", scenario, fl)
		}
	} else if _, ok := details["flows"]; ok {
		t.Errorf("%s: flows details with flows off", scenario)
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
