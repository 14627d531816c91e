package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	// The eks profile's FORTIO_* tests: package main links the kind.
	_ "github.com/cnibench/cnibench/engine/fortioload"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
	"github.com/cnibench/cnibench/targets/labtarget"
)

// `cnibench profiles` lists every profile with what it answers, its
// measuring time and targets, and the report a named profile reproduces.
func TestProfilesCommandListsEveryProfile(t *testing.T) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"profiles"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(out.String(), "\n\n")
	if len(blocks) != len(suite.Profiles) {
		t.Fatalf("%d blocks for %d profiles:\n%s", len(blocks), len(suite.Profiles), out.String())
	}
	for i, p := range suite.Profiles {
		b := blocks[i]
		if !strings.HasPrefix(b, p.Name+"\n  answers:   "+p.About+"\n  measures:  ") || !strings.Contains(b, "\n  targets:   ") {
			t.Errorf("block %d is not %s's:\n%s", i, p.Name, b)
		}
		if (p.ReproducedReport() != "") != strings.Contains(b, "\n  reproduces: ") {
			t.Errorf("%s: reproduces %q, block:\n%s", p.Name, p.ReproducedReport(), b)
		}
	}
	for _, want := range []string{
		"tke\n", "reproduces: TKE network benchmark", "targets:   lab (it compares lab scenarios: iptables-legacy, ebpf, vxlan+ebpf, ebpf+policy, ",
		// The added-part scenarios run one test each, and the time says so.
		"measures:  12m30s: 5 rounds of 6 tests on 2 placements in 9 scenarios (6 of them only FORTIO_RPS_C64), 2s + 500ms warm-up each; " +
			"then (lab) 2m30s of the Service-scale sweep: FORTIO_RPS_SHORT_C64 at 5,000, 10,000, 20,000, 30,000 dummy Services × 4 endpoints on iptables-legacy, ebpf, vxlan+ebpf",
		"on the lab only (the Service-scale sweep after the rounds; on k8s cnibench sweep): BPF map memory per node (LB map 1.02M); Service scale 5,000: short-connection RPS;",
		"on the lab only (a part added to a datapath; on k8s --profile security): L3/L4 policy overhead; L7 policy overhead; Hubble overhead;",
		"connectivity-perf\n", "measures:  19m15s: 5 rounds of 7 tests on 3 placements in 1 scenario, 10s + 1s warm-up each",
		"rows:      75 of the original's 100 cells measured, on the lab and k8s; rows without an equivalent here (the report says why): host-to-host same-node TCP_CRR;",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}

// Every profile's lab scenarios are scenarios the lab can build.
func TestProfileScenariosAreLabScenarios(t *testing.T) {
	var lf labFlags
	fs := pflag.NewFlagSet("lab", pflag.ContinueOnError)
	lf.register(fs)
	cfg, err := lf.config(fs, &globals{labName: "pr", stateDir: "/run/cnibench"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range suite.Profiles {
		for _, sc := range p.Scenarios {
			n, err := results.ParseScenarioName(sc)
			if err == nil {
				_, err = labtarget.ScenarioConfig(n, cfg)
			}
			if err != nil {
				t.Errorf("profile %s: scenario %s: %v", p.Name, sc, err)
			}
		}
	}
}

// --target k8s names the profiles it runs when it refuses a lab one.
func TestClusterProfilesNamed(t *testing.T) {
	got := clusterProfiles()
	for _, want := range []string{"quick", "standard", "security", "connectivity-perf", "tke"} {
		if !strings.Contains(got, want) {
			t.Errorf("cluster profiles %q lack %s", got, want)
		}
	}
	if strings.Contains(got, "eks") || strings.Contains(got, "datapaths") {
		t.Errorf("cluster profiles %q name a lab-scenario profile", got)
	}
}
