package labtarget

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

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
	// KernelESP is the same for IPsec ESP, the other mode CNIs offer
	// (not used by the lab: recorded so a reader knows what this kernel
	// could have compared).
	KernelESP string `json:"kernel_ipsec_esp"`
	MTU       int    `json:"pod_mtu"` // pods' MTU, lowered by the overhead
	// Probes are connections from node0's first pod to a pod on each
	// other node, with what each node's device counted meanwhile.
	Probes []string `json:"probes"`
	// Pinned says where each node's daemon ran during the run.
	Pinned []string `json:"pinned,omitempty"`
}

// encryptionState is the run's encryption: its check and the daemons
// whose CPU is the datapath's.
type encryptionState struct {
	check    EncryptionCheck
	cgroups  map[string]string      // node → daemon cgroup
	affinity map[string]unix.CPUSet // node → its daemon's CPUs before the run
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
	if err := t.pinDaemons(); err != nil {
		t.progress(" %s\n", failedOr(ctx))
		return fmt.Errorf("encryption %s: %w", l.Config.Encryption, err)
	}
	t.progress(" encrypted\n")
	return nil
}

func (t *Target) checkWireGuard(ctx context.Context) (*encryptionState, error) {
	l := t.lab
	st := &encryptionState{cgroups: map[string]string{},
		check: EncryptionCheck{Mode: l.Config.Encryption, MTU: l.MTU,
			Implementation: "wireguard-go (golang.zx2c4.com/wireguard: userspace, on a TUN device) in a daemon per node, in its own cgroup"}}
	if err := wireguard.KernelSupport(); err != nil {
		st.check.Kernel = err.Error()
	} else {
		st.check.Kernel = "available (not used: the lab runs the userspace implementation everywhere alike)"
	}
	if err := wireguard.KernelESP(); err != nil {
		st.check.KernelESP = err.Error()
	} else {
		st.check.KernelESP = "available (not used by the lab)"
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

// pinDaemons runs each node's WireGuard daemon on that node's CPUs
// (nodeCPUsAt), as a node's kernel WireGuard would encrypt on its own. The
// CPUs each daemon had before are kept for unpinDaemons, since a lab that
// was up before the run stays up after it.
func (t *Target) pinDaemons() error {
	if t.encryption == nil || len(t.clientCPUs) == 0 {
		return nil
	}
	t.encryption.affinity = map[string]unix.CPUSet{}
	for i, n := range t.lab.Nodes {
		cpus := t.nodeCPUsAt(i)
		var set unix.CPUSet
		for _, c := range cpus {
			set.Set(c)
		}
		for _, tid := range daemonThreads(n) {
			var was unix.CPUSet
			if err := unix.SchedGetaffinity(tid, &was); err != nil {
				continue // the thread ended
			}
			if _, seen := t.encryption.affinity[n.Name]; !seen {
				t.encryption.affinity[n.Name] = was
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil {
				return fmt.Errorf("pin %s's WireGuard daemon (thread %d) to CPUs %v: %w", n.Name, tid, cpus, err)
			}
		}
		t.encryption.check.Pinned = append(t.encryption.check.Pinned, fmt.Sprintf("%s on CPUs %s", n.Name, cpuList(cpus)))
	}
	return nil
}

// unpinDaemons gives every thread of the daemons, those started while
// pinned too, the CPUs the daemon had before.
func (t *Target) unpinDaemons() {
	if t.encryption == nil {
		return
	}
	for _, n := range t.lab.Nodes {
		if was, ok := t.encryption.affinity[n.Name]; ok {
			for _, tid := range daemonThreads(n) {
				_ = unix.SchedSetaffinity(tid, &was) // a thread that ended needs nothing
			}
		}
	}
	t.encryption.affinity = nil
}

// daemonThreads are the threads of the processes in n's WireGuard
// daemon cgroup (or of its recorded pid without cgroup v2).
func daemonThreads(n lab.Node) []int {
	var pids []int
	if n.WireGuard.Cgroup != "" {
		b, _ := os.ReadFile(filepath.Join(n.WireGuard.Cgroup, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil {
				pids = append(pids, p)
			}
		}
	} else if n.WireGuard.PID > 0 {
		pids = append(pids, n.WireGuard.PID)
	}
	var tids []int
	for _, p := range pids {
		ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", p))
		for _, e := range ents {
			if tid, err := strconv.Atoi(e.Name()); err == nil {
				tids = append(tids, tid)
			}
		}
	}
	return tids
}
