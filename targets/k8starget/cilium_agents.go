package k8starget

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// ciliumAgentContainer is the agent's container in Cilium's DaemonSet.
const ciliumAgentContainer = "cilium-agent"

// ciliumAgent is the Cilium agent pod of one node.
type ciliumAgent struct {
	Node, Pod, Container string
}

// ciliumAgents finds, on every node, the one agent pod of the Cilium
// DaemonSet that runs generation (0: any) and is Ready; it says which
// node has none, or more than one (a rollout under way).
func ciliumAgents(ctx context.Context, cs kubernetes.Interface, comp *Component, nodes []string, generation int64) ([]ciliumAgent, error) {
	// Without a selector Component.pods would list the whole namespace,
	// and another pod on the node would pass for the agent.
	if comp.selector == nil {
		return nil, fmt.Errorf("DaemonSet %s/%s: no usable pod selector", comp.Namespace, comp.DaemonSet)
	}
	list, err := comp.pods(ctx, cs)
	if err != nil {
		return nil, err
	}
	var out []ciliumAgent
	for _, node := range nodes {
		var found []corev1.Pod
		for _, p := range list.Items {
			if p.Spec.NodeName == node && p.DeletionTimestamp == nil {
				found = append(found, p)
			}
		}
		switch {
		case len(found) == 0:
			return nil, fmt.Errorf("no Cilium agent pod on node %s", node)
		case len(found) > 1:
			return nil, fmt.Errorf("%d Cilium agent pods on node %s (a rollout under way)", len(found), node)
		}
		p := found[0]
		if g, ok := p.Labels["pod-template-generation"]; ok && generation > 0 && g != strconv.FormatInt(generation, 10) {
			return nil, fmt.Errorf("the Cilium agent pod %s on node %s runs generation %s, not %d yet", p.Name, node, g, generation)
		}
		if !podReady(&p) {
			return nil, fmt.Errorf("the Cilium agent pod %s on node %s is not Ready", p.Name, node)
		}
		c := ciliumAgentContainer
		if len(p.Spec.Containers) > 0 && !slices.ContainsFunc(p.Spec.Containers, func(ct corev1.Container) bool { return ct.Name == c }) {
			c = p.Spec.Containers[0].Name
		}
		out = append(out, ciliumAgent{Node: node, Pod: p.Name, Container: c})
	}
	return out, nil
}

// waitCiliumAgents waits until ciliumAgents finds every node's agent of
// generation Ready, or timeout passes (naming the last reason).
func waitCiliumAgents(ctx context.Context, cs kubernetes.Interface, comp *Component, nodes []string, generation int64, timeout time.Duration) ([]ciliumAgent, error) {
	deadline := time.Now().Add(timeout)
	for {
		agents, err := ciliumAgents(ctx, cs, comp, nodes, generation)
		if err == nil {
			return agents, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !time.Now().Before(deadline) {
			return nil, fmt.Errorf("after %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(pollInterval, time.Until(deadline))):
		}
	}
}

// nodesText is "a and b".
func nodesText(agents []ciliumAgent) string {
	var n []string
	for _, a := range agents {
		n = append(n, a.Node)
	}
	return strings.Join(n, " and ")
}
