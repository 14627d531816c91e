package k8starget

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestSelectNodes(t *testing.T) {
	nodes := []runtime.Object{
		testNode("a-notready", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionUnknown }),
		testNode("b-cordoned", func(n *corev1.Node) { n.Spec.Unschedulable = true }),
		testNode("c-tainted", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoExecute}}
		}),
		testNode("d-windows", func(n *corev1.Node) { n.Labels["kubernetes.io/os"] = "windows" }),
		testNode("e-nocni"),
		testNode("f-prefer", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}}
		}),
		testNode("g-ok", func(n *corev1.Node) { n.Labels["pool"] = "bench" }),
		testNode("h-ok", func(n *corev1.Node) { n.Labels["pool"] = "bench" }),
	}
	cs := newFakeCluster(nodes...)
	agents := map[string]bool{"a-notready": true, "b-cordoned": true, "c-tainted": true, "d-windows": true, "f-prefer": true, "g-ok": true, "h-ok": true}
	ctx := context.Background()
	sel := func(cfg Config, needTwo bool) (NodeChoice, error) {
		return SelectNodes(ctx, cs, cfg, agents, "cilium", needTwo)
	}
	c, err := sel(Config{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Nodes != [2]string{"f-prefer", "g-ok"} {
		t.Errorf("picked %v, want the first two usable by name (PreferNoSchedule is no refusal)", c.Nodes)
	}
	want := map[string]string{
		"a-notready": "not Ready",
		"b-cordoned": "cordoned",
		"c-tainted":  "tainted dedicated=gpu:NoExecute",
		"d-windows":  "not a Linux node (windows)",
		"e-nocni":    "no Ready cilium agent pod",
	}
	for n, why := range want {
		if !strings.Contains(c.Refused[n], why) {
			t.Errorf("%s refused for %q, want %q", n, c.Refused[n], why)
		}
	}
	// Explicit nodes are checked, not trusted.
	if _, err := sel(Config{ClientNode: "c-tainted"}, true); err == nil || !strings.Contains(err.Error(), "--client-node c-tainted: node is not usable: tainted dedicated=gpu:NoExecute") {
		t.Errorf("tainted --client-node: %v", err)
	}
	if _, err := sel(Config{ServerNode: "zz"}, true); err == nil || !strings.Contains(err.Error(), "--server-node zz: no such node") {
		t.Errorf("unknown --server-node: %v", err)
	}
	if c, err := sel(Config{ServerNode: "f-prefer"}, true); err != nil || c.Nodes != [2]string{"g-ok", "f-prefer"} {
		t.Errorf("--server-node f-prefer: %v %v", c.Nodes, err)
	}
	// Node selectors narrow the candidates.
	if c, err := sel(Config{NodeSelector: map[string]string{"pool": "bench"}}, true); err != nil || c.Nodes != [2]string{"g-ok", "h-ok"} {
		t.Errorf("selector pool=bench: %v %v", c.Nodes, err)
	}
	// Same-node placements only: one node is enough.
	if c, err := sel(Config{}, false); err != nil || c.Nodes[1] != "" {
		t.Errorf("needTwo=false: %v %v", c.Nodes, err)
	}
	// Nothing usable: one line naming every reason.
	empty := newFakeCluster(nodes[:4]...)
	_, err = SelectNodes(ctx, empty, Config{}, nil, "", true)
	if err == nil || !strings.Contains(err.Error(), "no usable node") || !strings.Contains(err.Error(), "a-notready: not Ready") || strings.Contains(err.Error(), "\n") {
		t.Errorf("no usable node: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{RunID: "r", Placements: []string{PodToServiceOtherNode}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	if ok.Namespace != DefaultNamespace || ok.Access != AccessPortForward || ok.Timeout != DefaultTimeout ||
		ok.PullPolicy != corev1.PullIfNotPresent || !strings.HasPrefix(ok.Image, DefaultImageRepo+":") || ok.Resources != DefaultResources {
		t.Errorf("defaults: %+v", ok)
	}
	bad := []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.Namespace = "Bad_NS" }, `--namespace "Bad_NS"`},
		{func(c *Config) { c.Access = "ssh" }, `--access "ssh"`},
		{func(c *Config) { c.ClientNode, c.ServerNode = "n", "n" }, "both \"n\""},
		{func(c *Config) { c.Placements = []string{"pod-to-moon/x"} }, "placement pod-to-moon/x is not available on the k8s target"},
		{func(c *Config) { c.RunID = "-x" }, `run id "-x"`},
		{func(c *Config) { c.Timeout = 10 }, "--timeout"},
		{func(c *Config) { c.Resources.CPURequest = "lots" }, `cpu request "lots"`},
		{func(c *Config) { c.NodeSelector = map[string]string{"a b": "c"} }, "--node-selector a b=c"},
		{func(c *Config) { c.Image = "a b" }, "--image"},
	}
	for _, b := range bad {
		c := Config{RunID: "r", Placements: []string{PodToServiceOtherNode}}
		b.mut(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("want error containing %q, got %v", b.want, err)
		}
	}
}
