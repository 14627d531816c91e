package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/results"
)

// withNodes gives rr samples of 30,000 transactions/s (10 s measured of a
// 12 s window) the nodes' CPU of a pinned lab: node0 on CPU 0 busy 6 s
// (3 user), node1 and node2 sharing CPU 1 busy 6 s (1 user), so 12 s busy
// = 1 core, 4 s user, 8 s kernel.
func withNodes(samples []results.Sample) []results.Sample {
	for i := range samples {
		samples[i].Nodes = &results.NodesCPU{Seconds: 12, Pinned: true, Nodes: []results.NodeCPU{
			{Node: "node0", CPUs: "0", CPUTimes: results.CPUTimes{UserSec: 3, SystemSec: 2, SoftirqSec: 1}, CgroupSec: 4},
			{Node: "node1", CPUs: "1", CPUTimes: results.CPUTimes{UserSec: 1, SystemSec: 3, SoftirqSec: 2}, CgroupSec: 2.4},
			{Node: "node2", CPUs: "1", CPUTimes: results.CPUTimes{UserSec: 1, SystemSec: 3, SoftirqSec: 2}},
		}}
	}
	return samples
}

// The section: per test, 30,000 op/s ÷ 1 busy core = 30,000 op per
// core-second, ÷ 1/3 user core = 90,000 without the kernel's 66.7%; per
// node idle (1.5 s: node0 0.15 s busy = 0.1 core) against loaded (0.5)
// and its cgroups (4 s / 12 = 0.333); a node whose CPUs were busy at
// rest (another job on them) is said to share them. A run without node readings (the
// fixtures of every other test) has no section.
func TestPerCoreSection(t *testing.T) {
	run := fixtureRun(t)
	run.Results = run.Results[:0]
	pl := results.Placement{Path: "pod-to-pod", Node: "other-node", Client: "node0-pod0", Server: "node1-pod0"}
	run.Results = append(run.Results, results.Result{Scenario: run.Scenarios[0].Name, Test: "TCP_RR", Placement: pl,
		Samples: withNodes(rrSamples(t, engine.TCPRR, []float64{30000, 30000, 30000}, []float64{30, 31, 29}, 0))})
	run.Scenarios[0].IdleNodes = &results.NodesCPU{Seconds: 1.5, Pinned: true, Nodes: []results.NodeCPU{
		{Node: "node0", CPUs: "0", CPUTimes: results.CPUTimes{UserSec: 0.1, SystemSec: 0.05}}}}
	rep, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var md, html bytes.Buffer
	if err := Markdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&html, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{
		{"## Queries per core"},
		{"TCP_RR pod-to-pod", "30,000 op per core-second", "90,000 per user core-second", "66.7%", "median of 3 rounds"},
		{"node0 (CPUs 0): 0.100 cores busy idle, 0.500 under load; its cgroups 0.333 cores"},
		{"node2 (CPUs 1): – cores busy idle, 0.500 under load; its cgroups 0 cores"},
	} {
		if !lineWith(md.String(), want...) {
			t.Errorf("no report.md line with %q:\n%s", want, md.String())
		}
	}
	if strings.Contains(md.String(), "busy idle: other work") {
		t.Error("a node at 0.1 cores idle (under 0.2) was said to share its CPUs")
	}
	run.Scenarios[0].IdleNodes.Nodes[0].UserSec = 0.6 // 0.433 cores busy at rest: another job's
	if rep, err = Build([]Input{{Run: run}}, Options{}); err != nil {
		t.Fatal(err)
	}
	md.Reset()
	if err := Markdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if !lineWith(md.String(), "CPUs 0 were busy idle: other work shares them", "0.433 cores") {
		t.Errorf("no warning of node0's shared CPUs:\n%s", md.String())
	}
	if !strings.Contains(html.String(), "<h2>Queries per core</h2>") || !strings.Contains(html.String(), "30,000 op per core-second") {
		t.Error("report.html has no queries-per-core section")
	}
	var plain bytes.Buffer
	if err := Markdown(&plain, buildFixture(t)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "Queries per core") {
		t.Error("a run without node readings got the section")
	}
}

