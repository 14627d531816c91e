package k8starget

import (
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/agent/nodeprobe"
)

// NodeKernel is one run node's kernel as its node probe read it: whether
// it can do the encryption CNIs put between nodes (WireGuard, IPsec
// ESP), or why it was not read.
type NodeKernel struct {
	Node string `json:"node"`
	nodeprobe.KernelEncryption
	Error string `json:"error,omitempty"`
}

// encryption says how the CNI encrypts traffic between nodes, from what
// DetectCNI read, and, where the node probes read them (NodeKernel),
// what the nodes' kernels offer.
func (c *CNI) encryption() string {
	mode, from := c.encryptionConfig()
	if k := kernelNote(c.NodeKernel); k != "" {
		from += "; " + k
	}
	return mode + " (" + from + ")"
}

// encryptionOff says the CNI's config turns encryption off: where the
// nodes' kernels say whether it could be turned on.
func (c *CNI) encryptionOff() bool {
	mode, _ := c.encryptionConfig()
	return mode == "none"
}

// encryptionConfig is the encryption mode and what it was read from:
// Cilium's cilium-config (enable-wireguard, enable-ipsec), Calico's
// agent env (FELIX_WIREGUARDENABLED; a FelixConfiguration object can
// also turn it on, which we do not read, so "not in the env" is said as
// such), flannel's backend (wireguard, ipsec).
func (c *CNI) encryptionConfig() (mode, from string) {
	on := func(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "true") }
	switch {
	case c.Cilium != nil:
		wg, ipsec := c.Cilium.Keys["enable-wireguard"], c.Cilium.Keys["enable-ipsec"]
		switch {
		case on(wg):
			return "wireguard", "cilium enable-wireguard=true"
		case on(ipsec):
			return "ipsec", "cilium enable-ipsec=true"
		}
		return "none", fmt.Sprintf("cilium enable-wireguard=%q, enable-ipsec=%q", wg, ipsec)
	case c.component("calico") != nil:
		v, ok := c.component("calico").Env["FELIX_WIREGUARDENABLED"]
		switch {
		case on(v):
			return "wireguard", "calico FELIX_WIREGUARDENABLED=true"
		case ok:
			return "none", fmt.Sprintf("calico FELIX_WIREGUARDENABLED=%q", v)
		}
		return "unknown", "calico: not in the agent's env; a FelixConfiguration's wireguardEnabled is not read"
	case c.FlannelBackend != "":
		if b := strings.ToLower(c.FlannelBackend); strings.Contains(b, "wireguard") || strings.Contains(b, "ipsec") {
			return b, "flannel backend"
		}
		return "none", "flannel backend " + c.FlannelBackend
	}
	return "unknown", c.Plugin + ": where it keeps encryption is not read"
}

// kernelNote says, per kind of encryption, which nodes' kernels cannot
// do it, can, or were not read: "WireGuard unsupported on this kernel:
// nodes a, b; IPsec unsupported on this kernel: nodes a, b". "" when no
// node's kernel was asked.
func kernelNote(kernels []NodeKernel) string {
	if len(kernels) == 0 {
		return ""
	}
	var parts []string
	for _, f := range []struct {
		name string
		of   func(NodeKernel) nodeprobe.KernelSupport
	}{
		{"WireGuard", func(k NodeKernel) nodeprobe.KernelSupport { return k.WireGuard }},
		{"IPsec", func(k NodeKernel) nodeprobe.KernelSupport { return k.IPsec }},
	} {
		by := map[string][]string{}
		for _, k := range kernels {
			s := f.of(k).Support
			if k.Error != "" || s == "" {
				s = nodeprobe.KernelUnknown
			}
			by[s] = append(by[s], k.Node)
		}
		for _, s := range []struct{ support, says string }{
			{nodeprobe.KernelUnsupported, " unsupported on this kernel: "},
			{nodeprobe.KernelAvailable, " available on this kernel: "},
			{nodeprobe.KernelUnknown, " support unknown: "},
		} {
			if nodes := by[s.support]; len(nodes) > 0 {
				parts = append(parts, f.name+s.says+nodeList(nodes))
			}
		}
	}
	return strings.Join(parts, "; ")
}

// nodeList is "node a" or "nodes a, b".
func nodeList(nodes []string) string {
	if len(nodes) == 1 {
		return "node " + nodes[0]
	}
	return "nodes " + strings.Join(nodes, ", ")
}
