package labtarget

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/netnsx"
)

// flowCounter is implemented by the eBPF datapaths (their flow map).
type flowCounter interface {
	FlowEntries(ctx context.Context) (int, error)
}

// ScaleDatapath returns the Service datapath that the Service-scale sweep
// reprograms step by step, and the test Services every step must keep
// (those of ScalePlacement). For the per-node datapaths (iptables,
// nftables, ebpf-tc) it is every node's, programmed together, as
// kube-proxy keeps every node in sync; for ebpf it is the lab's one
// socket load balancer, which sees every pod's connect().
func (t *Target) ScaleDatapath() (datapath.Datapath, []datapath.Service, error) {
	if len(t.dps) == 0 {
		return nil, nil, fmt.Errorf("lab %q has no Service datapath (use a scenario such as iptables or ebpf)", t.lab.Config.Name)
	}
	pl, err := t.ScalePlacement()
	if err != nil {
		return nil, nil, err
	}
	svcs, err := placementServices(t.lab, []string{pl}, t.pairs())
	if err != nil {
		return nil, nil, err
	}
	dp, err := t.datapath()
	return dp, svcs, err
}

// ScalePlacement implements suite.ScaleTarget: the first pod-to-service
// placement the target was opened with (the CLI picks other-node when the
// lab has two nodes, same-node when it has one).
func (t *Target) ScalePlacement() (string, error) {
	for _, pl := range t.cfg.Placements {
		if _, ok := testServices[pl]; ok {
			return pl, nil
		}
	}
	return "", fmt.Errorf("lab %q was opened without a pod-to-service placement to sweep on", t.lab.Config.Name)
}

// ConntrackUsage reads node0's conntrack table: entries in use
// (nf_conntrack_count, -1 when conntrack is not loaded in that namespace),
// the table's size (nf_conntrack_max) and, for the eBPF datapaths, the
// entries of their own flow map.
func (t *Target) ConntrackUsage(ctx context.Context) (count, max, flows int, err error) {
	count, max = -1, 0
	err = netnsx.Do(netnsx.Path(t.lab.Nodes[0].Netns), func() error {
		if v, err := readIntSysctl("net.netfilter.nf_conntrack_count"); err == nil {
			count = v
		} else if !errors.Is(err, netnsx.ErrNoSysctl) {
			return err
		}
		if v, err := readIntSysctl("net.netfilter.nf_conntrack_max"); err == nil {
			max = v
		} else if !errors.Is(err, netnsx.ErrNoSysctl) {
			return err
		}
		return nil
	})
	if err != nil {
		return count, max, 0, fmt.Errorf("conntrack of %s: %w", t.lab.Nodes[0].Name, err)
	}
	if len(t.dps) > 0 {
		if fc, ok := t.dps[0].(flowCounter); ok {
			if flows, err = fc.FlowEntries(ctx); err != nil {
				return count, max, 0, err
			}
		}
	}
	return count, max, flows, nil
}

// EphemeralPorts is the size of the Service client's local port range:
// the most connections to one Service port it can have open or in
// TIME_WAIT at once, which bounds the conntrack entries a test can leave.
func (t *Target) EphemeralPorts() (int, error) {
	ep, err := t.lab.Endpoint(serviceClient)
	if err != nil {
		return 0, err
	}
	var n int
	err = netnsx.Do(ep.NetnsPath(), func() error {
		v, err := netnsx.ReadSysctl("net.ipv4.ip_local_port_range")
		if err != nil {
			return err
		}
		f := strings.Fields(v)
		if len(f) != 2 {
			return fmt.Errorf("ip_local_port_range %q", v)
		}
		lo, err1 := strconv.Atoi(f[0])
		hi, err2 := strconv.Atoi(f[1])
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("ip_local_port_range %q: %w", v, err)
		}
		n = hi - lo + 1
		return nil
	})
	return n, err
}

func readIntSysctl(key string) (int, error) {
	v, err := netnsx.ReadSysctl(key)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number", key, v)
	}
	return n, nil
}
