package cli

import (
	"strings"
	"testing"
)

// kindsOf counts the kinds of a YAML stream.
func kindsOf(out string) (int, map[string]int) {
	docs := strings.Split(out, "\n---\n")
	kinds := map[string]int{}
	for _, d := range docs {
		for _, line := range strings.Split(d, "\n") {
			if k, ok := strings.CutPrefix(line, "kind: "); ok {
				kinds[k]++
			}
		}
	}
	return len(docs), kinds
}

// The sweep's --dry-run prints the two agents of pod-to-service/other-node,
// their Service and a node probe per node; --sync-verify api drops the
// probes.
func TestK8sScaleDryRun(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent")
	args := []string{"run", "--target", "k8s", "--tests", "service-scale", "--dry-run", "--client-node", "a", "--server-node", "b", "--scale-steps", "0,100"}
	out, errOut, err := cnibench(t, args...)
	if err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	n, kinds := kindsOf(out)
	// + the first 3 of the 100 dummy Services, each with its EndpointSlice.
	if n != 13 || kinds["Pod"] != 4 || kinds["Service"] != 4 || kinds["EndpointSlice"] != 3 || !strings.Contains(out, "--node-probe") || !strings.Contains(out, "privileged: true") {
		t.Errorf("%d documents, kinds %v", n, kinds)
	}
	if !strings.Contains(out, "# the sweep's largest step has 100 dummy Services") || !strings.Contains(out, "endpointslice.kubernetes.io/managed-by: scale.cnibench.io") {
		t.Errorf("dummy Services not introduced or slices not labelled:\n%s", out)
	}
	// --sync-verify api: no sweep probes, but the moment's probes that
	// read the CNI config where no DaemonSet names it; without those too.
	out, errOut, err = cnibench(t, append(args, "--sync-verify", "api")...)
	if err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	if n, kinds := kindsOf(out); n != 13 || kinds["Pod"] != 4 || !strings.Contains(out, "are created only when no CNI DaemonSet is recognised") {
		t.Errorf("--sync-verify api: %d documents, kinds %v", n, kinds)
	}
	out, errOut, err = cnibench(t, append(args, "--sync-verify", "api", "--node-cni-probe=false")...)
	if err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	if n, kinds := kindsOf(out); n != 11 || kinds["Pod"] != 2 || strings.Contains(out, "--node-probe") {
		t.Errorf("--sync-verify api --node-cni-probe=false: %d documents, kinds %v", n, kinds)
	}
}

func TestK8sScaleBadInput(t *testing.T) {
	base := []string{"run", "--tests", "service-scale"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--target", "k8s", "--dry-run", "--sync-verify", "kernel"}, `--sync-verify "kernel": want node or api`},
		{[]string{"--target", "k8s", "--dry-run", "--sync-timeout", "-1s"}, "--sync-timeout must be positive"},
		{[]string{"--target", "k8s", "--dry-run", "--auto-size"}, "--auto-size is a lab setting"},
		{[]string{"--target", "k8s", "--dry-run", "--scenarios", "ebpf"}, "--scenarios is a lab setting"},
		{[]string{"--target", "k8s", "--dry-run", "--placements", "pod-to-pod/other-node"}, "measures pod-to-service/other-node or pod-to-service/same-node, not pod-to-pod/other-node"},
		{[]string{"--target", "k8s", "--dry-run", "--placements", "pod-to-service/same-node,pod-to-service/other-node"}, "measures one placement"},
		{[]string{"--target", "k8s", "--dry-run", "--api-qps", "0"}, "--api-qps must be in 1..5000, got 0"},
		{[]string{"--target", "k8s", "--dry-run", "--api-qps", "NaN"}, "--api-qps must be in 1..5000"},
		{[]string{"--target", "k8s", "--dry-run", "--api-burst", "-3"}, "--api-burst must be in 1..5000, got -3"},
		{[]string{"--api-qps", "100"}, "--api-qps applies to --target k8s only"},
		{[]string{"--target", "k8s", "--dry-run", "--scale-steps", "5,1"}, "--scale-steps must increase"},
		{[]string{"--sync-timeout", "1m"}, "--sync-timeout applies to --target k8s only"},
		{[]string{"--allow-cluster-changes"}, "--allow-cluster-changes applies to --target k8s only"},
	} {
		_, _, err := cnibench(t, append(base, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// `k8s rbac --allow-cluster-changes` adds the one Role that may write
// outside the run's namespace, limited to Cilium's two objects.
func TestK8sRBACClusterChanges(t *testing.T) {
	plain, _, err := cnibench(t, "k8s", "rbac")
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := cnibench(t, "k8s", "rbac", "--allow-cluster-changes", "--cilium-namespace", "cilium")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, plain) {
		t.Error("--allow-cluster-changes changed the base RBAC")
	}
	extra := strings.TrimPrefix(out, plain)
	for _, want := range []string{"kind: Role", "namespace: cilium", "- cilium-config", "- update", "- pods/exec", "kind: RoleBinding"} {
		if !strings.Contains(extra, want) {
			t.Errorf("cluster-change RBAC lacks %q:\n%s", want, extra)
		}
	}
	if strings.Contains(plain, "- update") || strings.Contains(plain, "pods/exec") {
		t.Error("the default RBAC grants update or exec")
	}
}
