package k8starget

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cnibench/cnibench/internal/procstat"
	"github.com/cnibench/cnibench/suite/nodecpu"
)

// nodeStatTimeout bounds one node's CPU reading (an agent's answer through
// the port-forward): a sample without it records no nodes, it does not
// wait.
const nodeStatTimeout = 5 * time.Second

// kernels are the nodes' boot ids, read once: a node's kernel does not
// change under a run (an agent replaced on it reads the same).
type kernels struct {
	mu sync.Mutex
	id map[string]string // node0 → boot id
}

// AccountNodes implements suite.NodeAccounter: the run's nodes (node0,
// node1), each read through an agent of the run on it, so that queries per
// core count the nodes' whole CPU, the kernel's work included; the
// datapath's own processes are the datapath usage's (metrics or kubelet),
// not a cgroup read here.
func (t *Target) AccountNodes() ([]nodecpu.Node, error) {
	var out []nodecpu.Node
	for i, name := range t.layout.Nodes {
		ep := t.nodeAgent(i)
		if name == "" || ep == "" {
			continue
		}
		node := fmt.Sprintf("node%d", i)
		stat := func() (procstat.Stat, error) { return t.readNodeStat(node, ep) }
		if t.kernel(node) == "" { // the first time: the kernel's name
			if _, err := stat(); err != nil {
				return nil, err
			}
		}
		out = append(out, nodecpu.Node{Name: node, Stat: stat, Kernel: t.kernel(node)})
	}
	return out, nil
}

// nodeAgent is the first endpoint of the run on node i with an agent.
func (t *Target) nodeAgent(i int) string {
	for _, ep := range t.layout.Endpoints {
		if spec, ok := lookupEndpoint(ep); ok && spec.Node == i && t.agents[ep] != nil {
			return ep
		}
	}
	return ""
}

// readNodeStat reads a node's /proc/stat through the agent on endpoint
// ep, and keeps the node's kernel.
func (t *Target) readNodeStat(node, ep string) (procstat.Stat, error) {
	c, err := t.Agent(ep)
	if err != nil {
		return procstat.Stat{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), nodeStatTimeout)
	defer cancel()
	s, err := c.NodeStat(ctx)
	if err != nil {
		return procstat.Stat{}, fmt.Errorf("CPU of %s through agent %s: %w", node, ep, err)
	}
	t.kernels.mu.Lock()
	defer t.kernels.mu.Unlock()
	if t.kernels.id == nil {
		t.kernels.id = map[string]string{}
	}
	t.kernels.id[node] = s.Kernel
	return procstat.Stat{All: s.All}, nil
}

// kernel is a node's boot id as last read.
func (t *Target) kernel(node string) string {
	t.kernels.mu.Lock()
	defer t.kernels.mu.Unlock()
	return t.kernels.id[node]
}
