package lab

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/lab/wireguard"
)

// wgPackets is node's WireGuard device's packets out and in.
func wgPackets(t *testing.T, l *Lab, node string) (tx, rx uint64) {
	t.Helper()
	for _, n := range l.Nodes {
		if n.Name == node {
			s := linkIn(t, n.Netns, wireguard.Device).Attrs().Statistics
			return s.TxPackets, s.RxPackets
		}
	}
	t.Fatalf("no node %s", node)
	return 0, 0
}

// With WireGuard, natively routed and under VXLAN, pods on different
// nodes reach each other through every node's WireGuard device (its
// counters move on both ends), pods on one node do not touch it, the
// pods' MTU is lowered by WireGuard's 60 bytes (and VXLAN's 50), the
// daemons hold none of the descriptors of the process that started them
// (a caller's lock file), and Down leaves nothing.
func TestWireGuardConnectivity(t *testing.T) {
	for _, c := range []struct {
		routing string
		mtu     int
	}{{RoutingNative, 1440}, {RoutingVXLAN, 1390}} {
		t.Run(c.routing, func(t *testing.T) {
			// A descriptor without close-on-exec, as flock(1) passes its lock.
			inherited, err := syscall.Open(filepath.Join(t.TempDir(), "lock"), syscall.O_CREAT|syscall.O_RDONLY, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer syscall.Close(inherited)
			l := newLab(t, Config{Nodes: 3, PodsPerNode: 2, Routing: c.routing, Encryption: EncryptionWireGuard})
			if l.MTU != c.mtu {
				t.Errorf("pod MTU %d, want %d", l.MTU, c.mtu)
			}
			if got := linkIn(t, l.Nodes[0].Pods[0].Netns, "eth0").Attrs().MTU; got != c.mtu {
				t.Errorf("node0-pod0 eth0 MTU %d, want %d", got, c.mtu)
			}
			for _, ep := range []string{"node1-pod1", "node2-pod0", "node0-pod1"} {
				listen(t, mustEP(t, l, ep), 8080)
			}
			for _, p := range []struct{ from, to string }{{"node0-pod0", "node1-pod1"}, {"node1-pod0", "node2-pod0"}, {"node0-pod0", "node0-pod1"}} {
				fromNode, toNode := strings.Split(p.from, "-")[0], strings.Split(p.to, "-")[0]
				tx0, rx0 := wgPackets(t, l, fromNode)
				if err := dial(mustEP(t, l, p.from), net.JoinHostPort(mustEP(t, l, p.to).IP, "8080"), 3*time.Second); err != nil {
					t.Fatalf("%s -> %s: %v", p.from, p.to, err)
				}
				tx1, rx1 := wgPackets(t, l, fromNode)
				through := tx1 > tx0 && rx1 > rx0
				if through != (fromNode != toNode) {
					t.Errorf("%s -> %s: %s's %s counted %d out, %d in", p.from, p.to, fromNode, wireguard.Device, tx1-tx0, rx1-rx0)
				}
			}
			for _, n := range l.Nodes {
				if n.WireGuard == nil || n.WireGuard.PID == 0 || len(n.WireGuard.PublicKey) != 64 {
					t.Fatalf("%s: %+v", n.Name, n.WireGuard)
				}
				want, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", inherited))
				fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", n.WireGuard.PID))
				for _, fd := range fds {
					if target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", n.WireGuard.PID, fd.Name())); target == want {
						t.Errorf("%s daemon holds the starter's descriptor %s", n.Name, want)
					}
				}
			}
			pids := []int{}
			for _, n := range l.Nodes {
				pids = append(pids, n.WireGuard.PID)
			}
			if _, err := Down(l.Config.StateDir, l.Config.Name); err != nil {
				t.Fatal(err)
			}
			for _, pid := range pids {
				// Killed by Down; reaped by Start's waiter in this process.
				deadline := time.Now().Add(3 * time.Second)
				for alive(pid) && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
				if alive(pid) {
					t.Errorf("daemon %d outlived lab down", pid)
				}
			}
		})
	}
}

// alive: pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || !strings.HasPrefix(string(b[i:]), ") Z")
}
