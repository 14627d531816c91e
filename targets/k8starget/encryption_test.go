package k8starget

import (
	"testing"

	"github.com/cnibench/cnibench/agent/nodeprobe"
)

// The CNI's encryption mode is read from where each CNI keeps it, and
// "unknown" says where it was not looked for.
func TestCNIEncryption(t *testing.T) {
	calico := func(env map[string]string) *CNI {
		return &CNI{Plugin: "calico", Components: []Component{{Plugin: "calico", Env: env}}}
	}
	for _, c := range []struct {
		cni  *CNI
		want string
		off  bool
	}{
		{&CNI{Plugin: "cilium", Cilium: &CiliumConfig{Keys: map[string]string{"enable-wireguard": "true"}}}, "wireguard (cilium enable-wireguard=true)", false},
		{&CNI{Plugin: "cilium", Cilium: &CiliumConfig{Keys: map[string]string{"enable-ipsec": "True"}}}, "ipsec (cilium enable-ipsec=true)", false},
		{&CNI{Plugin: "cilium", Cilium: &CiliumConfig{Keys: map[string]string{}}}, `none (cilium enable-wireguard="", enable-ipsec="")`, true},
		{calico(map[string]string{"FELIX_WIREGUARDENABLED": "true"}), "wireguard (calico FELIX_WIREGUARDENABLED=true)", false},
		{calico(map[string]string{"FELIX_WIREGUARDENABLED": "false"}), `none (calico FELIX_WIREGUARDENABLED="false")`, true},
		{calico(nil), "unknown (calico: not in the agent's env; a FelixConfiguration's wireguardEnabled is not read)", false},
		{&CNI{Plugin: "flannel", FlannelBackend: "wireguard"}, "wireguard (flannel backend)", false},
		{&CNI{Plugin: "flannel", FlannelBackend: "vxlan"}, "none (flannel backend vxlan)", true},
		{&CNI{Plugin: "unknown"}, "unknown (unknown: where it keeps encryption is not read)", false},
	} {
		if got := c.cni.encryption(); got != c.want {
			t.Errorf("%s: %q, want %q", c.cni.Plugin, got, c.want)
		}
		if c.cni.encryptionOff() != c.off {
			t.Errorf("%s: encryption off %v, want %v", c.cni.Plugin, !c.off, c.off)
		}
	}
}

// nodeKernel is a node's kernel as a probe answers it: WireGuard's and
// IPsec's support ("" leaves the kernel unread, with err).
func nodeKernel(node, wg, ipsec, err string) NodeKernel {
	k := NodeKernel{Node: node, Error: err}
	if err == "" {
		k.KernelEncryption = nodeprobe.KernelEncryption{Release: "6.18.44-fc-v669",
			WireGuard: nodeprobe.KernelSupport{Support: wg, Detail: "d"}, IPsec: nodeprobe.KernelSupport{Support: ipsec, Detail: "d"}}
	}
	return k
}

// What the nodes' kernels offer is said inside the encryption's
// parenthesis, one line: which nodes cannot do each kind, which can,
// which were not readable (a probe that did not answer is unknown, never
// a guess).
func TestEncryptionKernelNote(t *testing.T) {
	const u, a, x = nodeprobe.KernelUnsupported, nodeprobe.KernelAvailable, nodeprobe.KernelUnknown
	cilium := func(keys map[string]string, kernels ...NodeKernel) *CNI {
		return &CNI{Plugin: "cilium", Cilium: &CiliumConfig{Keys: keys}, NodeKernel: kernels}
	}
	off := map[string]string{}
	for _, c := range []struct {
		name string
		cni  *CNI
		want string
	}{
		// The test cluster: kernels without WireGuard or ESP.
		{"test cluster", cilium(off, nodeKernel("cnbk-node0", u, u, ""), nodeKernel("cnbk-node1", u, u, "")),
			`none (cilium enable-wireguard="", enable-ipsec=""; WireGuard unsupported on this kernel: nodes cnbk-node0, cnbk-node1; IPsec unsupported on this kernel: nodes cnbk-node0, cnbk-node1)`},
		{"one node", cilium(off, nodeKernel("a", u, a, "")),
			`none (cilium enable-wireguard="", enable-ipsec=""; WireGuard unsupported on this kernel: node a; IPsec available on this kernel: node a)`},
		{"kernels differ", cilium(off, nodeKernel("a", a, x, ""), nodeKernel("b", u, x, "")),
			`none (cilium enable-wireguard="", enable-ipsec=""; WireGuard unsupported on this kernel: node b; WireGuard available on this kernel: node a; IPsec support unknown: nodes a, b)`},
		{"a probe did not answer", cilium(off, nodeKernel("a", u, u, ""), nodeKernel("b", "", "", "connection refused")),
			`none (cilium enable-wireguard="", enable-ipsec=""; WireGuard unsupported on this kernel: node a; WireGuard support unknown: node b; IPsec unsupported on this kernel: node a; IPsec support unknown: node b)`},
		{"an older probe", cilium(off, nodeKernel("a", "", "", "")),
			`none (cilium enable-wireguard="", enable-ipsec=""; WireGuard support unknown: node a; IPsec support unknown: node a)`},
		{"encryption on", cilium(map[string]string{"enable-wireguard": "true"}, nodeKernel("a", a, u, "")),
			"wireguard (cilium enable-wireguard=true; WireGuard available on this kernel: node a; IPsec unsupported on this kernel: node a)"},
		{"bridge", &CNI{Plugin: "bridge", NodeKernel: []NodeKernel{nodeKernel("a", u, u, "")}},
			"unknown (bridge: where it keeps encryption is not read; WireGuard unsupported on this kernel: node a; IPsec unsupported on this kernel: node a)"},
		{"not read", cilium(off), `none (cilium enable-wireguard="", enable-ipsec="")`},
	} {
		if got := c.cni.encryption(); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}
