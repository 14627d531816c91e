package k8starget

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cnibench/cnibench/agent"
)

// A Service-scale run's manifests: the agents of pod-to-service/other-node
// plus a privileged node probe per node, decoded strictly and compared
// with the golden file.
func TestGoldenManifestsScale(t *testing.T) {
	cfg := Config{Namespace: "cnibench", Image: "ghcr.io/cnibench/cnibench:v0.1.0", RunID: "20250101-120000-abcd",
		ClientNode: "worker-a", ServerNode: "worker-b", Placements: []string{PodToServiceOtherNode},
		Scale: &ScaleConfig{Services: 1000, Endpoints: 4}}
	b, m := dryRunYAML(t, cfg)
	objs := decodeStrict(t, b)
	// Namespace, Secret, 2 agents, 2 probes, 1 Service.
	if len(objs) != 7 || len(objs) != len(m.Objects()) {
		t.Fatalf("%d documents, %d objects built, want 7", len(objs), len(m.Objects()))
	}
	probes := map[string]*corev1.Pod{}
	for _, o := range objs {
		meta := o.(metav1.Object)
		if meta.GetLabels()[LabelManagedBy] != ManagedBy || meta.GetLabels()[LabelRunID] != cfg.RunID {
			t.Errorf("%T %s lacks the managed-by / run-id labels (cleanup would miss it)", o, meta.GetName())
		}
		if p, ok := o.(*corev1.Pod); ok && p.Labels[LabelRole] == RoleProbe {
			probes[p.Spec.NodeName] = p
		}
	}
	for _, node := range []string{"worker-a", "worker-b"} {
		p := probes[node]
		if p == nil {
			t.Fatalf("no probe pinned to %s (probes %v)", node, probes)
		}
		c := p.Spec.Containers[0]
		sc := c.SecurityContext
		switch {
		case !p.Spec.HostNetwork:
			t.Errorf("%s: not hostNetwork", p.Name)
		case sc == nil || sc.Privileged == nil || !*sc.Privileged:
			t.Errorf("%s: not privileged", p.Name)
		case !mountsHostRO(p, "/sys/fs/bpf", corev1.HostPathDirectory) || !mountsHostRO(p, "/etc/cni/net.d", corev1.HostPathDirectoryOrCreate) || len(c.VolumeMounts) != 2:
			t.Errorf("%s: not exactly /sys/fs/bpf and /etc/cni/net.d mounted read-only from the host: %+v", p.Name, c.VolumeMounts)
		case c.ReadinessProbe.TCPSocket.Port.IntValue() != agent.DefaultProbePort:
			t.Errorf("%s: readiness on %v", p.Name, c.ReadinessProbe.TCPSocket.Port)
		case c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero():
			t.Errorf("%s: no requests", p.Name)
		case !strings.Contains(strings.Join(c.Command, " "), "agent --node-probe --node $(NODE_NAME)"):
			t.Errorf("%s: command %v", p.Name, c.Command)
		case c.Env[0].ValueFrom.SecretKeyRef.Name != SecretName || c.Env[1].ValueFrom.FieldRef.FieldPath != "spec.nodeName":
			t.Errorf("%s: env %+v", p.Name, c.Env)
		}
	}
	golden(t, "manifests-scale.yaml", b)

	// API-only sync: no privileged pod at all.
	cfg.Scale = &ScaleConfig{SyncVerify: SyncAPI}
	_, m = dryRunYAML(t, cfg)
	for _, p := range m.Pods {
		if p.Labels[LabelRole] == RoleProbe {
			t.Errorf("--sync-verify api created probe %s", p.Name)
		}
	}
}

// A namespace whose Pod Security level rejects privileged pods is refused
// before anything is created, naming the label.
func TestProbeNamespaceRefused(t *testing.T) {
	for _, level := range []string{"baseline", "restricted"} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, Labels: map[string]string{LabelPodSecurity: level}}}
		cs := twoNodeCluster(ns)
		startKubelet(t, cs, testNS, healthy)
		cfg := scaleConfig("psa-" + level)
		_, err := Open(context.Background(), cfg, cs, &staticAccess{}, "")
		if err == nil || !strings.Contains(err.Error(), "pod-security.kubernetes.io/enforce="+level) || !strings.Contains(err.Error(), "--sync-verify api") {
			t.Fatalf("%s: %v", level, err)
		}
		pods, _ := cs.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{})
		if len(pods.Items) != 0 {
			t.Errorf("%s: %d pods created before the refusal", level, len(pods.Items))
		}
		// API-only sync needs no privileged pod: the namespace is fine.
		cfg.Scale.SyncVerify = SyncAPI
		if _, err := Prepare(context.Background(), cfg, cs); err != nil {
			t.Errorf("%s with --sync-verify api: %v", level, err)
		}
	}
}

// mountsHostRO says whether the pod's container mounts the host's path at
// the same path, read-only, as a hostPath of type typ.
func mountsHostRO(p *corev1.Pod, path string, typ corev1.HostPathType) bool {
	for _, m := range p.Spec.Containers[0].VolumeMounts {
		for _, v := range p.Spec.Volumes {
			if v.Name == m.Name && m.MountPath == path && m.ReadOnly && v.HostPath != nil && v.HostPath.Path == path &&
				v.HostPath.Type != nil && *v.HostPath.Type == typ {
				return true
			}
		}
	}
	return false
}
