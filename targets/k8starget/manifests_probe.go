package k8starget

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/agent/nodeprobe"
)

// Node probes: one privileged hostNetwork pod per node the run uses,
// running `cnibench agent --node-probe`, so a Service-scale sweep can read
// what kube-proxy or Cilium really programmed on each node, and a run
// whose CNI has no DaemonSet can read the node's CNI config (nodecni.go).
const (
	RoleProbe = "probe"
	// LabelPodSecurity is the namespace label Pod Security admission
	// enforces; the probes need "privileged".
	LabelPodSecurity = "pod-security.kubernetes.io/enforce"
	bpffsVolume      = "bpffs"
	bpffsPath        = "/sys/fs/bpf"
	cniConfVolume    = "cni-conf"
)

// ProbeEndpoint is the endpoint name of node i's probe ("probe-node0").
func ProbeEndpoint(node int) string { return "probe-node" + strconv.Itoa(node) }

// probeResources are small: a probe reads the kernel once a second.
var probeResources = corev1.ResourceRequirements{
	Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
	Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
}

// probeEndpoints lists the probes of a layout: one per chosen node.
func probeEndpoints(l Layout) []string {
	if !l.Probes {
		return nil
	}
	var eps []string
	for i, n := range l.Nodes {
		if n != "" {
			eps = append(eps, ProbeEndpoint(i))
		}
	}
	return eps
}

// probePods are the node probes of a layout.
func probePods(l Layout) []*corev1.Pod {
	if !l.Probes {
		return nil
	}
	return nodeProbes(l)
}

// NodeCNIProbes are the node probes a run without a sweep deploys for a
// moment to read the nodes' CNI config when no CNI DaemonSet is
// recognised (nodecni.go); none when the layout has a sweep's probes,
// which are read instead.
func NodeCNIProbes(l Layout) []*corev1.Pod {
	if l.Probes {
		return nil
	}
	return nodeProbes(l)
}

// nodeProbes is a probe per chosen node.
func nodeProbes(l Layout) []*corev1.Pod {
	var pods []*corev1.Pod
	for i, node := range l.Nodes {
		if node != "" {
			pods = append(pods, probePod(l, ProbeEndpoint(i), node))
		}
	}
	return pods
}

func probePod(l Layout, endpoint, node string) *corev1.Pod {
	lbl := baseLabels(l.RunID, NameAgent)
	lbl[LabelEndpoint] = endpoint
	lbl[LabelRole] = RoleProbe
	root := int64(0)
	yes, no := true, false
	grace := int64(2)
	port := int32(agent.DefaultProbePort)
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: PodName(endpoint), Namespace: l.Namespace, Labels: lbl},
		Spec: corev1.PodSpec{
			// Pinned by nodeName: the probe must read this node and no
			// other, and it asks for almost nothing, so there is no
			// scheduling decision to make.
			NodeName:                      node,
			NodeSelector:                  map[string]string{"kubernetes.io/os": "linux"},
			HostNetwork:                   true, // the node's netfilter and Cilium's maps
			DNSPolicy:                     corev1.DNSClusterFirstWithHostNet,
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			// Cilium's agents and kube-proxy tolerate everything; a probe
			// on a node they serve must not be kept off by a taint added
			// after the node was chosen.
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Volumes: []corev1.Volume{
				{Name: bpffsVolume, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: bpffsPath, Type: hostPathType(corev1.HostPathDirectory)}}},
				// The CNI config the node's runtime reads. OrCreate: a node
				// without the directory (k3s keeps it elsewhere) must not
				// keep the probe from starting, and gets an empty one, as
				// the runtime makes for an unchecked hostPath.
				{Name: cniConfVolume, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: nodeprobe.DefaultCNIConfDir, Type: hostPathType(corev1.HostPathDirectoryOrCreate)}}},
			},
			Containers: []corev1.Container{{
				Name:            ContainerNm,
				Image:           l.Image,
				ImagePullPolicy: l.PullPolicy,
				Command: []string{BinaryPath, "agent", "--node-probe", "--node", "$(NODE_NAME)",
					"--control", "tcp::" + strconv.Itoa(agent.DefaultProbePort)},
				Env: []corev1.EnvVar{
					{Name: "CNIBENCH_AGENT_TOKEN", ValueFrom: &corev1.EnvVarSource{
						SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: SecretName}, Key: SecretKey}}},
					{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
				},
				Ports:     []corev1.ContainerPort{{Name: "probe", ContainerPort: port, Protocol: corev1.ProtocolTCP}},
				Resources: probeResources,
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}},
					PeriodSeconds: 2,
				},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				// Privileged: reading netfilter over netlink needs
				// CAP_NET_ADMIN in the host's network namespace, and the
				// pinned BPF maps need CAP_BPF/CAP_SYS_ADMIN. The BPF
				// filesystem and the CNI config are mounted read-only:
				// the probe only reads.
				SecurityContext: &corev1.SecurityContext{
					Privileged:             &yes,
					RunAsUser:              &root,
					ReadOnlyRootFilesystem: &yes,
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: bpffsVolume, MountPath: bpffsPath, ReadOnly: true},
					{Name: cniConfVolume, MountPath: nodeprobe.DefaultCNIConfDir, ReadOnly: true},
				},
			}},
		},
	}
}

func hostPathType(t corev1.HostPathType) *corev1.HostPathType { return &t }

// checkProbeNamespace refuses, before anything is created, a namespace
// whose Pod Security level would reject the privileged probes. A namespace
// cnibench creates is labelled privileged.
func checkProbeNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	level, err := probeRejectingLevel(ctx, cs, ns)
	if err != nil {
		return err
	}
	if level != "" {
		return fmt.Errorf("namespace %s has %s=%s, which rejects the privileged node probes of --sync-verify node: label it privileged, use another --namespace, or pass --sync-verify api", ns, LabelPodSecurity, level)
	}
	return nil
}

// probeRejectingLevel is the namespace's enforced Pod Security level when
// it rejects privileged pods (baseline, restricted), "" otherwise (also
// for a namespace not made yet: cnibench labels its own privileged).
func probeRejectingLevel(ctx context.Context, cs kubernetes.Interface, ns string) (string, error) {
	n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read namespace %s: %w", ns, err)
	}
	switch level := n.Labels[LabelPodSecurity]; level {
	case "baseline", "restricted":
		return level, nil
	}
	return "", nil
}
