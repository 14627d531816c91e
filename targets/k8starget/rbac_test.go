package k8starget

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// allows evaluates RBAC rules the way the API server's authorizer does for
// resource requests: group, resource[/subresource], verb, and name when
// the rule lists resourceNames.
func allows(rules []rbacv1.PolicyRule, group, resource, verb, name string) bool {
	if verb == "delete-collection" { // client-go testing's name of RBAC's deletecollection
		verb = "deletecollection"
	}
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) &&
			(len(r.ResourceNames) == 0 || (name != "" && slices.Contains(r.ResourceNames, name))) {
			return true
		}
	}
	return false
}

// Everything a full run asks of the API server (with the namespace
// prepared by an admin from `cnibench k8s rbac`) is allowed by the printed
// ClusterRole and Role, and a cleanup of the namespace too: the RBAC is
// sufficient, rule by rule.
func TestRBACCoversARun(t *testing.T) {
	objs, err := RBAC(testNS, Subject{})
	if err != nil {
		t.Fatal(err)
	}
	cs := twoNodeCluster(objs[0]) // the Namespace, as the admin applied it
	// worker-b's kubelet refuses tcp_tw_reuse: the pod's recreation is
	// checked against the rules too.
	var refused atomic.Int32
	startKubelet(t, cs, testNS, refuseTWReuseOn("worker-b", &refused))
	h := startHealthAgent(t, cs, testNS)
	cs.ClearActions()
	cfg := testConfig("rbac")
	cfg.NetworkPolicyCheck = true // its policy's create, list and delete are checked too
	tgt, err := Open(context.Background(), cfg, cs, &staticAccess{addr: h.srv.URL}, "")
	if err != nil {
		t.Fatal(err)
	}
	if tgt.Layout().CreateNamespace {
		t.Fatal("the admin's namespace would be created again")
	}
	if err := tgt.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Cleanup(cs, testNS, ManagedSelector(), testConfig("x").Timeout, nil); err != nil {
		t.Fatal(err)
	}
	cluster, namespaced := ClusterRules(testNS), NamespaceRules()
	checked := checkRBAC(t, cs, cluster, namespaced)
	if refused.Load() == 0 {
		t.Error("no pod was refused: the sysctl fallback's calls went unchecked")
	}
	if checked < 20 {
		t.Errorf("only %d API calls checked", checked)
	}
	// And it is least privilege where it matters: no Secret can be read
	// but ours, nothing outside the namespace can be changed.
	if allows(namespaced, "", "secrets", "get", "other") || allows(namespaced, "", "secrets", "list", "") {
		t.Error("the Role can read other Secrets")
	}
	for _, r := range cluster {
		for _, v := range r.Verbs {
			if v != "get" && v != "list" {
				t.Errorf("cluster-wide %s on %v", v, r.Resources)
			}
		}
	}
	// The admin's namespace survives the cleanup.
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), testNS, metav1.GetOptions{}); err != nil {
		t.Errorf("namespace: %v", err)
	}
}

// checkRBAC checks every API call the fake clientset saw against the
// rules (namespaced ones in testNS only) and returns how many it checked.
func checkRBAC(t *testing.T, cs *fake.Clientset, cluster, namespaced []rbacv1.PolicyRule) int {
	t.Helper()
	checked := 0
	for _, a := range cs.Actions() {
		gvr := a.GetResource()
		// Discovery (the fake's "version" and "resource" actions) is
		// allowed to every authenticated user.
		if gvr.Group == "" && (gvr.Resource == "version" || gvr.Resource == "resource") {
			continue
		}
		resource, name := actionTarget(a)
		rules := cluster
		if a.GetNamespace() == testNS {
			rules = append(slices.Clone(cluster), namespaced...)
		}
		checked++
		if !allows(rules, gvr.Group, resource, a.GetVerb(), name) {
			t.Errorf("not allowed by `cnibench k8s rbac`: %s %s %q in namespace %q", a.GetVerb(), resource, name, a.GetNamespace())
		}
	}
	return checked
}

// actionTarget is the resource ("pods", "pods/exec") and the object's name
// (when the verb names one) that a fake clientset's action addressed: what
// an RBAC rule matches.
func actionTarget(a k8stesting.Action) (resource, name string) {
	resource = a.GetResource().Resource
	if a.GetSubresource() != "" {
		resource += "/" + a.GetSubresource()
	}
	switch x := a.(type) {
	case k8stesting.GetAction:
		name = x.GetName()
	case k8stesting.DeleteAction:
		name = x.GetName()
	case k8stesting.UpdateAction:
		if o, ok := x.GetObject().(metav1.Object); ok {
			name = o.GetName()
		}
	}
	return resource, name
}

// In the namespace `k8s rbac` prints (labelled privileged), a run on a
// cluster whose CNI has no DaemonSet deploys, reads and deletes its node
// probes with the printed rights only.
func TestRBACCoversNodeCNIProbe(t *testing.T) {
	objs, err := RBAC(testNS, Subject{})
	if err != nil {
		t.Fatal(err)
	}
	cs := bridgeCluster(objs[0])
	startKubelet(t, cs, testNS, healthy)
	h := startHealthAgent(t, cs, testNS)
	acc := &cniProbeAccess{staticAccess: staticAccess{addr: h.srv.URL}, t: t, cs: cs,
		dirs: cniDirs(t, map[string]string{"worker-a": "10-cnbk.conflist", "worker-b": "10-cnbk.conflist"})}
	cs.ClearActions()
	tgt := openBridge(t, cs, testConfig("rbac-cni"), acc)
	if tgt.prov.CNI.Plugin != "bridge" || probeCreates(cs) != 2 {
		t.Fatalf("cni %q (%s), %d probes: the probe path was not taken", tgt.prov.CNI.Plugin, tgt.prov.CNI.Source, probeCreates(cs))
	}
	if checked := checkRBAC(t, cs, ClusterRules(testNS), NamespaceRules()); checked < 20 {
		t.Errorf("only %d API calls checked", checked)
	}
}

// Replacing a dead agent (reading its pod, deleting it, creating the new
// one, the death watch's listing) needs nothing beyond the printed rules.
func TestRBACCoversAReplacement(t *testing.T) {
	objs, err := RBAC(testNS, Subject{})
	if err != nil {
		t.Fatal(err)
	}
	cs := twoNodeCluster(objs[0])
	startKubelet(t, cs, testNS, movingIPs)
	h := startHealthAgent(t, cs, testNS)
	cfg := testConfig("rbac-rep")
	tgt, err := Open(context.Background(), cfg, cs, &staticAccess{addr: h.srv.URL}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	cs.ClearActions()
	kill(t, cs, "cnibench-node1-pod0")
	setStatus(t, cs, "cnibench-node0", func(st *corev1.PodStatus) { st.Phase, st.Reason = corev1.PodFailed, "Evicted" })
	waitClosed(t, tgt.AgentDone("node1-pod0"), "deleted server")
	if died, err := tgt.ReplaceDead(context.Background(), []string{"node0-pod0", "node1-pod0", "node0", "node1"}); died == nil || err != nil {
		t.Fatalf("ReplaceDead: %v, %v", died, err)
	}
	if checked := checkRBAC(t, cs, ClusterRules(testNS), NamespaceRules()); checked < 8 {
		t.Errorf("only %d API calls checked", checked)
	}
}
