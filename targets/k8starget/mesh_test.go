package k8starget

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeMesh is a cluster as detectMesh reads it.
type fakeMesh struct {
	pods      map[string]*corev1.Pod
	comps     []Component
	labels    map[string]string
	waypoints []string
	listErr   error
}

func (f fakeMesh) agentPods() map[string]*corev1.Pod { return f.pods }
func (f fakeMesh) daemonSets(context.Context) ([]Component, error) {
	return f.comps, f.listErr
}
func (f fakeMesh) namespaceLabels(context.Context) (map[string]string, error) { return f.labels, nil }
func (f fakeMesh) namespacePods(_ context.Context, sel string) ([]string, error) {
	if sel != labelWaypointPod {
		return nil, errors.New("selector " + sel)
	}
	return f.waypoints, nil
}

// agentWith is an agent pod with extra containers, annotations and native
// sidecars.
func agentWith(annotations map[string]string, extra []corev1.Container, native ...corev1.Container) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	for i := range native {
		native[i].RestartPolicy = &always
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}, Spec: corev1.PodSpec{
		Containers:     append([]corev1.Container{{Name: ContainerNm, Image: "cnibench"}}, extra...),
		InitContainers: append([]corev1.Container{{Name: "istio-init", Image: "proxyv2"}}, native...)}}
}

// Nothing of a mesh: the line says so, and Cilium's proxy where Cilium
// runs; Istio's sidecars (classic and native) named per endpoint; ambient
// capture and its waypoint; a failed read keeps what was read.
func TestDetectMesh(t *testing.T) {
	ctx := context.Background()
	cilium := &CNI{Cilium: &CiliumConfig{Keys: map[string]string{}}}
	plain := fakeMesh{pods: map[string]*corev1.Pod{"node0-pod0": agentWith(nil, nil)}}
	m, err := detectMesh(ctx, plain, cilium)
	if err != nil || m.Summary != "no sidecar, ztunnel capture or waypoint in the path; Cilium's L7 proxy: Envoy inside cilium-agent, used by L7 policy only" {
		t.Errorf("plain: %q %v", m.Summary, err)
	}
	sidecar := fakeMesh{pods: map[string]*corev1.Pod{
		"node0-pod0": agentWith(nil, []corev1.Container{{Name: "istio-proxy", Image: "istio/proxyv2:1.24.0"}}),
		"node1-pod0": agentWith(nil, nil, corev1.Container{Name: "linkerd-proxy", Image: "linkerd/proxy:2.16"}),
	}}
	m, _ = detectMesh(ctx, sidecar, nil)
	if got := m.Summary; got != "sidecars in the agent pods (node0-pod0: istio-proxy (istio/proxyv2:1.24.0); node1-pod0: linkerd-proxy (linkerd/proxy:2.16, native sidecar))" {
		t.Errorf("sidecars: %q", got)
	}
	ambient := fakeMesh{
		pods: map[string]*corev1.Pod{
			"node1-pod0": agentWith(map[string]string{annotRedirection: "enabled"}, nil),
			"node0-pod0": agentWith(map[string]string{annotRedirection: "enabled"}, nil),
			"node0":      agentWith(nil, nil), // host network: never captured
		},
		comps:     []Component{{Plugin: "istio-ztunnel", Namespace: "istio-system", DaemonSet: "ztunnel", Version: "1.24.0"}, {Plugin: "cilium-envoy", Namespace: "kube-system", DaemonSet: "cilium-envoy", Version: "v1.31.5"}},
		labels:    map[string]string{labelDataplaneMode: "ambient", labelUseWaypoint: "waypoint"},
		waypoints: []string{"waypoint-6d9f"},
	}
	m, _ = detectMesh(ctx, ambient, cilium)
	for _, want := range []string{"Istio ambient: the node's ztunnel captures node0-pod0, node1-pod0", `waypoint "waypoint" (pods: waypoint-6d9f)`,
		"Cilium's L7 proxy: Envoy in DaemonSet kube-system/cilium-envoy v1.31.5"} {
		if !strings.Contains(m.Summary, want) {
			t.Errorf("ambient: %q lacks %q", m.Summary, want)
		}
	}
	if m.NamespaceMode != "ambient" || len(m.Components) != 2 {
		t.Errorf("ambient record %+v", m)
	}
	ambient.pods = plain.pods
	ambient.listErr = errors.New("forbidden")
	if m, err = detectMesh(ctx, ambient, nil); err == nil || !strings.Contains(m.Summary, "asked by the namespace") {
		t.Errorf("namespace ambient, nothing captured, DaemonSets unreadable: %q %v", m.Summary, err)
	}
	off := &CNI{Cilium: &CiliumConfig{Keys: map[string]string{ciliumL7ProxyKey: "false"}}}
	if m, _ = detectMesh(ctx, plain, off); !strings.HasSuffix(m.Summary, "Cilium's L7 proxy: off (enable-l7-proxy=false)") {
		t.Errorf("proxy off: %q", m.Summary)
	}
}
