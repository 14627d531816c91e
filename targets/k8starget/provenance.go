package k8starget

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cnibench/cnibench/agent"
)

// NodeInfo is what the results record about a node the agents ran on.
type NodeInfo struct {
	Endpoint         string `json:"endpoint"` // node0 | node1
	Name             string `json:"name"`
	KernelVersion    string `json:"kernel_version"`
	OSImage          string `json:"os_image"`
	Architecture     string `json:"architecture"`
	ContainerRuntime string `json:"container_runtime"`
	KubeletVersion   string `json:"kubelet_version"`
	InstanceType     string `json:"instance_type,omitempty"`
	Zone             string `json:"zone,omitempty"`
	Region           string `json:"region,omitempty"`
	InternalIP       string `json:"internal_ip,omitempty"`
}

// EndpointInfo maps a lab-style endpoint name to the real pod.
type EndpointInfo struct {
	Pod         string `json:"pod"`
	Node        string `json:"node"`
	IP          string `json:"ip"`
	HostNetwork bool   `json:"host_network"`
	QOSClass    string `json:"qos_class,omitempty"`
	// PodSysctls are the sysctls the pod as created sets (after any
	// fallback dropped refused ones).
	PodSysctls map[string]string `json:"pod_sysctls,omitempty"`
}

// Provenance is the k8s target's Details in the results document.
type Provenance struct {
	Context           string            `json:"context,omitempty"`
	KubernetesVersion string            `json:"kubernetes_version"`
	Platform          string            `json:"platform,omitempty"`
	Namespace         string            `json:"namespace"`
	Image             string            `json:"image"`
	Access            string            `json:"access"`
	Nodes             []NodeInfo        `json:"nodes"`
	RefusedNodes      map[string]string `json:"refused_nodes,omitempty"`
	CNI               *CNI              `json:"cni"`
	// Mesh is what of a service mesh is in the path (mesh.go).
	Mesh      *Mesh                   `json:"mesh,omitempty"`
	Endpoints map[string]EndpointInfo `json:"endpoints"`
	Services  map[string]string       `json:"services,omitempty"` // endpoint → ClusterIP
	Skipped   map[string]string       `json:"skipped,omitempty"`  // placement → reason
	// EndpointSysctls are the effective sysctls each agent read in its own
	// network namespace (the node's for hostNetwork agents).
	EndpointSysctls map[string]agent.Sysctls `json:"endpoint_sysctls,omitempty"`
	// SysctlDrops are agent pods that run without sysctls they asked for
	// (a kubelet or admission refused them), with why and how to allow them.
	SysctlDrops []SysctlDrop `json:"sysctl_drops,omitempty"`
	// Replacements are the agent pods that died during the run and the
	// pods that replaced them (replace.go).
	Replacements []AgentReplacement `json:"agent_replacements,omitempty"`
	// NetworkPolicy is the NetworkPolicy check's outcome (--network-policy-check).
	NetworkPolicy *NetPolCheck `json:"network_policy,omitempty"`
	// Notes are what the run must say about this target (also in the
	// results' run notes): sysctl drops, sysctls that could not be read.
	Notes []string `json:"notes,omitempty"`
}

// ServerVersion reads the API server's version.
func ServerVersion(cs kubernetes.Interface) (version, platform string, err error) {
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return "", "", fmt.Errorf("read the Kubernetes version: %w", err)
	}
	return v.GitVersion, v.Platform, nil
}

// nodeInfo extracts a node's provenance.
func nodeInfo(endpoint string, n *corev1.Node) NodeInfo {
	ni := n.Status.NodeInfo
	info := NodeInfo{
		Endpoint: endpoint, Name: n.Name,
		KernelVersion: ni.KernelVersion, OSImage: ni.OSImage, Architecture: ni.Architecture,
		ContainerRuntime: ni.ContainerRuntimeVersion, KubeletVersion: ni.KubeletVersion,
		InstanceType: or(n.Labels["node.kubernetes.io/instance-type"], n.Labels["beta.kubernetes.io/instance-type"]),
		Zone:         or(n.Labels["topology.kubernetes.io/zone"], n.Labels["failure-domain.beta.kubernetes.io/zone"]),
		Region:       or(n.Labels["topology.kubernetes.io/region"], n.Labels["failure-domain.beta.kubernetes.io/region"]),
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && info.InternalIP == "" {
			info.InternalIP = a.Address
		}
	}
	return info
}

// Map turns the provenance into the generic Details map of the results.
func (p *Provenance) Map() map[string]any {
	b, err := json.Marshal(p)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return map[string]any{"error": err.Error()}
	}
	return m
}

// Collect gathers the cluster-wide provenance that does not depend on the
// agents: version and CNI. ctx bounds the API calls.
func collectCluster(ctx context.Context, cs kubernetes.Interface) (ver, platform string, cni *CNI, err error) {
	if ver, platform, err = ServerVersion(cs); err != nil {
		return
	}
	cni, err = DetectCNI(ctx, cs)
	return
}
