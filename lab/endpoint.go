package lab

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab/wireguard"
)

// Endpoints returns every node and pod: node0, node0-pod0, node0-pod1, node1, ...
func (l *Lab) Endpoints() []Endpoint {
	var out []Endpoint
	for _, n := range l.Nodes {
		out = append(out, Endpoint{Name: n.Name, Kind: "node", Node: n.Name, Netns: n.Netns, IP: n.IP, Cgroup: n.Cgroup})
		for _, p := range n.Pods {
			out = append(out, Endpoint{Name: p.Name, Kind: "pod", Node: p.Node, Netns: p.Netns, IP: p.IP, Cgroup: p.Cgroup})
		}
	}
	return out
}

// Endpoint returns the node ("node0") or pod ("node0-pod1") called name.
func (l *Lab) Endpoint(name string) (Endpoint, error) {
	for _, ep := range l.Endpoints() {
		if ep.Name == name {
			return ep, nil
		}
	}
	valid := "none"
	if n := len(l.Nodes); n > 0 {
		valid = fmt.Sprintf("node0..node%d", n-1)
		if p := len(l.Nodes[0].Pods); p > 0 {
			valid += fmt.Sprintf(", node<i>-pod0..node<i>-pod%d", p-1)
		}
	}
	return Endpoint{}, fmt.Errorf("lab %q has no endpoint %q (valid: %s)", l.Config.Name, name, valid)
}

// Start starts cmd inside ep's network namespace, inside ep's cgroup (when
// the lab has cgroup v2) and pinned to cpus if non-empty. Only the child is
// moved; the caller must Wait for cmd as usual. SysProcAttr.Pdeathsig is not
// supported (see netnsx.StartIn); Down kills whatever is left.
func (l *Lab) Start(ep Endpoint, cmd *exec.Cmd, cpus []int) error {
	if !strings.HasPrefix(ep.Netns, l.Prefix) {
		return fmt.Errorf("endpoint %q: netns %q is not part of lab %q", ep.Name, ep.Netns, l.Config.Name)
	}
	if _, err := os.Stat(ep.NetnsPath()); err != nil {
		return fmt.Errorf("endpoint %q: netns %s is missing", ep.Name, ep.NetnsPath())
	}
	if ep.Cgroup != "" {
		if _, err := os.Stat(ep.Cgroup); err != nil {
			return fmt.Errorf("endpoint %q: cgroup %s is missing", ep.Name, ep.Cgroup)
		}
	}
	if err := netnsx.StartIn(ep.NetnsPath(), ep.Cgroup, cpus, cmd); err != nil {
		return fmt.Errorf("endpoint %q: start %s: %w", ep.Name, cmd.Path, err)
	}
	return nil
}

