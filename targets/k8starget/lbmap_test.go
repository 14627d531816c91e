package k8starget

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// rollingCilium is a Cilium cluster whose DaemonSet controller rolls every
// template change out at once (bumping the generation, as the API server
// does, and reporting every pod updated and ready).
func rollingCilium(t *testing.T, data map[string]string) (*fake.Clientset, *CNI, func() (map[string]string, int)) {
	objs := ciliumObjects("a", "b")
	objs[1].(*corev1.ConfigMap).Data = data
	cs := newFakeCluster(objs...)
	restarts := 0
	cs.PrependReactor("update", "daemonsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ds := a.(k8stesting.UpdateAction).GetObject().(*appsv1.DaemonSet)
		restarts++
		ds.Generation++
		ds.Status.ObservedGeneration = ds.Generation
		ds.Status.UpdatedNumberScheduled = ds.Status.DesiredNumberScheduled
		ds.Status.NumberReady = ds.Status.DesiredNumberScheduled
		return false, nil, nil
	})
	cni, err := DetectCNI(context.Background(), cs)
	if err != nil {
		t.Fatal(err)
	}
	return cs, cni, func() (map[string]string, int) {
		cm, _ := cs.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "cilium-config", metav1.GetOptions{})
		return cm.Data, restarts
	}
}

func TestLBMapPreflight(t *testing.T) {
	ctx := context.Background()
	// Big enough: nothing is touched.
	cs, cni, state := rollingCilium(t, map[string]string{"bpf-lb-map-max": "512000"})
	ch, err := LBMapPreflight(ctx, cs, cni, 30000, 4, false, time.Second, nil)
	if data, restarts := state(); err != nil || ch != nil || restarts != 0 || data["bpf-lb-map-max"] != "512000" {
		t.Fatalf("fits: change %v err %v restarts %d", ch, err, restarts)
	}
	// Too small (the default): refused, and still nothing touched.
	cs, cni, state = rollingCilium(t, map[string]string{"routing-mode": "native"})
	_, err = LBMapPreflight(ctx, cs, cni, 30000, 4, false, time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), "bpf-lb-map-max=65536") || !strings.Contains(err.Error(), "need 150000") || !strings.Contains(err.Error(), "--allow-cluster-changes") {
		t.Fatalf("too small without permission: %v", err)
	}
	if data, restarts := state(); restarts != 0 || len(data) != 1 {
		t.Fatalf("refusal changed the cluster: %v, %d restarts", data, restarts)
	}
	// With permission: raised, agents restarted; reverted to "unset".
	ch, err = LBMapPreflight(ctx, cs, cni, 30000, 4, true, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, restarts := state()
	if data["bpf-lb-map-max"] != "262144" || restarts != 1 || ch.New != "262144" || ch.OldPresent {
		t.Fatalf("after raising: %v, %d restarts, change %+v", data, restarts, ch)
	}
	if !strings.Contains(ch.String(), "bpf-lb-map-max: (unset) -> 262144") {
		t.Errorf("change %q", ch)
	}
	if err := RevertChange(cs, ch, time.Second, nil); err != nil {
		t.Fatal(err)
	}
	data, restarts = state()
	if _, set := data["bpf-lb-map-max"]; set || restarts != 2 || data["routing-mode"] != "native" || !ch.Reverted {
		t.Fatalf("after revert: %v, %d restarts", data, restarts)
	}
	if err := RevertChange(cs, ch, time.Second, nil); err != nil {
		t.Fatal(err)
	}
	if _, restarts = state(); restarts != 2 {
		t.Error("a second revert restarted Cilium again")
	}
	// No Cilium: nothing to check.
	if ch, err := LBMapPreflight(ctx, newFakeCluster(), &CNI{Plugin: "calico"}, 1e6, 10, false, time.Second, nil); ch != nil || err != nil {
		t.Errorf("calico: %v %v", ch, err)
	}
}

// A rollout that never completes is an error naming the state, after the
// timeout, and the value is put back.
func TestLBMapRolloutTimeout(t *testing.T) {
	objs := ciliumObjects("a")
	cs := newFakeCluster(objs...)
	cni, _ := DetectCNI(context.Background(), cs)
	start := time.Now()
	_, err := LBMapPreflight(context.Background(), cs, cni, 200000, 4, true, 300*time.Millisecond, nil)
	if err == nil || !strings.Contains(err.Error(), "not rolled out after 300ms") {
		t.Fatalf("stuck rollout: %v", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("took %s", time.Since(start))
	}
	cm, _ := cs.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "cilium-config", metav1.GetOptions{})
	if cm.Data["bpf-lb-map-max"] != "512000" {
		t.Errorf("value not restored after the failure: %v", cm.Data)
	}
}
