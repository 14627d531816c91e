package k8starget

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// NodeChoice is the outcome of node selection.
type NodeChoice struct {
	// Nodes are node0 (client side) and node1 (server side of other-node
	// placements); node1 is "" when only one node is usable.
	Nodes [2]string `json:"nodes"`
	// Refused says why each unusable candidate was passed over.
	Refused map[string]string `json:"refused,omitempty"`
	// Objects of the chosen nodes, for provenance.
	objects [2]*corev1.Node
}

// OneNodeReason explains why other-node placements are skipped.
func (c NodeChoice) OneNodeReason() string {
	if c.Nodes[1] != "" {
		return ""
	}
	return "needs two usable nodes, the cluster has one (" + c.Nodes[0] + ")" + refusedSuffix(c.Refused)
}

func refusedSuffix(refused map[string]string) string {
	if len(refused) == 0 {
		return ""
	}
	var parts []string
	for n, why := range refused {
		parts = append(parts, n+": "+why)
	}
	sort.Strings(parts)
	return "; refused " + strings.Join(parts, "; ")
}

// SelectNodes picks node0 and node1 among the usable Linux nodes (sorted by
// name, so a rerun picks the same ones), or checks the ones cfg names.
// agentNodes, if not nil, are the nodes where the CNI agent is Ready; a node
// without it is refused. needTwo says whether node1 is wanted at all.
func SelectNodes(ctx context.Context, cs kubernetes.Interface, cfg Config, agentNodes map[string]bool, cniName string, needTwo bool) (NodeChoice, error) {
	opts := metav1.ListOptions{}
	if len(cfg.NodeSelector) > 0 {
		opts.LabelSelector = labels.SelectorFromSet(cfg.NodeSelector).String()
	}
	list, err := cs.CoreV1().Nodes().List(ctx, opts)
	if err != nil {
		return NodeChoice{}, fmt.Errorf("list nodes: %w", err)
	}
	choice := NodeChoice{Refused: map[string]string{}}
	byName := map[string]*corev1.Node{}
	var usable []string
	for i := range list.Items {
		n := &list.Items[i]
		byName[n.Name] = n
		if why := unusable(n, agentNodes, cniName); why != "" {
			choice.Refused[n.Name] = why
			continue
		}
		usable = append(usable, n.Name)
	}
	sort.Strings(usable)
	pick := func(flag, name, other string) (string, error) {
		if name != "" {
			if _, ok := byName[name]; !ok {
				sel := ""
				if len(cfg.NodeSelector) > 0 {
					sel = " matching --node-selector " + opts.LabelSelector
				}
				return "", fmt.Errorf("%s %s: no such node%s", flag, name, sel)
			}
			if why, bad := choice.Refused[name]; bad {
				return "", fmt.Errorf("%s %s: node is not usable: %s", flag, name, why)
			}
			return name, nil
		}
		for _, u := range usable {
			if u != other {
				return u, nil
			}
		}
		return "", nil
	}
	if choice.Nodes[0], err = pick("--client-node", cfg.ClientNode, cfg.ServerNode); err != nil {
		return choice, err
	}
	if choice.Nodes[0] == "" {
		return choice, fmt.Errorf("no usable node for the agents (%d nodes listed)%s", len(list.Items), refusedSuffix(choice.Refused))
	}
	if needTwo || cfg.ServerNode != "" {
		if choice.Nodes[1], err = pick("--server-node", cfg.ServerNode, choice.Nodes[0]); err != nil {
			return choice, err
		}
	}
	for i, n := range choice.Nodes {
		choice.objects[i] = byName[n]
	}
	return choice, nil
}

// unusable says why agents cannot (or must not) run on a node, or "".
func unusable(n *corev1.Node, agentNodes map[string]bool, cniName string) string {
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	os := n.Labels["kubernetes.io/os"]
	if os == "" {
		os = n.Status.NodeInfo.OperatingSystem
	}
	switch {
	case !ready:
		return "not Ready"
	case n.Spec.Unschedulable:
		return "cordoned (unschedulable)"
	case os != "" && os != "linux":
		return "not a Linux node (" + os + ")"
	}
	for _, t := range n.Spec.Taints {
		// Agents tolerate nothing: a tainted node is someone's way of
		// saying "not here".
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return "tainted " + t.ToString() + " (agents have no tolerations)"
		}
	}
	if agentNodes != nil && !agentNodes[n.Name] {
		return "no Ready " + cniName + " agent pod on it"
	}
	return ""
}