// TempDir makes a temporary directory for a process started in ep, to be
// its TMPDIR: in the temp root and named as ep's namespace, so Down removes
// it when the process was SIGKILLed and could not (a pod's /tmp goes with
// the pod; a lab's would stay). It is 0755: the agent's dnsmasq reads its
// hosts file there as nobody.
func (l *Lab) TempDir(ep Endpoint) (string, error) {
	if !strings.HasPrefix(ep.Netns, l.Prefix+"node") {
		return "", fmt.Errorf("endpoint %q: netns %q is not part of lab %q", ep.Name, ep.Netns, l.Config.Name)
	}
	dir, err := os.MkdirTemp("", ep.Netns+"-")
	if err != nil {
		return "", fmt.Errorf("endpoint %q: %w", ep.Name, err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.Remove(dir)
		return "", fmt.Errorf("endpoint %q: %w", ep.Name, err)
	}
	return dir, nil
}

// Status describes the lab: nodes, pods, addresses, whether each namespace
// is present, and the processes running in each endpoint.
func (l *Lab) Status() (string, error) {
	v, err := inspectNamespaces(l.Prefix)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	l.writeSummary(&b, v)
	for _, n := range l.Nodes {
		vtep := ""
		if n.VTEP != "" {
			vtep = fmt.Sprintf("  vtep %s %s", n.VTEP, n.VTEPMAC)
		}
		fmt.Fprintf(&b, "%-14s %-15s pods %-16s netns %s %s  procs %s%s\n",
			n.Name, n.IP, n.PodCIDR, n.Netns, v.state(n.Netns), v.procs(n.Netns, n.Cgroup), vtep)
		for _, p := range n.Pods {
			fmt.Fprintf(&b, "  %-12s %-15s %-21s netns %s %s  procs %s\n",
				p.Name, p.IP, "", p.Netns, v.state(p.Netns), v.procs(p.Netns, p.Cgroup))
		}
	}
	return b.String(), nil
}

// writeSummary writes Status's lab-wide lines: shape, cgroup, underlay,
// Services, overlay and encryption.
func (l *Lab) writeSummary(b *strings.Builder, v nsView) {
	pods := 0
	if len(l.Nodes) > 0 {
		pods = len(l.Nodes[0].Pods)
	}
	fmt.Fprintf(b, "lab %s: %d nodes x %d pods, routing %s, mtu %d, created %s\n",
		l.Config.Name, len(l.Nodes), pods, l.Routing, l.MTU, l.Created.Format("2006-01-02 15:04:05 MST"))
	cg := l.CgroupRoot
	if cg == "" {
		cg = "none (no cgroup v2)"
	}
	fmt.Fprintf(b, "cgroup: %s\n", cg)
	fmt.Fprintf(b, "underlay: netns %s %s\n", l.Underlay, v.state(l.Underlay))
	if d := l.Config.ServiceDatapath; d != "" {
		fmt.Fprintf(b, "services: %s datapath (programmed by each run that uses the lab)\n", d)
	}
	if l.Routing == RoutingVXLAN {
		under := MTU
		if l.Config.Encryption != "" {
			under = wgMTU // the overlay runs on the WireGuard devices
		}
		fmt.Fprintf(b, "overlay: %s vni %d udp port %d, mtu %d (underlay %d)\n", VXLANDev, VXLANVNI, VXLANPort, l.MTU, under)
	}
	if l.Config.Encryption != "" {
		fmt.Fprintf(b, "encryption: %s between the nodes, device %s on udp port %d, mtu %d (a userspace daemon per node)\n",
			l.Config.Encryption, wireguard.Device, wireguard.Port, wgMTU)
	}
}

// nsView is what Status knows of the lab's named namespaces: each one's
// mount state and the processes in each.
type nsView struct {
	info map[string]netnsx.Named
	byNS map[string][]int
}

// inspectNamespaces reads the namespaces named with prefix and the
// processes inside them.
func inspectNamespaces(prefix string) (nsView, error) {
	named, err := netnsx.InspectNamed(prefix)
	if err != nil {
		return nsView{}, err
	}
	ids := map[netnsx.ID]string{}
	v := nsView{info: map[string]netnsx.Named{}}
	for _, n := range named {
		v.info[n.Name] = n
		for _, id := range n.IDs {
			ids[id] = n.Name
		}
	}
	v.byNS, err = netnsx.PidsIn(ids)
	return v, err
}

// procs lists "pid(comm)" of the processes in namespace ns or cgroup cg
// (none: "-").
func (v nsView) procs(ns, cg string) string {
	set := map[int]bool{}
	for _, p := range v.byNS[ns] {
		set[p] = true
	}
	if cg != "" {
		for _, p := range cgroupProcs(cg) {
			set[p] = true
		}
	}
	if len(set) == 0 {
		return "-"
	}
	pids := make([]int, 0, len(set))
	for p := range set {
		pids = append(pids, p)
	}
	sort.Ints(pids)
	parts := make([]string, len(pids))
	for i, p := range pids {
		parts[i] = fmt.Sprintf("%d(%s)", p, netnsx.Comm(p))
	}
	return strings.Join(parts, ",")
}

// state says whether namespace ns is mounted, missing or broken.
func (v nsView) state(ns string) string {
	n, ok := v.info[ns]
	switch {
	case !ok:
		return "MISSING"
	case n.Mounted:
		return "present"
	}
	return "BROKEN (" + n.State() + "; 'cnibench lab down' removes it)"
}
