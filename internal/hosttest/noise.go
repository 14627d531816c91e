package hosttest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// noise is what a Neighbour's process does, in its loop: it keeps adding
// and removing its own network namespaces (noisy-<pid>-<n>) with iproute2's
// `ip netns`, puts iptables and nftables rules, an address and a route in
// them, and switches the root's net.ipv4.ip_forward on for a moment when it
// is off (restored each time, see toggleRootForwarding). It never adds anything to the root
// namespace's links, addresses, routes or firewall.
type noise struct {
	Wrap  []string      // prefixes every command, e.g. nsenter into a mount namespace
	Every time.Duration // pause between cycles

	prefix string
	stop   chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	stats  NeighbourStats
}

// NeighbourStats counts what a neighbour did; Errors keeps the first few
// failures (a neighbour that silently did nothing would prove nothing).
type NeighbourStats struct {
	Cycles, Namespaces, Toggles, Failures int
	Errors                                []string
}

func (s NeighbourStats) String() string {
	return fmt.Sprintf("%d cycles, %d namespaces added and removed, %d ip_forward toggles, %d failures", s.Cycles, s.Namespaces, s.Toggles, s.Failures)
}

// start starts the loop; end ends it.
func (n *noise) start() {
	n.prefix = namePrefix(os.Getpid())
	n.stop, n.done = make(chan struct{}), make(chan struct{})
	go n.loop()
}

// namePrefix is the prefix of the namespaces of the neighbour process pid.
func namePrefix(pid int) string { return fmt.Sprintf("noisy-%d-", pid) }

// loop runs cycles until end, at least one (tests shorter than a cycle
// still see it work), keeping at most two of its namespaces alive so that
// adds and deletes overlap with each other and with the lab's.
func (n *noise) loop() {
	defer close(n.done)
	var alive []string
	for i := 0; ; i++ {
		select {
		case <-n.stop:
			if i == 0 {
				break
			}
			for _, ns := range alive {
				n.remove(ns)
			}
			return
		default:
		}
		ns := fmt.Sprintf("%s%d", n.prefix, i)
		if n.add(ns) {
			alive = append(alive, ns)
		}
		n.toggleRootForwarding()
		if len(alive) > 1 {
			n.remove(alive[0])
			alive = alive[1:]
		}
		n.mu.Lock()
		n.stats.Cycles++
		n.mu.Unlock()
		time.Sleep(n.Every)
	}
}

// add creates namespace ns with a veth pair, an address, a route, an
// iptables rule and an nftables table.
func (n *noise) add(ns string) bool {
	if !n.run("ip", "netns", "add", ns) {
		return false
	}
	n.mu.Lock()
	n.stats.Namespaces++
	n.mu.Unlock()
	in := []string{"ip", "netns", "exec", ns}
	n.run("ip", "-n", ns, "link", "set", "lo", "up")
	n.run("ip", "-n", ns, "link", "add", "nz0", "type", "veth", "peer", "name", "nz1")
	n.run("ip", "-n", ns, "link", "set", "nz0", "up")
	n.run("ip", "-n", ns, "addr", "add", "203.0.113.1/24", "dev", "nz0")
	n.run("ip", "-n", ns, "route", "add", "198.51.100.0/24", "via", "203.0.113.2")
	n.run(append(in, "iptables", "-A", "INPUT", "-s", "198.51.100.0/24", "-j", "DROP")...)
	n.run(append(in, "nft", "add table inet noisy; add chain inet noisy in { type filter hook input priority 0; }; add rule inet noisy in ip saddr 198.51.100.0/24 counter drop")...)
	return true
}

// remove takes ns apart as a tool would (rules, route) and deletes it.
func (n *noise) remove(ns string) {
	in := []string{"ip", "netns", "exec", ns}
	n.run(append(in, "iptables", "-D", "INPUT", "-s", "198.51.100.0/24", "-j", "DROP")...)
	n.run(append(in, "nft", "delete", "table", "inet", "noisy")...)
	n.run("ip", "-n", ns, "route", "del", "198.51.100.0/24")
	n.run("ip", "netns", "del", ns)
}

// toggleRootForwarding switches the root's ip_forward on for a short window
// (as Docker does when it starts) and puts everything writing it changed
// back (saveForwarding), holding the toggle lock throughout. A host that
// forwards already is left alone.
func (n *noise) toggleRootForwarding() {
	unlock, err := lockToggles(true)
	if err != nil {
		n.fail(err)
		return
	}
	defer unlock()
	saved, err := saveForwarding()
	if err != nil {
		n.fail(err)
		return
	}
	if strings.TrimSpace(saved[ipForward]) != "0" {
		// The host forwards already (Docker, a Kubernetes node): new
		// namespaces inherit that anyway, and switching it off, even for
		// 20 ms, would drop its containers' traffic. Only ever do what
		// Docker does when it starts: switch it on.
		return
	}
	if err := os.WriteFile(ipForward, []byte("1"), 0o644); err != nil {
		n.fail(err)
	}
	time.Sleep(20 * time.Millisecond)
	if err := restoreForwarding(saved); err != nil {
		n.fail(fmt.Errorf("restore root forwarding: %w", err))
		return
	}
	n.mu.Lock()
	n.stats.Toggles++
	n.mu.Unlock()
}

func (n *noise) run(args ...string) bool {
	args = append(append([]string{}, n.Wrap...), args...)
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		n.fail(fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out))))
		return false
	}
	return true
}

func (n *noise) fail(err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stats.Failures++
	if len(n.stats.Errors) < 5 {
		n.stats.Errors = append(n.stats.Errors, err.Error())
	}
}

// end stops the loop once its cycle is done and removes the namespaces it
// still has.
func (n *noise) end() NeighbourStats {
	close(n.stop)
	<-n.done
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stats
}
