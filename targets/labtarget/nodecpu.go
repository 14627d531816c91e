package labtarget

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/suite/nodecpu"
)

// AccountNodes implements suite.NodeAccounter: every node of the lab, on
// the CPUs its work is pinned to (NodeCPUs), with the cgroups that are its.
func (t *Target) AccountNodes() ([]nodecpu.Node, error) { return labNodes(t.lab, t.NodeCPUs) }

// labNodes is l's nodes for the accounting. The lab's cgroups are flat
// under its root (one per node, pod, WireGuard daemon, L7 or ambient
// proxy), so each is given to a node by its name, and a cgroup whose name
// names no node (the ambient waypoint) by the network namespace its
// processes run in. A cgroup that is no node's (empty, or in no lab
// namespace) is counted nowhere.
func labNodes(l *lab.Lab, cpus func(i int) []int) ([]nodecpu.Node, error) {
	out := make([]nodecpu.Node, len(l.Nodes))
	index := map[string]int{}
	for i, n := range l.Nodes {
		out[i] = nodecpu.Node{Name: n.Name, CPUs: cpus(i)}
		index[n.Name] = i
	}
	if l.CgroupRoot == "" {
		return out, nil // no cgroup v2: the CPUs alone
	}
	entries, err := os.ReadDir(l.CgroupRoot)
	if err != nil {
		return nil, err
	}
	var byNetns map[netnsx.ID]string // read once, if a name does not tell
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		node := nodeOfName(e.Name(), index)
		dir := filepath.Join(l.CgroupRoot, e.Name())
		if node == "" {
			if byNetns == nil {
				byNetns = netnsNodes(l)
			}
			node = nodeOfProcs(dir, byNetns)
		}
		if i, ok := index[node]; ok {
			out[i].Cgroups = append(out[i].Cgroups, dir)
		}
	}
	return out, nil
}

// nodeOfName is the one node a cgroup's name names among its "-"
// separated words ("node1-pod0", "wg-node1", "l7-server-node1-pod0",
// "amb-ztunnel-node0"); "" for none or for several.
func nodeOfName(name string, nodes map[string]int) string {
	found := ""
	for _, w := range strings.Split(name, "-") {
		if _, ok := nodes[w]; ok {
			if found != "" && found != w {
				return ""
			}
			found = w
		}
	}
	return found
}

// netnsNodes maps the lab's node and pod namespaces to their node.
func netnsNodes(l *lab.Lab) map[netnsx.ID]string {
	m := map[netnsx.ID]string{}
	add := func(ns, node string) {
		if id, err := netnsx.IDOf(netnsx.Path(ns)); err == nil {
			m[id] = node
		}
	}
	for _, n := range l.Nodes {
		add(n.Netns, n.Name)
		for _, p := range n.Pods {
			add(p.Netns, n.Name)
		}
	}
	return m
}

// nodeOfProcs is the node whose namespace the first of dir's processes
// that runs in one of them runs in; "" for none.
func nodeOfProcs(dir string, byNetns map[netnsx.ID]string) string {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return ""
	}
	for _, f := range strings.Fields(string(b)) {
		if _, err := strconv.Atoi(f); err != nil {
			continue
		}
		if id, err := netnsx.IDOf("/proc/" + f + "/ns/net"); err == nil && byNetns[id] != "" {
			return byNetns[id]
		}
	}
	return ""
}
