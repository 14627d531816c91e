package cli

import (
	"strings"
	"testing"
)

// --datapath-usage is checked before anything else (even with --dry-run),
// and `k8s rbac --node-proxy` is the only way nodes/proxy gets granted.
func TestK8sDatapathUsageFlags(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent")
	_, _, err := cnibench(t, "run", "--target", "k8s", "--dry-run", "--datapath-usage", "prometheus")
	if err == nil || !strings.Contains(err.Error(), `--datapath-usage "prometheus": want metrics, kubelet or off`) {
		t.Errorf("bad --datapath-usage: %v", err)
	}
	for _, mode := range []string{"metrics", "kubelet", "off"} {
		if _, errOut, err := cnibench(t, "run", "--target", "k8s", "--dry-run", "--client-node", "a", "--server-node", "b", "--datapath-usage", mode); err != nil {
			t.Errorf("--datapath-usage %s: %v: %s", mode, err, errOut)
		}
	}
	plain, _, err := cnibench(t, "k8s", "rbac")
	if err != nil {
		t.Fatal(err)
	}
	withProxy, _, err := cnibench(t, "k8s", "rbac", "--node-proxy")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain, "nodes/proxy") || !strings.Contains(withProxy, "- nodes/proxy") {
		t.Errorf("nodes/proxy granted without --node-proxy, or not with it:\n%s", withProxy)
	}
	if !strings.Contains(plain, "- metrics.k8s.io") {
		t.Errorf("no pod metrics rule in the default RBAC:\n%s", plain)
	}
}
