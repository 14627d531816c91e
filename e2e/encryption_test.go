package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	cnbresults "github.com/cnibench/cnibench/results"
)

// WireGuard between the nodes, natively routed and under VXLAN, against
// the same paths without it, in one run: each encrypted scenario proves
// before measuring that pod traffic between nodes goes through every
// node's WireGuard device both ways, its samples carry the daemons' CPU
// as the datapath's, the report says how traffic was encrypted, and the
// labs, daemons included, are gone afterwards.
func TestEncryptionScenarios(t *testing.T) {
	l := newLab(t)
	scenarios := []string{"native", "native+wireguard", "vxlan", "vxlan+wireguard"}
	labs := securityLabs(t, l, scenarios...)
	// The vxlan+wireguard lab is up before the run and stays up: the run
	// pins its daemons for its length only.
	up := labs[3]
	if _, stderr, code := up.run("lab", "up", "--routing", "vxlan", "--encryption", "wireguard"); code != 0 {
		t.Fatalf("lab up: %s", stderr)
	}
	before := daemonAffinity(t, up)
	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := l.run("run", "--scenarios", strings.Join(scenarios, ","), "--tests", "TCP_STREAM,TCP_CRR",
		"--placements", "pod-to-pod/other-node", "--rounds", "1", "--duration", "400ms", "--warmup", "100ms", "--out", out)
	if code != 0 {
		t.Fatalf("run exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	run, err := cnbresults.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range run.Scenarios {
		raw, ok := sc.Target.Details["encryption"]
		if ok != strings.HasSuffix(sc.Name, "+wireguard") {
			t.Errorf("%s: encryption details %v", sc.Name, raw)
			continue
		}
		if !ok {
			continue
		}
		var c cnbresults.EncryptionCheck
		decode(t, raw, &c)
		wantMTU := map[string]int{"native+wireguard": 1440, "vxlan+wireguard": 1390}[sc.Name]
		if c.MTU != wantMTU || len(c.Probes) != 1 || !strings.Contains(c.Probes[0], "packets out (encrypted)") || c.Kernel == "" {
			t.Errorf("%s: check %+v, want MTU %d and a probe through both devices", sc.Name, c, wantMTU)
		}
		if runtime.NumCPU() >= 2 && len(c.Pinned) != 2 {
			t.Errorf("%s: daemons pinned %q, want both nodes' on their agents' CPUs", sc.Name, c.Pinned)
		}
	}
	for _, r := range run.Results {
		for _, s := range r.Samples {
			if s.Error != "" {
				t.Errorf("%s %s: %s", r.Scenario, r.Test, s.Error)
				continue
			}
			encrypted := strings.HasSuffix(r.Scenario, "+wireguard")
			if u := s.DatapathUsage; encrypted != (u != nil) || encrypted && (len(u.Components) != 2 || u.CPUSec <= 0) {
				t.Errorf("%s %s: datapath usage %+v, want the two daemons' CPU exactly when encrypted", r.Scenario, r.Test, u)
			}
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Encryption between nodes, proved before measuring: wireguard by wireguard-go", "vxlan+wireguard vs vxlan"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if after := daemonAffinity(t, up); after != before {
		t.Errorf("the WireGuard daemons of the lab left up kept the run's CPUs:\n%s\nbefore:\n%s", after, before)
	}
	if _, stderr, code := up.run("lab", "down"); code != 0 {
		t.Fatalf("lab down: %s", stderr)
	}
	for _, sl := range append(labs, l) {
		if left := sl.leftovers(); len(left) > 0 {
			t.Errorf("lab %s left: %v", sl.name, left)
		}
	}
}

// daemonAffinity is, per node of l, the distinct CPU lists its WireGuard
// daemon's threads may run on (from lab state and /proc).
func daemonAffinity(t *testing.T, l *lab) string {
	t.Helper()
	var st struct {
		Nodes []struct {
			Name      string `json:"name"`
			WireGuard *struct {
				PID int `json:"pid"`
			} `json:"wireguard"`
		} `json:"nodes"`
	}
	b, err := os.ReadFile(filepath.Join(l.stateDir, l.name, "state.json"))
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, n := range st.Nodes {
		if n.WireGuard == nil || n.WireGuard.PID == 0 {
			t.Fatalf("%s: no WireGuard daemon in the lab's state", n.Name)
		}
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", n.WireGuard.PID))
		if len(tasks) == 0 {
			t.Fatalf("%s: daemon %d not running", n.Name, n.WireGuard.PID)
		}
		seen := map[string]bool{}
		for _, task := range tasks {
			sb, _ := os.ReadFile(task)
			for _, line := range strings.Split(string(sb), "\n") {
				if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok && !seen[strings.TrimSpace(v)] {
					seen[strings.TrimSpace(v)] = true
					fmt.Fprintf(&out, "%s %s\n", n.Name, strings.TrimSpace(v))
				}
			}
		}
	}
	return out.String()
}
