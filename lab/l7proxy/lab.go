package l7proxy

import (
	"fmt"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
)

// LabPod is pod name ("node1-pod0") of lab l as a PodRef.
func LabPod(l *lab.Lab, name string) (PodRef, error) {
	for _, n := range l.Nodes {
		for _, p := range n.Pods {
			if p.Name == name {
				return PodRef{Name: p.Name, Node: n.Name, Netns: netnsx.Path(p.Netns), NodeNetns: netnsx.Path(n.Netns), IP: p.IP, NodeIP: n.IP}, nil
			}
		}
	}
	return PodRef{}, fmt.Errorf("l7proxy: lab %q has no pod %q", l.Config.Name, name)
}
