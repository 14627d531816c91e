package k8starget

import (
	"bytes"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// Every API call of a Service-scale sweep (node probes, dummy Services and
// EndpointSlices, the LB-map change and its revert, cleanup) is allowed by
// `cnibench k8s rbac --allow-cluster-changes`, and the only writes outside
// the run's namespace are the two named objects of that Role.
func TestRBACCoversASweep(t *testing.T) {
	objs, err := RBAC(testNS, Subject{})
	if err != nil {
		t.Fatal(err)
	}
	changes, err := ClusterChangeRBAC(testNS, DefaultCiliumNamespace, Subject{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteYAML(&buf, changes); err != nil {
		t.Fatal(err)
	}
	if got := decodeStrict(t, buf.Bytes()); len(got) != 2 || got[0].(*rbacv1.Role).Namespace != "kube-system" {
		t.Fatalf("cluster-change RBAC: %d objects", len(got))
	}
	cs, acc := scaleCluster(t, nil, nil, objs[0])
	defaultLBMap(t, cs)
	restarts := rollOut(cs)
	cs.ClearActions()
	cfg := scaleConfig("rbac-sweep")
	cfg.Scale.Services, cfg.Scale.Endpoints, cfg.Scale.AllowClusterChanges = 30000, 4, true
	tgt, steps, err := sweepCluster(t, cs, acc, cfg, []int{0, 3})
	if err != nil || len(steps) != 2 {
		t.Fatalf("sweep: %v, %d steps", err, len(steps))
	}
	if err := tgt.Close(); err != nil {
		t.Fatal(err)
	}
	if restarts() != 2 {
		t.Fatalf("%d Cilium restarts, want the change and its revert", restarts())
	}
	if _, err := Cleanup(cs, testNS, ManagedSelector(), cfg.Timeout, nil); err != nil {
		t.Fatal(err)
	}
	checked, writesOutside := replayChangeRBAC(t, cs)
	if checked < 30 || writesOutside != 4 {
		t.Errorf("%d API calls checked, %d writes in kube-system (want 4: ConfigMap and DaemonSet, twice)", checked, writesOutside)
	}
	for _, r := range ClusterChangeRules() {
		// pods/exec (the flows twin's cilium-dbg status) cannot name the
		// agents' generated pods; every write can name its object.
		if len(r.ResourceNames) == 0 && !slices.Equal(r.Resources, []string{"pods/exec"}) {
			t.Errorf("cluster-change rule %v is not limited to named objects", r.Resources)
		}
	}
	assertClean(t, cs)
}

// replayChangeRBAC checks every API call the fake clientset saw against
// `cnibench k8s rbac --allow-cluster-changes` (the test namespace's Role,
// the cluster rules, the Role in Cilium's namespace); it returns how many
// calls it checked and how many of them wrote in Cilium's namespace.
func replayChangeRBAC(t *testing.T, cs *fake.Clientset) (checked, ciliumWrites int) {
	t.Helper()
	cluster, namespaced, ciliumNS := ClusterRules(testNS), NamespaceRules(), ClusterChangeRules()
	for _, a := range cs.Actions() {
		gvr := a.GetResource()
		if gvr.Resource == "version" {
			continue
		}
		resource, name := actionTarget(a)
		rules := cluster
		switch a.GetNamespace() {
		case testNS:
			rules = append(slices.Clone(cluster), namespaced...)
		case DefaultCiliumNamespace:
			rules = append(slices.Clone(cluster), ciliumNS...)
			if a.GetVerb() != "get" && a.GetVerb() != "list" {
				ciliumWrites++
			}
		}
		checked++
		if !allows(rules, gvr.Group, resource, a.GetVerb(), name) {
			t.Errorf("not allowed by `cnibench k8s rbac --allow-cluster-changes`: %s %s %q in namespace %q", a.GetVerb(), resource, name, a.GetNamespace())
		}
	}
	return checked, ciliumWrites
}
