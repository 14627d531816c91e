package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/lab/tuning"
	cnbresults "github.com/cnibench/cnibench/results"
)

// The tuning matrix in one run: each tuning is read back before anything
// is measured under it and recorded as applied; busy polling, which the
// lab cannot have, is recorded as not applicable and nothing is measured
// in its name; socklb-off is the eBPF datapath translating per packet. A
// lab that was up before the run gets the scenario's tunings for the
// run's length only: afterwards its namespaces hold what they held
// before, and the labs the run made are gone.
func TestTuningScenarios(t *testing.T) {
	l := newLab(t)
	scenarios := []string{"ebpf", "ebpf+cc-reno+mtu-9000+node-rps", "ebpf+gro-on", "ebpf+busy-poll", "ebpf+socklb-off"}
	labs := securityLabs(t, l, scenarios...)
	up := labs[1] // the cc-reno+mtu-9000+node-rps lab, up before the run and left up
	if _, stderr, code := up.run("lab", "up", "--service-datapath", "ebpf"); code != 0 {
		t.Fatalf("lab up: %s", stderr)
	}
	state := func() string {
		var b strings.Builder
		for _, ep := range []string{"node0", "node0-pod0", "node1-pod0"} {
			cc, stderr, code := up.run("lab", "exec", ep, "--", "cat", "/proc/sys/net/ipv4/tcp_congestion_control")
			links, stderr2, code2 := up.run("lab", "exec", ep, "--", "ip", "-o", "link", "show")
			if code != 0 || code2 != 0 {
				t.Fatalf("lab exec %s: %s%s", ep, stderr, stderr2)
			}
			b.WriteString(ep + " cc " + cc)
			for _, line := range strings.Split(links, "\n") {
				if f := strings.Fields(line); len(f) > 4 {
					b.WriteString(ep + " " + f[1] + " mtu " + f[4] + "\n")
				}
			}
		}
		return b.String()
	}
	before := state()
	if !strings.Contains(before, "mtu 1500") {
		t.Fatalf("a new lab without MTU 1500 links:\n%s", before)
	}

	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := l.run("run", "--scenarios", strings.Join(scenarios, ","), "--tests", "TCP_STREAM,TCP_RR",
		"--placements", "pod-to-service/other-node", "--rounds", "1", "--duration", "300ms", "--warmup", "100ms", "--out", out)
	if code != 0 {
		if strings.Contains(stderr, "unsupported") && strings.Contains(stderr, "on this kernel") { // a missing tool is setup's bug, not a skip
			t.Skipf("unsupported here: %s", stderr)
		}
		t.Fatalf("run exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	run, err := cnbresults.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{ // scenario → tuning → status
		"ebpf+cc-reno+mtu-9000+node-rps": {"cc-reno": tuning.Applied, "mtu-9000": tuning.Applied, "node-rps": tuning.Applied},
		"ebpf+gro-on":                    {"gro-on": tuning.Applied},
		"ebpf+busy-poll":                 {"busy-poll": tuning.NotApplicable},
	}
	for _, sc := range run.Scenarios {
		var checks []tuning.Check
		if raw, ok := sc.Target.Details["tuning"]; ok {
			decode(t, raw, &checks)
		}
		got := map[string]string{}
		for _, c := range checks {
			got[c.Name] = c.Status
			if c.Status == tuning.Applied && (c.Sites == 0 || !strings.HasPrefix(c.Detail, "read back: ")) {
				t.Errorf("%s: %+v applied without a read-back", sc.Name, c)
			}
		}
		if len(got) != len(want[sc.Name]) {
			t.Errorf("%s: tunings %v, want %v", sc.Name, got, want[sc.Name])
		}
		for name, status := range want[sc.Name] {
			if got[name] != status {
				t.Errorf("%s: %s %q, want %q", sc.Name, name, got[name], status)
			}
		}
		d := sc.Target.Details
		switch sc.Name {
		case "ebpf+cc-reno+mtu-9000+node-rps":
			if d["mtu"] != float64(9000) {
				t.Errorf("%s: mtu %v recorded, want the 9000 measured under", sc.Name, d["mtu"])
			}
		case "ebpf+socklb-off":
			if d["service_datapath"] != "ebpf-tc" {
				t.Errorf("%s: service datapath %v, want ebpf-tc", sc.Name, d["service_datapath"])
			}
		}
	}
	for _, r := range run.Results {
		busy := r.Scenario == "ebpf+busy-poll"
		if busy != (len(r.Samples) == 0) || busy != strings.Contains(r.Skipped, "tuning busy-poll not applicable") {
			t.Errorf("%s %s: %d samples, skipped %q", r.Scenario, r.Test, len(r.Samples), r.Skipped)
		}
		for _, s := range r.Samples {
			if s.Error != "" {
				t.Errorf("%s %s: %s", r.Scenario, r.Test, s.Error)
			}
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Tuning, read back from the kernel before measuring: cc-reno applied (read back: reno in ",
		"node-rps applied (read back: ",
		"mtu-9000 applied (read back: mtu 9000 in ", "busy-poll not applicable (", "ebpf+gro-on vs ebpf"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("report.md lacks %q", s)
		}
	}

	if _, stderr, code := up.run("lab", "status"); code != 0 {
		t.Fatalf("the lab that was up is not after the run: %s", stderr)
	}
	if after := state(); after != before {
		t.Errorf("the lab left up changed:\n%s\nbefore:\n%s", after, before)
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
