package lab

// The lab's own sysctls, written in each namespace before Config.Sysctls.
// A new network namespace copies the root namespace's IPv4 "all" and
// "default" devconf (net.core.devconf_inherit_init_net=0, the kernel's
// default), so without them a lab on a Docker or Kubernetes host would
// inherit ip_forward=1 in its pods, kube-proxy's route_localnet=1, systemd's
// rp_filter=2, IPVS's arp_ignore=1. Each devconf key is written for "all",
// "default" (devices made or moved in later) and "lo" (made with the
// namespace, before these writes, from the inherited default).

// sysctl is one write; optional ones may be absent (a module not loaded).
type sysctl struct {
	key, value string
	optional   bool
}

// devconfOff are the IPv4 per-device settings every lab namespace has off:
// reverse-path filtering (pods' replies come back on other paths than a
// strict filter expects), local source addresses, 127/8 routing, proxy ARP
// (only the nodes' pod-facing cnbp<j> have it, set by build), ARP
// restrictions and martian logging.
var devconfOff = []string{"rp_filter", "accept_local", "route_localnet", "proxy_arp", "arp_ignore", "arp_announce", "arp_filter", "log_martians"}

// baseSysctls are the sysctls a namespace of kind gets: devconfOff and
// forwarding (on in nodes only); the underlay's bridge also keeps bridged
// frames out of netfilter where br_netfilter is loaded (its default is to
// pass them through iptables).
func baseSysctls(kind string) []sysctl {
	fwd := "0"
	if kind == kindNode {
		fwd = "1"
	}
	var out []sysctl
	for _, dev := range []string{"default", "all", "lo"} {
		c := "net.ipv4.conf." + dev + "."
		out = append(out, sysctl{key: c + "forwarding", value: fwd})
		for _, k := range devconfOff {
			out = append(out, sysctl{key: c + k, value: "0"})
		}
	}
	if kind == kindUnderlay {
		for _, k := range []string{"iptables", "ip6tables", "arptables"} {
			out = append(out, sysctl{key: "net.bridge.bridge-nf-call-" + k, value: "0", optional: true})
		}
	}
	return out
}
