package cli

import (
	"strings"
	"testing"
)

// --dry-run prints every manifest of the default placements (pod-to-service
// joins them on clusters) without a kubeconfig.
func TestK8sDryRun(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent")
	out, errOut, err := cnibench(t, "run", "--target", "k8s", "--dry-run", "--client-node", "a", "--server-node", "b")
	if err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	docs := strings.Split(out, "\n---\n")
	kinds := map[string]int{}
	for _, d := range docs {
		for _, line := range strings.Split(d, "\n") {
			if k, ok := strings.CutPrefix(line, "kind: "); ok {
				kinds[k]++
			}
		}
	}
	// Both pod-to-service placements: a Service in front of node0-pod1
	// (same-node) and one in front of node1-pod0 (other-node); the node
	// probes that read the CNI config where no DaemonSet names it, said.
	if len(docs) != 11 || kinds["Pod"] != 7 || kinds["Service"] != 2 || kinds["Secret"] != 1 || kinds["Namespace"] != 1 ||
		!strings.Contains(out, "name: cnibench-node0-pod1\n  namespace: cnibench\nspec:") || strings.Count(out, "--node-probe") != 2 {
		t.Errorf("%d documents, kinds %v", len(docs), kinds)
	}
	if !strings.Contains(out, "- a\n") || !strings.Contains(out, "- b\n") || !strings.Contains(errOut, "dry run: 11 manifests") ||
		!strings.Contains(out, "# the node probes (privileged, hostNetwork, the node's /etc/cni/net.d read-only) are created only when no CNI DaemonSet is recognised") {
		t.Errorf("nodes or notes missing:\n%s", errOut)
	}
	// --node-cni-probe=false: never a privileged pod.
	out, errOut, err = cnibench(t, "run", "--target", "k8s", "--dry-run", "--client-node", "a", "--server-node", "b", "--node-cni-probe=false")
	if err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	if n, kinds := kindsOf(out); n != 9 || kinds["Pod"] != 5 || strings.Contains(out, "--node-probe") || strings.Contains(out, "node probes") {
		t.Errorf("--node-cni-probe=false: %d documents, kinds %v", n, kinds)
	}
}

// Without --client-node/--server-node the nodes are valid placeholder
// names (an API server refuses CLIENT-NODE), and a comment says so.
func TestK8sDryRunPlaceholders(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent")
	out, errOut, err := cnibench(t, "run", "--target", "k8s", "--dry-run")
	if err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	if !strings.HasPrefix(out, "# nodes client-node.invalid and server-node.invalid are placeholders: replace them") ||
		!strings.Contains(out, "- client-node.invalid\n") || !strings.Contains(out, "- server-node.invalid\n") || strings.Contains(out, "CLIENT-NODE") {
		t.Errorf("placeholders:\n%s", out)
	}
}

func TestK8sBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--target", "k8s", "--nodes", "3"}, "--nodes is a lab setting"},
		{[]string{"run", "--target", "k8s", "--dry-run", "--namespace", "Bad_NS"}, `--namespace "Bad_NS"`},
		{[]string{"run", "--target", "k8s", "--dry-run", "--access", "ssh"}, `--access "ssh"`},
		{[]string{"run", "--target", "k8s", "--kubeconfig", "/nonexistent"}, "--kubeconfig /nonexistent"},
		{[]string{"k8s", "rbac", "--user", "a", "--group", "b"}, "one of --user, --group"},
		{[]string{"k8s", "image", "--binary", "/nonexistent", "--out", "/dev/null"}, "not an ELF"},
	} {
		_, _, err := cnibench(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
