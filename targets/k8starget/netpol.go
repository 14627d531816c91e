package k8starget

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The NetworkPolicy check (--network-policy-check, netpol_check.go): one
// standard networking.k8s.io/v1 NetworkPolicy in the run's namespace lets
// only the client agent reach the pod-network servers' data ports, and
// one extra agent pod that is not the client (the denied prober) must then
// fail to connect where the client still connects.
const (
	// NetPolName is the run's NetworkPolicy.
	NetPolName = "cnibench-allow-client-only"
	// NetPolDeniedEndpoint is the prober the policy does not allow; it
	// runs on node0, so it probes node0's servers on the same node and
	// node1's across nodes.
	NetPolDeniedEndpoint = "netpol-denied"
	// RoleNetPolDenied is its role label: neither client nor server, so
	// no policy selects it and no rule allows it.
	RoleNetPolDenied = "netpol-denied"
	// netPolClient is the one endpoint the policy allows (the client of
	// every placement).
	netPolClient = "node0-pod0"
)

// netPolServers are the pod-network servers of a layout: what the policy
// selects. hostNetwork agents are left out: NetworkPolicy does not apply
// to them.
func netPolServers(l Layout) []string {
	var out []string
	for _, ep := range l.Endpoints {
		spec, ok := lookupEndpoint(ep)
		if ok && !spec.Host && ep != netPolClient {
			out = append(out, ep)
		}
	}
	return out
}

// networkPolicies are the check's policies (none without it): ingress to
// the pod-network servers only from the client pod, on every port, and
// from anywhere to the control port, so the CLI's control API (direct
// access from a pod or node) and the kubelet's readiness probe are never
// cut off by the check.
func networkPolicies(l Layout) []*networkingv1.NetworkPolicy {
	servers := netPolServers(l)
	if !l.NetPolCheck || len(servers) == 0 {
		return nil
	}
	control := intstr.FromInt32(ControlPort)
	tcp := corev1.ProtocolTCP
	return []*networkingv1.NetworkPolicy{{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: NetPolName, Namespace: l.Namespace, Labels: baseLabels(l.RunID, NameAgent)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{
				MatchLabels: map[string]string{LabelRunID: l.RunID},
				MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: LabelEndpoint, Operator: metav1.LabelSelectorOpIn, Values: servers,
				}},
			},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{LabelRunID: l.RunID, LabelEndpoint: netPolClient},
				}}}},
				{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &control}}},
			},
		},
	}}
}

// netPolDeniedPod is the denied prober: an agent like the others, on
// node0's pod network, with its own role label.
func netPolDeniedPod(l Layout, res corev1.ResourceRequirements) *corev1.Pod {
	if !l.NetPolCheck || len(netPolServers(l)) == 0 || l.Nodes[0] == "" {
		return nil
	}
	p := agentPod(l, endpointSpec{Name: NetPolDeniedEndpoint, Node: 0}, l.Nodes[0], res)
	p.Labels[LabelRole] = RoleNetPolDenied
	return p
}

// validateNetPol checks --network-policy-check against the placements:
// the policy needs a server on the pod network.
func (c *Config) validateNetPol() error {
	if !c.NetworkPolicyCheck {
		return nil
	}
	if c.Scale != nil {
		return errors.New("--network-policy-check does not apply to the Service-scale sweep")
	}
	if eps, _ := endpointsFor(c.Placements, c.Pairs); len(netPolServers(Layout{Endpoints: eps})) == 0 {
		return errors.New("--network-policy-check needs a placement with a server on the pod network (pod-to-pod or pod-to-service)")
	}
	return nil
}
