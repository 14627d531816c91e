package k8starget

import "testing"

// The lab scenario a cluster's datapath is, as TKE's columns need it.
func TestLabModel(t *testing.T) {
	kp := func(mode string) *KubeProxy { return &KubeProxy{Mode: mode} }
	for _, c := range []struct {
		cni       CNI
		want, say string
	}{
		{CNI{Plugin: "bridge", KubeProxy: kp("iptables")}, "iptables", "kube-proxy iptables, bridge natively routed"},
		{CNI{Plugin: "bridge", KubeProxy: kp("nftables")}, "nftables", "kube-proxy nftables, bridge natively routed"},
		{CNI{Plugin: "bridge", KubeProxy: kp("ipvs")}, "", "kube-proxy ipvs, bridge natively routed"},
		{CNI{Plugin: "flannel", FlannelBackend: "vxlan", KubeProxy: kp("iptables")}, "vxlan+iptables", "kube-proxy iptables, flannel over vxlan"},
		{CNI{Plugin: "flannel", FlannelBackend: "host-gw", KubeProxy: kp("iptables")}, "iptables", "kube-proxy iptables, flannel natively routed (host-gw)"},
		{CNI{Plugin: "flannel", FlannelBackend: "unknown", KubeProxy: kp("iptables")}, "", "kube-proxy iptables, flannel backend unknown"},
		{CNI{Plugin: "cilium", Cilium: &CiliumConfig{RoutingMode: "native", KubeProxyReplacement: "true"}}, "ebpf", "Cilium natively routed with kube-proxy replacement"},
		{CNI{Plugin: "cilium", Cilium: &CiliumConfig{RoutingMode: "tunnel", KubeProxyReplacement: "true"}}, "vxlan+ebpf", "Cilium over vxlan with kube-proxy replacement"},
		{CNI{Plugin: "cilium", Cilium: &CiliumConfig{RoutingMode: "tunnel", TunnelProtocol: "geneve", KubeProxyReplacement: "true"}}, "", "Cilium over geneve with kube-proxy replacement"},
		{CNI{Plugin: "cilium", Cilium: &CiliumConfig{RoutingMode: "native", KubeProxyReplacement: "false"}, KubeProxy: kp("iptables")}, "iptables", "kube-proxy iptables, cilium natively routed"},
		{CNI{Plugin: "calico", KubeProxy: kp("iptables")}, "", "kube-proxy iptables, calico routing not read"},
		{CNI{Plugin: "bridge"}, "", "no kube-proxy, bridge natively routed"},
	} {
		got, say := c.cni.LabModel()
		if got != c.want || say != c.say {
			t.Errorf("%+v: %q (%s), want %q (%s)", c.cni, got, say, c.want, c.say)
		}
	}
	var none *CNI
	if got, say := none.LabModel(); got != "" || say != "CNI not detected" {
		t.Errorf("nil CNI: %q %q", got, say)
	}
}
