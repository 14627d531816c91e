package cli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/suite"
)

// A flag that does not apply to the target or schedule is an error that
// names why, before anything is opened (no root, no cluster needed).
func TestFlagApplies(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--target", "k8s", "--dry-run", "--http-work", "1ms"}, "--http-work is a lab setting: it does not apply to --target k8s"},
		{[]string{"run", "--target", "k8s", "--dry-run", "--http-response-size", "10"}, "--http-response-size is a lab setting"},
		{[]string{"sweep", "--target", "k8s", "--dry-run", "--http-work", "1ms"}, "--http-work is a lab setting"},
		{[]string{"run", "--target", "k8s", "--dry-run", "--cpu-pinning", "none"}, "--cpu-pinning is a lab setting"},
		{[]string{"run", "--dry-run"}, "--dry-run applies to --target k8s only"},
		{[]string{"sweep", "--kubeconfig", "x"}, "--kubeconfig applies to --target k8s only"},
		{[]string{"sweep", "--streams", "2"}, "--streams does not apply to the Service-scale sweep"},
		{[]string{"run", "--tests", "service-scale", "--streams", "2"}, "--streams does not apply to the Service-scale sweep"},
		{[]string{"sweep", "--service-datapath", "iptables"}, "--service-datapath does not apply to the Service-scale sweep"},
		{[]string{"run", "--scale-steps", "0,10"}, "--scale-steps on run sets a profile's Service-scale rows, and --profile quick has none (tke)"},
		{[]string{"run", "--profile", "tke", "--target", "k8s", "--dry-run", "--endpoints-per-service", "2"}, "--endpoints-per-service: --profile tke sweeps its Service-scale rows on the lab only"},
		{[]string{"run", "--profile", "datapaths", "--max-step-time", "1m"}, "--max-step-time on run sets a profile's Service-scale rows, and --profile datapaths has none (tke)"},
		{[]string{"run", "--target", "k8s", "--dry-run", "--sync-verify", "api"}, "--sync-verify applies to the Service-scale sweep and the churn schedule only"},
		{[]string{"run", "--auto-size"}, "--auto-size applies to the Service-scale sweep and the churn schedule only"},
		{[]string{"run", "--churn-rate", "5"}, "--churn-rate applies to the churn schedule only (cnibench churn, or run --tests churn)"},
		{[]string{"run", "--tests", "churn", "--scale-steps", "0,10"}, "--scale-steps does not apply to the churn schedule"},
		{[]string{"sweep", "--tests", "TCP_RR"}, "unknown flag: --tests"},
		{[]string{"sweep", "--target", "vm"}, `--target "vm": want lab or k8s`},
		{[]string{"sweep", "--target", "k8s", "--dry-run", "--placements", "pod-to-pod/same-node"}, "measures pod-to-service/other-node or pod-to-service/same-node, not pod-to-pod/same-node"},
	} {
		_, _, err := cnibench(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// A schedule's command and run --tests with its test name are one path
// (sweep and run --tests service-scale, churn and run --tests churn): the
// same manifests.
func TestScheduleCommandIsRunTests(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent")
	// The manifests carry the run ID, which names the start second: two
	// runs a second apart would differ in it alone.
	was := newRunID
	newRunID = func() string { return "20261202-000000-0001" }
	t.Cleanup(func() { newRunID = was })
	common := []string{"--target", "k8s", "--dry-run", "--client-node", "a", "--server-node", "b"}
	for _, c := range []struct {
		cmd, test string
		args      []string
		want      string
	}{
		{"sweep", suite.ServiceScaleTest, []string{"--scale-steps", "0,10"}, "kind: EndpointSlice"},
		{"churn", suite.ChurnTest, []string{"--churn-services", "20"}, "the churn keeps 20 dummy Services"},
	} {
		args := append(common, c.args...)
		a, _, err := cnibench(t, append([]string{c.cmd}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := cnibench(t, append([]string{"run", "--tests", c.test}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		if a != b || !strings.Contains(a, c.want) {
			t.Errorf("%s and run --tests %s differ:\n%s\n---\n%s", c.cmd, c.test, a, b)
		}
	}
}

// --help shows each flag once, in its target's section, and only the
// flags of the command's schedule; every target flag names a registered
// target.
func TestHelpGroupsFlags(t *testing.T) {
	for _, c := range []struct {
		cmd           string
		shown, unseen []string
	}{
		{"run", []string{"--tests", "--streams", "--service-datapath", "--scale-steps"}, []string{"--auto-size", "--sync-verify", "--service-position"}},
		{"sweep", []string{"--scale-steps", "--auto-size"}, []string{"--tests", "--streams", "--service-datapath", "--churn-rate"}},
		{"churn", []string{"--churn-services", "--churn-endpoints", "--churn-rate", "--min-sync-interval", "--auto-size", "--rounds"}, []string{"--tests", "--streams", "--service-datapath", "--scale-steps"}},
	} {
		out, _, err := cnibench(t, c.cmd, "--help")
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range c.shown {
			if strings.Count(out, "  "+f+" ") != 1 {
				t.Errorf("%s --help: %s shown %d times, want once", c.cmd, f, strings.Count(out, "  "+f+" "))
			}
		}
		for _, f := range c.unseen {
			if strings.Contains(out, "  "+f+" ") {
				t.Errorf("%s --help shows %s, which does not apply to it", c.cmd, f)
			}
		}
		lab, k8s := strings.Index(out, "Lab flags (--target lab):"), strings.Index(out, "Kubernetes flags (--target k8s): ")
		if lab < 0 || k8s < lab || !strings.Contains(out[lab:k8s], "--nodes") || strings.Contains(out, "--namespace") ||
			!strings.Contains(out[k8s:], "more, see 'cnibench "+c.cmd+" --target k8s --help'") {
			t.Errorf("%s --help: target sections missing or misplaced:\n%s", c.cmd, out)
		}
		out, _, err = cnibench(t, c.cmd, "--target", "k8s", "--help")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "Kubernetes flags (--target k8s):\n") || !strings.Contains(out, "  --namespace ") || strings.Contains(out, "  --nodes ") {
			t.Errorf("%s --target k8s --help: the cluster's flags not shown, or the lab's shown:\n%s", c.cmd, out)
		}
	}
	root := newRoot()
	for _, name := range []string{"run", "sweep", "churn"} {
		cmd, _, err := root.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			for _, tg := range f.Annotations[annTarget] {
				if _, ok := targetRegistry[tg]; !ok {
					t.Errorf("%s --%s: target %q not registered", name, f.Name, tg)
				}
			}
		})
	}
}

// Every profile with --target k8s --dry-run: the ones a cluster can run
// print manifests; those that compare lab scenarios are refused in one
// line saying why, as --flame-graph is; none is quietly run as another.
func TestEveryProfileOnK8s(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent")
	for _, p := range suite.Profiles {
		out, _, err := cnibench(t, "run", "--target", "k8s", "--dry-run", "--profile", p.Name)
		switch {
		case p.Name == suite.SecurityProfile:
			// Twins of the one cluster: the plan, the denied prober and
			// the policy the policy twin applies.
			for _, want := range []string{"# security twins on one cluster: <context> (base)", "# policy (<context>+policy): the NetworkPolicy cnibench-allow-client-only",
				"# flows (<context>+flows): where Cilium runs, pass --allow-cluster-changes", "# not measured on clusters: l7-node, l7-egress", "kind: NetworkPolicy", "cnibench-netpol-denied"} {
				if err != nil || !strings.Contains(out, want) {
					t.Errorf("profile security on k8s: %v; the dry run lacks %q", err, want)
				}
			}
		case p.OnCluster:
			// The cluster is the column its datapath is: known once
			// the target opens, so the dry run prints the agents.
			if err != nil || !strings.Contains(out, "kind: Pod") {
				t.Errorf("profile %s on k8s: %v\n%.300s", p.Name, err, out)
			}
		case len(p.Scenarios) > 0:
			if err == nil || !strings.Contains(err.Error(), "--profile "+p.Name+" compares lab scenarios side by side") || strings.Contains(err.Error(), "\n") {
				t.Errorf("profile %s on k8s: %v", p.Name, err)
			}
		case err != nil || !strings.Contains(out, "kind: Pod"):
			t.Errorf("profile %s on k8s: %v\n%.300s", p.Name, err, out)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--profile", "security", "--network-policy-check"}, "--network-policy-check keeps its policy for the whole run"},
		{[]string{"--allow-cluster-changes"}, "--allow-cluster-changes applies to the Service-scale sweep, the churn and --profile security only"},
		{[]string{"--profile", "security", "--placements", "host-to-host/other-node"}, "--profile security needs a placement with a server on the pod network"},
	} {
		_, _, err := cnibench(t, append([]string{"run", "--target", "k8s", "--dry-run"}, c.args...)...)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v", c.args, err)
		}
	}
	if out, _, err := cnibench(t, "run", "--target", "k8s", "--dry-run", "--profile", "security", "--allow-cluster-changes"); err != nil ||
		!strings.Contains(out, "# flows (<context>+flows): where Cilium runs, enable-hubble in cilium-config switched (its value before the run recorded in the annotation cnibench.io/restore-enable-hubble") {
		t.Errorf("security with --allow-cluster-changes: %v\n%.600s", err, out)
	}
	if _, _, err := cnibench(t, "run", "--target", "k8s", "--dry-run", "--flame-graph", "TCP_RR", "--tests", "TCP_RR"); err == nil ||
		!strings.Contains(err.Error(), "--flame-graph samples the lab's agents' CPUs") {
		t.Errorf("--flame-graph on k8s: %v", err)
	}
}
