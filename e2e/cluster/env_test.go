package cluster

import (
	"os"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// clusterEnvironment is the cluster scripts/test-cluster.sh brought up, as
// it describes it in the environment of the tests.
type clusterEnvironment struct {
	kubeconfig  string // CNB_CLUSTER_KUBECONFIG: the admin's kubeconfig
	ruleNode    string // CNB_CLUSTER_RULE_NETNS: a node's network namespace (name under /run/netns) whose kube-proxy rules are read
	clusterCIDR string // CNB_CLUSTER_CIDR: kube-proxy's --cluster-cidr
	serviceCIDR string // CNB_CLUSTER_SERVICE_CIDR: the API server's Service range
	mode        string // CNB_CLUSTER_PROXY_MODE: iptables or nftables
}

// clusterEnv skips the test unless scripts/test-cluster.sh runs it.
func clusterEnv(t *testing.T) *clusterEnvironment {
	t.Helper()
	e := &clusterEnvironment{
		kubeconfig:  os.Getenv("CNB_CLUSTER_KUBECONFIG"),
		ruleNode:    os.Getenv("CNB_CLUSTER_RULE_NETNS"),
		clusterCIDR: os.Getenv("CNB_CLUSTER_CIDR"),
		serviceCIDR: os.Getenv("CNB_CLUSTER_SERVICE_CIDR"),
		mode:        os.Getenv("CNB_CLUSTER_PROXY_MODE"),
	}
	if e.kubeconfig == "" {
		t.Skip("no real cluster: scripts/test-cluster.sh runs these tests against one (CNB_CLUSTER_KUBECONFIG)")
	}
	if e.ruleNode == "" || e.clusterCIDR == "" || e.serviceCIDR == "" {
		t.Fatal("CNB_CLUSTER_RULE_NETNS, CNB_CLUSTER_CIDR and CNB_CLUSTER_SERVICE_CIDR must be set with CNB_CLUSTER_KUBECONFIG")
	}
	return e
}

// proxyMode is kube-proxy's mode in this pass of the tests.
func (e *clusterEnvironment) proxyMode(t *testing.T) string {
	t.Helper()
	switch e.mode {
	case "iptables", "nftables":
		return e.mode
	}
	t.Fatalf("CNB_CLUSTER_PROXY_MODE=%q: want iptables or nftables", e.mode)
	return ""
}

func (e *clusterEnvironment) clientset(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", e.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
