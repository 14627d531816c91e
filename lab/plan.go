package lab

import (
	"fmt"
	"path/filepath"
)

func nodeIP(i int) string     { return fmt.Sprintf("198.18.0.%d", 10+i) }
func podCIDR(i int) string    { return fmt.Sprintf("198.19.%d.0/24", i) }
func podIP(i, j int) string   { return fmt.Sprintf("198.19.%d.%d", i, 10+j) }
func vtepIP(i int) string     { return fmt.Sprintf("198.19.%d.0", i) }
func vtepMAC(i int) string    { return fmt.Sprintf("02:cb:00:00:00:%02x", i) }
func nodeName(i int) string   { return fmt.Sprintf("node%d", i) }
func podName(i, j int) string { return fmt.Sprintf("node%d-pod%d", i, j) }

// plan fills in the names and addresses of a lab for cfg (already validated).
func plan(cfg Config, cgroupRoot string) *Lab {
	p := Prefix(cfg.Name)
	if cfg.Routing == "" {
		cfg.Routing = RoutingNative
	}
	l := &Lab{
		Config:     cfg,
		Prefix:     p,
		Underlay:   p + "underlay",
		Routing:    cfg.Routing,
		MTU:        MTU,
		CgroupRoot: cgroupRoot,
		Sysctls:    map[string]string{},
	}
	if l.Routing == RoutingVXLAN {
		l.MTU = VXLANMTU
	}
	cg := func(n string) string {
		if cgroupRoot == "" {
			return ""
		}
		return filepath.Join(cgroupRoot, n)
	}
	for i := 0; i < cfg.Nodes; i++ {
		n := Node{Name: nodeName(i), Netns: p + nodeName(i), IP: nodeIP(i), PodCIDR: podCIDR(i), Cgroup: cg(nodeName(i))}
		if l.Routing == RoutingVXLAN {
			n.VTEP, n.VTEPMAC = vtepIP(i), vtepMAC(i)
		}
		for j := 0; j < cfg.PodsPerNode; j++ {
			n.Pods = append(n.Pods, Pod{Name: podName(i, j), Node: n.Name, Netns: p + podName(i, j), IP: podIP(i, j), Cgroup: cg(podName(i, j))})
		}
		l.Nodes = append(l.Nodes, n)
	}
	return l
}

// namespaces returns every namespace name of the lab, underlay first.
func (l *Lab) namespaces() []string {
	out := []string{l.Underlay}
	for _, n := range l.Nodes {
		out = append(out, n.Netns)
		for _, p := range n.Pods {
			out = append(out, p.Netns)
		}
	}
	return out
}
