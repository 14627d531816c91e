package k8starget

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Usage is what one datapath container has used on one node, read from the
// kubelet's summary API: cumulative CPU (so the difference between two
// reads is exactly the CPU spent in between, unlike the metrics API's
// windowed rates) and the memory working set.
type Usage struct {
	Node        string  `json:"node"`
	Plugin      string  `json:"plugin"` // cilium, kube-proxy, calico, ...
	Pod         string  `json:"pod"`
	Container   string  `json:"container"`
	CPUSeconds  float64 `json:"cpu_seconds"` // cumulative since the container started
	MemoryBytes uint64  `json:"memory_working_set_bytes"`
}

// Key identifies a container across two reads.
func (u Usage) Key() string { return u.Node + "/" + u.Pod + "/" + u.Container }

// summary is the part of the kubelet's /stats/summary we read.
type summary struct {
	Pods []struct {
		PodRef struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"podRef"`
		Containers []struct {
			Name string `json:"name"`
			CPU  *struct {
				UsageCoreNanoSeconds *uint64 `json:"usageCoreNanoSeconds"`
			} `json:"cpu"`
			Memory *struct {
				WorkingSetBytes *uint64 `json:"workingSetBytes"`
			} `json:"memory"`
		} `json:"containers"`
	} `json:"pods"`
}

// DatapathUsage reads, through the API server's node proxy, the kubelet
// summary of each node and returns the containers of the datapath
// components (the CNI's and kube-proxy's DaemonSet pods). It needs get on
// nodes/proxy, which `cnibench k8s rbac` grants only with --node-proxy:
// that right also reaches the kubelet's exec API, so it is the admin's call.
func DatapathUsage(ctx context.Context, cs kubernetes.Interface, nodes []string, cni *CNI) ([]Usage, error) {
	if cni == nil || len(cni.Components) == 0 {
		return nil, nil
	}
	rc, err := restClient(cs)
	if err != nil {
		return nil, fmt.Errorf("kubelet summary: %w", err)
	}
	var out []Usage
	for _, node := range nodes {
		if node == "" {
			continue
		}
		raw, err := rc.Get().Resource("nodes").Name(node).SubResource("proxy", "stats", "summary").DoRaw(ctx)
		if err != nil {
			return nil, fmt.Errorf("kubelet summary of node %s: %w", node, rawError(raw, err, kubeletHint))
		}
		var s summary
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("kubelet summary of node %s: %w", node, err)
		}
		for _, p := range s.Pods {
			comp := datapathComponent(cni, p.PodRef.Namespace, p.PodRef.Name)
			if comp == nil {
				continue
			}
			for _, c := range p.Containers {
				u := Usage{Node: node, Plugin: comp.Plugin, Pod: p.PodRef.Name, Container: c.Name}
				if c.CPU == nil || c.CPU.UsageCoreNanoSeconds == nil {
					continue // no CPU stats: nothing to account
				}
				u.CPUSeconds = float64(*c.CPU.UsageCoreNanoSeconds) / 1e9
				if c.Memory != nil && c.Memory.WorkingSetBytes != nil {
					u.MemoryBytes = *c.Memory.WorkingSetBytes
				}
				out = append(out, u)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}

// kubeletHint is what a refused kubelet summary read needs.
const kubeletHint = "get on nodes/proxy is needed for --datapath-usage kubelet: grant it with 'cnibench k8s rbac --node-proxy' (or use --datapath-usage metrics)"

// rawError makes a raw read's error say what the API server said. client-go
// reports a JSON Status body of a raw (DoRaw) read as "unknown (get nodes
// NAME)"; the Status's own message is taken from the body instead, and a
// Forbidden one gets hint.
func rawError(body []byte, err error, hint string) error {
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Message != "" {
		err = &apierrors.StatusError{ErrStatus: st}
	}
	if apierrors.IsForbidden(err) && hint != "" {
		return fmt.Errorf("%w; %s", err, hint)
	}
	return err
}

// datapathComponent finds the component a pod belongs to: DaemonSet pods
// are named <daemonset>-<5 characters>.
func datapathComponent(cni *CNI, ns, pod string) *Component {
	for i := range cni.Components {
		c := &cni.Components[i]
		if c.Namespace == ns && strings.HasPrefix(pod, c.DaemonSet+"-") && len(pod) == len(c.DaemonSet)+6 {
			return c
		}
	}
	return nil
}

// UsageDelta is the CPU each datapath container spent between two reads
// (containers that restarted in between are left out: their counter
// started again) and its memory at the second read.
func UsageDelta(before, after []Usage) []Usage {
	prev := map[string]Usage{}
	for _, u := range before {
		prev[u.Key()] = u
	}
	var out []Usage
	for _, u := range after {
		b, ok := prev[u.Key()]
		if !ok || u.CPUSeconds < b.CPUSeconds {
			continue
		}
		d := u
		d.CPUSeconds = u.CPUSeconds - b.CPUSeconds
		out = append(out, d)
	}
	return out
}
