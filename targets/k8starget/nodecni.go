package k8starget

import (
	"fmt"
	"path"
	"strings"

	"github.com/cnibench/cnibench/agent/nodeprobe"
)

// noCNIDaemonSet is CNI.Source when no DaemonSet of a known CNI runs.
const noCNIDaemonSet = "no CNI DaemonSet found"

// NodeCNIConfig is one node's CNI config as its node probe read it.
type NodeCNIConfig struct {
	Node string `json:"node"`
	nodeprobe.CNIConfig
}

// cniTypeNames name a CNI plugin type as DetectCNI names the same CNI
// found by its DaemonSet, so both ways of finding it agree; any other
// type is its own name (bridge, ptp, …).
var cniTypeNames = map[string]string{
	"cilium-cni": "cilium",
	"calico":     "calico",
	"aws-cni":    "aws-vpc-cni",
	"flannel":    "flannel",
	"antrea":     "antrea",
	"weave-net":  "weave",
}

// plugin names the CNI of a node's config: its first plugin, the one that
// sets up the pod's interface (the rest are chained onto it); "" when
// none was read.
func (n NodeCNIConfig) plugin() string {
	if n.Error != "" || len(n.Plugins) == 0 {
		return ""
	}
	if name, ok := cniTypeNames[n.Plugins[0]]; ok {
		return name
	}
	return n.Plugins[0]
}

// source is where the node's CNI was read.
func (n NodeCNIConfig) source() string {
	return "node CNI config " + path.Join(n.Dir, n.File) + " on " + n.Node
}

// applyNodeCNI records the nodes' CNI configs and, when no DaemonSet
// named the CNI, names it from them: the plugin the nodes agree on, or
// each node's when they differ. why is why no config was read ("" when
// the probes answered).
func (c *CNI) applyNodeCNI(configs []NodeCNIConfig, why string) {
	c.NodeConfig = configs
	if c.Plugin != "unknown" {
		return
	}
	var read []NodeCNIConfig
	var failed []string
	for _, n := range configs {
		if n.plugin() != "" {
			read = append(read, n)
		} else {
			failed = append(failed, n.Node+": "+n.Error)
		}
	}
	if len(read) == 0 {
		if why == "" {
			why = strings.Join(failed, "; ")
		}
		c.Source = noCNIDaemonSet + "; the node's CNI config was not read: " + why
		return
	}
	var sources, each []string
	disagree := false
	for _, n := range read {
		sources = append(sources, n.source())
		each = append(each, n.plugin()+" on "+n.Node)
		disagree = disagree || n.plugin() != read[0].plugin()
	}
	c.Plugin, c.Source = read[0].plugin(), strings.Join(sources, "; ")
	if disagree {
		c.Plugin, c.Source = strings.Join(each, ", "), c.Source+" (the nodes disagree)"
	}
	for _, f := range failed {
		c.Source += "; not read on " + f
	}
}

// String is the progress's word on what was found.
func (n NodeCNIConfig) String() string {
	if p := n.plugin(); p != "" {
		return fmt.Sprintf("%s on %s (%s: %s)", p, n.Node, n.File, strings.Join(n.Plugins, ", "))
	}
	return n.Node + ": " + n.Error
}
