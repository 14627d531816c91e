package labtarget

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/wireguard"
	"github.com/cnibench/cnibench/results"
)

// EncryptionCheck is how a scenario's node-to-node encryption was proved
// on before measuring; results keep it in the target's details.
type EncryptionCheck struct {
	Mode           string `json:"mode"`           // "wireguard"
	Implementation string `json:"implementation"` // what encrypts
	// Kernel says whether this kernel has WireGuard devices ("available",
	// or the unsupported error): the userspace daemon stands in for it.
	Kernel string `json:"kernel_wireguard"`
	MTU    int    `json:"pod_mtu"` // pods' MTU, lowered by the overhead
	// Probes are connections from node0's first pod to a pod on each
	// other node, with what each node's device counted meanwhile.
	Probes []string `json:"probes"`
}

// encryptionState is the run's encryption: its check and the daemons
// whose CPU is the datapath's.
type encryptionState struct {
	check   EncryptionCheck
	cgroups map[string]string // node → daemon cgroup
}

// openEncryption proves the lab's node-to-node encryption before
// anything is measured: every node's daemon runs, and a connection from
// node0's first pod to a pod on every other node moves packets out and in
// through both ends' WireGuard devices (their kernel counters).
func (t *Target) openEncryption(ctx context.Context) error {
	l := t.lab
	if l.Config.Encryption == "" {
		return nil
	}
	t.progress("checking %s encryption between %d nodes ...", l.Config.Encryption, len(l.Nodes))
	c, err := t.checkWireGuard(ctx)
	if err != nil {
		t.progress(" %s\n", failedOr(ctx))
		return fmt.Errorf("encryption %s: %w", l.Config.Encryption, err)
	}
	t.encryption = c
	t.progress(" encrypted\n")
	return nil
}

func (t *Target) checkWireGuard(ctx context.Context) (*encryptionState, error) {
	l := t.lab
	st := &encryptionState{cgroups: map[string]string{},
		check: EncryptionCheck{Mode: l.Config.Encryption, MTU: l.MTU,
			Implementation: "wireguard-go (golang.zx2c4.com/wireguard: userspace, on a TUN device) in a daemon per node, in its own cgroup"}}
	if err := wireguard.KernelSupport(netnsx.Path(l.Nodes[0].Netns)); err != nil {
		st.check.Kernel = err.Error()
	} else {
		st.check.Kernel = "available (not used: the lab runs the userspace implementation everywhere alike)"
	}
	for _, n := range l.Nodes {
		if n.WireGuard == nil {
			return nil, fmt.Errorf("%s has no WireGuard device: take the lab down and up again", n.Name)
		}
		st.cgroups[n.Name] = n.WireGuard.Cgroup
		if n.WireGuard.Cgroup != "" {
			if _, err := cgroupCPUSeconds(n.WireGuard.Cgroup); err != nil {
				return nil, fmt.Errorf("%s daemon: %w", n.Name, err)
			}
		}
	}
	if len(l.Nodes) < 2 || len(l.Nodes[0].Pods) == 0 {
		st.check.Probes = append(st.check.Probes, "one node: no traffic between nodes to encrypt")
		return st, nil
	}
	from := l.Nodes[0].Pods[0]
	for _, n := range l.Nodes[1:] {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		to := n.Pods[0]
		before0, err1 := wgCounters(l.Nodes[0])
		beforeN, err2 := wgCounters(n)
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		outcome := probeTCP(from, to)
		after0, err1 := wgCounters(l.Nodes[0])
		afterN, err2 := wgCounters(n)
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		d0, dN := after0.sub(before0), afterN.sub(beforeN)
		line := fmt.Sprintf("%s → %s %s: %s %s, %s %s", from.Name, to.Name, outcome, l.Nodes[0].Name, d0, n.Name, dN)
		if d0.tx == 0 || d0.rx == 0 || dN.tx == 0 || dN.rx == 0 {
			return nil, fmt.Errorf("pod traffic did not go through %s both ways: %s", wireguard.Device, line)
		}
		st.check.Probes = append(st.check.Probes, line)
	}
	return st, nil
}

// wgTraffic is a WireGuard device's packet counters: tx went to the
// daemon to be encrypted, rx came from it decrypted.
type wgTraffic struct{ tx, rx uint64 }

func (a wgTraffic) sub(b wgTraffic) wgTraffic { return wgTraffic{a.tx - b.tx, a.rx - b.rx} }
func (a wgTraffic) String() string {
	return fmt.Sprintf("%s %d packets out (encrypted), %d in (decrypted)", wireguard.Device, a.tx, a.rx)
}

func wgCounters(n lab.Node) (wgTraffic, error) {
	h, err := netnsx.NewHandle(netnsx.Path(n.Netns))
	if err != nil {
		return wgTraffic{}, err
	}
	defer h.Close()
	link, err := h.LinkByName(wireguard.Device)
	if err != nil {
		return wgTraffic{}, fmt.Errorf("%s: %s: %w (its daemon may have died: see its log in the lab's state dir)", n.Name, wireguard.Device, err)
	}
	s := link.Attrs().Statistics
	if s == nil {
		return wgTraffic{}, fmt.Errorf("%s: %s has no counters", n.Name, wireguard.Device)
	}
	return wgTraffic{s.TxPackets, s.RxPackets}, nil
}

// probeTCP dials to's TCP_RR port from from's namespace: an answer of
// any kind (accepted or refused) is a packet each way.
func probeTCP(from, to lab.Pod) string {
	addr := net.JoinHostPort(to.IP, strconv.Itoa(engine.DefaultPort[engine.TCPRR]))
	var outcome string
	err := netnsx.Do(netnsx.Path(from.Netns), func() error {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			outcome = "answered: " + err.Error()
			return nil
		}
		outcome = "connected"
		return c.Close()
	})
	if err != nil {
		return "not dialled: " + err.Error()
	}
	return outcome
}

// encryptionCPU is each node's daemon's CPU so far, by node.
func (t *Target) encryptionCPU() (map[string]float64, error) {
	if t.encryption == nil {
		return nil, nil
	}
	out := map[string]float64{}
	for node, cg := range t.encryption.cgroups {
		if cg == "" {
			continue
		}
		v, err := cgroupCPUSeconds(cg)
		if err != nil {
			return nil, fmt.Errorf("wireguard daemon of %s: %w", node, err)
		}
		out[node] = v
	}
	return out, nil
}

// encryptionComponents are the daemons' CPU between two readings.
func encryptionComponents(before, after map[string]float64) []results.ComponentUsage {
	var out []results.ComponentUsage
	for _, node := range slices.Sorted(maps.Keys(after)) {
		out = append(out, results.ComponentUsage{Plugin: "wireguard-go", Pod: "wg-" + node, CPUSec: after[node] - before[node]})
	}
	return out
}

func (t *Target) encryptionDetails() *EncryptionCheck {
	if t.encryption == nil {
		return nil
	}
	return &t.encryption.check
}
