package k8starget

import (
	"fmt"
	"strings"
)

// encryption says how the CNI encrypts traffic between nodes, from what
// DetectCNI read: Cilium's cilium-config (enable-wireguard, enable-ipsec),
// Calico's agent env (FELIX_WIREGUARDENABLED; a FelixConfiguration
// object can also turn it on, which we do not read, so "not in the env"
// is said as such), flannel's backend (wireguard, ipsec).
func (c *CNI) encryption() string {
	on := func(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "true") }
	switch {
	case c.Cilium != nil:
		wg, ipsec := c.Cilium.Keys["enable-wireguard"], c.Cilium.Keys["enable-ipsec"]
		switch {
		case on(wg):
			return "wireguard (cilium enable-wireguard=true)"
		case on(ipsec):
			return "ipsec (cilium enable-ipsec=true)"
		}
		return fmt.Sprintf("none (cilium enable-wireguard=%q, enable-ipsec=%q)", wg, ipsec)
	case c.component("calico") != nil:
		v, ok := c.component("calico").Env["FELIX_WIREGUARDENABLED"]
		switch {
		case on(v):
			return "wireguard (calico FELIX_WIREGUARDENABLED=true)"
		case ok:
			return fmt.Sprintf("none (calico FELIX_WIREGUARDENABLED=%q)", v)
		}
		return "unknown (calico: not in the agent's env; a FelixConfiguration's wireguardEnabled is not read)"
	case c.FlannelBackend != "":
		if b := strings.ToLower(c.FlannelBackend); strings.Contains(b, "wireguard") || strings.Contains(b, "ipsec") {
			return b + " (flannel backend)"
		}
		return "none (flannel backend " + c.FlannelBackend + ")"
	}
	return "unknown (" + c.Plugin + ": where it keeps encryption is not read)"
}
