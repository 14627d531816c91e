package k8starget

import "fmt"

// LabModel names the lab scenario that models the cluster's Service
// datapath and pod routing, and says the datapath in words: a published
// report's profile whose columns are lab scenarios runs on a cluster as
// the column its datapath is (suite.OnCluster). The scenario is "" when
// the lab models neither this CNI's routing nor its Services.
//
//   - Cilium with kube-proxy replacement: "ebpf" natively routed,
//     "vxlan+ebpf" over VXLAN;
//   - kube-proxy in iptables or nftables mode, pods routed natively (the
//     bridge plugin, flannel host-gw, Cilium without the replacement): the
//     mode's name; over VXLAN (flannel's default, Cilium's tunnel): "vxlan+"
//     and the mode's.
func (c *CNI) LabModel() (scenario, datapath string) {
	if c == nil {
		return "", "CNI not detected"
	}
	overlay, routing := c.overlay()
	if c.Plugin == "cilium" && c.Cilium != nil && c.ciliumReplacesKubeProxy() {
		return overlaid("ebpf", overlay), fmt.Sprintf("Cilium %s with kube-proxy replacement", routing)
	}
	kp := "no kube-proxy"
	if c.KubeProxy != nil {
		kp = "kube-proxy " + c.KubeProxy.Mode
	}
	datapath = fmt.Sprintf("%s, %s %s", kp, c.Plugin, routing)
	if c.KubeProxy == nil || (c.KubeProxy.Mode != "iptables" && c.KubeProxy.Mode != "nftables") {
		return "", datapath
	}
	return overlaid(c.KubeProxy.Mode, overlay), datapath
}

// overlaid is the lab scenario of Services by base under the overlay
// (overlay's result): base natively routed, "vxlan+"base over VXLAN, ""
// for an encapsulation the lab has no part for.
func overlaid(base, encap string) string {
	switch encap {
	case "":
		return base
	case "vxlan":
		return "vxlan+" + base
	}
	return ""
}

// ciliumReplacesKubeProxy is Cilium's kube-proxy-replacement on: "true",
// or "strict" as versions before 1.14 named it.
func (c *CNI) ciliumReplacesKubeProxy() bool {
	kpr := c.Cilium.KubeProxyReplacement
	return kpr == "true" || kpr == "strict"
}

// overlay is the pods' encapsulation between nodes ("" when routed
// natively, "?" when not read or not modelled) and the routing in words.
func (c *CNI) overlay() (encap, words string) {
	switch c.Plugin {
	case "cilium":
		if c.Cilium == nil {
			return "?", "routing not read"
		}
		if c.Cilium.RoutingMode == "native" {
			return "", "natively routed"
		}
		// tunnel is Cilium's default routing mode, VXLAN its default
		// protocol.
		proto := c.Cilium.TunnelProtocol
		if proto == "" {
			proto = "vxlan"
		}
		return proto, "over " + proto
	case "flannel":
		switch c.FlannelBackend {
		case "host-gw":
			return "", "natively routed (host-gw)"
		case "vxlan":
			return "vxlan", "over vxlan"
		}
		return "?", "backend " + c.FlannelBackend
	case "bridge", "ptp":
		return "", "natively routed"
	}
	return "?", "routing not read"
}

// LabModel is the cluster's CNI's (CNI.LabModel).
func (t *Target) LabModel() (scenario, datapath string) { return t.prov.CNI.LabModel() }
