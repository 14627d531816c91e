// Package encryptionpart is the lab's node-to-node encryption as a
// scenario part ("wireguard", or the run's --encryption): built with the
// lab, proved before anything is measured (a connection from node0's
// first pod to a pod on every other node moves packets out and in through
// both ends' WireGuard devices), its daemons pinned to their nodes' CPUs
// and their CPU each sample's datapath usage.
package encryptionpart

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
	"github.com/cnibench/cnibench/targets/labtarget/part"
)

func init() {
	part.Register(part.Def{Help: []string{lab.EncryptionWireGuard}, Parse: part.Exact(wg),
		Implied: func(c lab.Config) part.Part {
			if c.Encryption == lab.EncryptionWireGuard {
				return wg
			}
			return nil
		}})
}

// wg is the wireguard part: pod traffic between nodes encrypted by
// WireGuard (lab/wireguard); with vxlan, the overlay's packets are.
var wg = wireGuard{}

type wireGuard struct{}

func (wireGuard) Name() string                  { return lab.EncryptionWireGuard }
func (wireGuard) Token() string                 { return "wg" }
func (wireGuard) Phase() part.Phase             { return part.Encryption }
func (wireGuard) Configure(c *lab.Config)       { c.Encryption = lab.EncryptionWireGuard }
func (wireGuard) Conflicts(part.Scenario) error { return nil }

// Open proves the lab's encryption and pins its daemons.
func (wireGuard) Open(ctx context.Context, env part.Env) (part.Opened, error) {
	l := env.Lab()
	env.Progress("checking %s encryption between %d nodes ...", l.Config.Encryption, len(l.Nodes))
	o, err := checkWireGuard(ctx, l)
	if err != nil {
		env.Progress(" %s\n", part.FailedOr(ctx))
		return nil, fmt.Errorf("encryption %s: %w", l.Config.Encryption, err)
	}
	if err := o.pinDaemons(env); err != nil {
		env.Progress(" %s\n", part.FailedOr(ctx))
		return o, fmt.Errorf("encryption %s: %w", l.Config.Encryption, err)
	}
	env.Progress(" encrypted\n")
	return o, nil
}

// opened is the run's encryption: its check and the daemons whose CPU is
// the datapath's.
type opened struct {
	lab      *lab.Lab
	check    results.EncryptionCheck
	cgroups  map[string]string      // node → daemon cgroup
	affinity map[string]unix.CPUSet // node → its daemon's CPUs before the run
}

// Checks implements part.Opened.
func (o *opened) Checks() []results.Check {
	return []results.Check{{Part: lab.EncryptionWireGuard, Label: results.EncryptionLabel, Text: o.check.Text()}}
}

// AddDetails implements part.Detailer.
func (o *opened) AddDetails(d map[string]any) { d["encryption"] = o.check }

// Close gives the daemons back the CPUs they had: a lab that was up
// before the run stays up after it, daemons and all.
func (o *opened) Close() error {
	if o != nil {
		o.unpinDaemons()
	}
	return nil
}

// StartUsage implements part.Meter: each node's daemon's CPU so far.
func (o *opened) StartUsage(context.Context) (any, error) { return o.daemonCPU() }

// EndUsage implements part.Meter: the daemons' CPU since mark.
func (o *opened) EndUsage(_ context.Context, mark any, u *results.DatapathUsage) error {
	before, _ := mark.(map[string]float64)
	after, err := o.daemonCPU()
	if err != nil {
		return err
	}
	for _, node := range slices.Sorted(maps.Keys(after)) {
		u.Components = append(u.Components, results.ComponentUsage{Plugin: "wireguard-go", Pod: "wg-" + node, CPUSec: after[node] - before[node]})
	}
	return nil
}

// daemonCPU is each node's daemon's CPU so far, by node.
func (o *opened) daemonCPU() (map[string]float64, error) {
	out := map[string]float64{}
	for node, cg := range o.cgroups {
		if cg == "" {
			continue
		}
		v, err := part.CgroupCPUSeconds(cg)
		if err != nil {
			return nil, fmt.Errorf("wireguard daemon of %s: %w", node, err)
		}
		out[node] = v
	}
	return out, nil
}

func checkWireGuard(ctx context.Context, l *lab.Lab) (*opened, error) {
	st := &opened{lab: l, cgroups: map[string]string{},
		check: results.EncryptionCheck{Mode: l.Config.Encryption, MTU: l.MTU,
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
			if _, err := part.CgroupCPUSeconds(n.WireGuard.Cgroup); err != nil {
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

// pinDaemons runs each node's WireGuard daemon on that node's CPUs
// (nodeCPUsAt), as a node's kernel WireGuard would encrypt on its own. The
// CPUs each daemon had before are kept for unpinDaemons, since a lab that
// was up before the run stays up after it.
func (o *opened) pinDaemons(env part.Env) error {
	if len(env.ClientCPUs()) == 0 {
		return nil
	}
	o.affinity = map[string]unix.CPUSet{}
	for i, n := range o.lab.Nodes {
		cpus := env.NodeCPUs(i)
		var set unix.CPUSet
		for _, c := range cpus {
			set.Set(c)
		}
		for _, tid := range daemonThreads(n) {
			var was unix.CPUSet
			if err := unix.SchedGetaffinity(tid, &was); err != nil {
				continue // the thread ended
			}
			if _, seen := o.affinity[n.Name]; !seen {
				o.affinity[n.Name] = was
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil {
				return fmt.Errorf("pin %s's WireGuard daemon (thread %d) to CPUs %v: %w", n.Name, tid, cpus, err)
			}
		}
		o.check.Pinned = append(o.check.Pinned, fmt.Sprintf("%s on CPUs %s", n.Name, part.CPUList(cpus)))
	}
	return nil
}

// unpinDaemons gives every thread of the daemons, those started while
// pinned too, the CPUs the daemon had before.
func (o *opened) unpinDaemons() {
	for _, n := range o.lab.Nodes {
		if was, ok := o.affinity[n.Name]; ok {
			for _, tid := range daemonThreads(n) {
				_ = unix.SchedSetaffinity(tid, &was) // a thread that ended needs nothing
			}
		}
	}
	o.affinity = nil
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