// Unpinned, and without an idle reading (results from before it): the
// nodes show their cgroups only, the machine's CPUs are one line, and no
// idle figure is made up.
func TestPerCoreSectionUnpinned(t *testing.T) {
	run := fixtureRun(t)
	pl := results.Placement{Path: "pod-to-pod", Node: "other-node", Client: "node0-pod0", Server: "node1-pod0"}
	samples := rrSamples(t, engine.TCPRR, []float64{30000, 30000, 30000}, []float64{30, 31, 29}, 0)
	for i := range samples {
		samples[i].Nodes = &results.NodesCPU{Seconds: 12, Nodes: []results.NodeCPU{
			{Node: "node0", CgroupSec: 4}, {Node: "node1", CgroupSec: 2.4},
			{Node: "all", CPUs: "all", CPUTimes: results.CPUTimes{UserSec: 6, SystemSec: 6}},
		}}
	}
	run.Results = []results.Result{{Scenario: run.Scenarios[0].Name, Test: "TCP_RR", Placement: pl, Samples: samples}}
	rep, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := Markdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{
		{"TCP_RR pod-to-pod", "30,000 op per core-second", "60,000 per user core-second", "50.0%"},
		{"node0 (unpinned: its CPU is in the machine's): its cgroups 0.333 cores"},
		{"the machine's CPUs (nothing pinned): – cores busy idle, 1.00 under load"},
	} {
		if !lineWith(md.String(), want...) {
			t.Errorf("no report.md line with %q:\n%s", want, md.String())
		}
	}
}

// A cluster run's nodes are machines of their own (each its kernel's
// CPUs, "all"): a node that shows the same kernel as an earlier one (the
// local test cluster's nodes, namespaces of one machine) is said to be
// counted once, and the figures count that kernel once: 30,000 op/s ÷ 1
// busy core; the datapath's components idle and under load beside.
func TestPerCoreClusterNodes(t *testing.T) {
	run := fixtureRun(t)
	run.Results = run.Results[:0]
	samples := rrSamples(t, engine.TCPRR, []float64{30000, 30000, 30000}, []float64{30, 31, 29}, 0)
	for i := range samples {
		cpu := results.CPUTimes{UserSec: 4, SystemSec: 5, SoftirqSec: 3}
		samples[i].Nodes = &results.NodesCPU{Seconds: 12, Pinned: true, Nodes: []results.NodeCPU{
			{Node: "node0", CPUs: "all", Kernel: "boot-a", CPUTimes: cpu}, {Node: "node1", CPUs: "all", Kernel: "boot-a", CPUTimes: cpu}}}
		samples[i].DatapathUsage = results.NewDatapathUsage(results.UsageSourceKubelet, 12, []results.ComponentUsage{
			{Plugin: "cilium", Node: "node1", Pod: "cilium-x", CPUSec: 6, MemoryBytes: 200 << 20}})
	}
	pl := results.Placement{Path: "pod-to-pod", Node: "other-node", Client: "node0-pod0", Server: "node1-pod0"}
	run.Results = append(run.Results, results.Result{Scenario: run.Scenarios[0].Name, Test: "TCP_RR", Placement: pl, Samples: samples})
	run.Scenarios[0].IdleUsage = results.NewDatapathUsage(results.UsageSourceKubelet, 1.5, []results.ComponentUsage{
		{Plugin: "cilium", Node: "node1", Pod: "cilium-x", CPUSec: 0.03, MemoryBytes: 150 << 20}})
	rep, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := Markdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{
		{"TCP_RR pod-to-pod", "30,000 op per core-second", "90,000 per user core-second"},
		{"node0 (its own kernel, all its CPUs): – cores busy idle, 1.00 under load"},
		{"node1: its kernel is node0's (one machine), counted once"},
		{"the datapath's components (proxies, daemons, agents): 0.0200 cores and 150 MiB idle, 0.500 cores and 200 MiB under load"},
	} {
		if !lineWith(md.String(), want...) {
			t.Errorf("no report.md line with %q:\n%s", want, md.String())
		}
	}
}
