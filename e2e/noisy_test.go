package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/hosttest"
)

// A run on a busy host: while it brings its lab up, programs the Services,
// measures and takes the lab down, a noisy neighbour keeps adding and
// removing its own namespaces (with `ip netns`, as Docker's and CNI's tools
// do), iptables and nftables rules and routes in them, and toggles the
// root's ip_forward. The run succeeds with every sample, the root
// namespace is as before, and `ip netns list` shows nothing of the lab.
func TestRunWithNoisyNeighbour(t *testing.T) {
	for _, dp := range []string{"iptables", "nftables"} {
		t.Run(dp, func(t *testing.T) {
			l := newLab(t)
			before := hosttest.Take(t)
			nb := hosttest.StartNoisyNeighbour(t)
			code, out := smallRun(t, l, "--service-datapath", dp)
			nb.StopFor(t)
			checkSmallRun(t, code, out)
			hosttest.AssertUnchanged(t, before, "by a run next to a noisy neighbour")
			assertNetnsClean(t, l)
		})
	}
}

// The case: a lab is up on a host where no tool has used `ip netns`
// since boot (/run/netns a plain directory, here in a mount namespace of
// the test's own), then a neighbour adds its first namespace, so iproute2
// bind-mounts /run/netns over itself, over the lab's namespace mounts. A
// run on the lab and `lab down` must still work and leave nothing.
func TestLabDownAfterNeighboursFirstNetnsAdd(t *testing.T) {
	var name string
	wrap := freshRunNetns(t, &name)
	l := newLab(t)
	l.wrap, name = wrap, l.name
	before := hosttest.Take(t)
	if _, stderr, code := l.run("lab", "up", "--service-datapath", "iptables"); code != 0 {
		t.Fatalf("lab up: %s", stderr)
	}
	nb := hosttest.StartNoisyNeighbour(t, wrap...)
	code, out := smallRun(t, l)
	nb.StopFor(t)
	checkSmallRun(t, code, out)
	if _, stderr, code := l.run("lab", "down"); code != 0 {
		t.Errorf("lab down after the neighbour's first ip netns add: exit %d: %s", code, stderr)
	}
	hosttest.AssertUnchanged(t, before, "by a lab next to a noisy neighbour")
	assertNetnsClean(t, l)
}

// smallRun measures TCP_RR and TCP_CRR pod to pod and pod to Service on
// the other node, one 1 s round, and returns the exit code and the
// results directory.
func smallRun(t *testing.T, l *lab, flags ...string) (int, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	args := append([]string{"run", "--tests", "TCP_RR,TCP_CRR", "--placements", "pod-to-pod/other-node,pod-to-service/other-node",
		"--duration", "1s", "--warmup", "200ms", "--rounds", "1", "--out", out}, flags...)
	stdout, stderr, code := l.run(args...)
	if code != 0 {
		t.Logf("run exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	return code, out
}

// checkSmallRun fails unless smallRun succeeded with all 4 results, every
// sample without error and with transactions.
func checkSmallRun(t *testing.T, code int, out string) {
	t.Helper()
	if code != 0 {
		t.Fatalf("run next to a noisy neighbour exited %d", code)
	}
	r := readResults(t, out)
	if r.Status != "complete" || len(r.Results) != 4 {
		t.Fatalf("status %q, %d results; want complete, 4", r.Status, len(r.Results))
	}
	for _, res := range r.Results {
		for _, s := range res.Samples {
			if s.Error != "" || s.Engine == nil || s.Engine.Transactions == 0 {
				t.Errorf("%s %s/%s: error %q, engine %+v", res.Test, res.Placement.Path, res.Placement.Node, s.Error, s.Engine)
			}
		}
	}
}

// assertNetnsClean checks `ip netns list` (in l's mount namespace) shows
// nothing of the lab, and nothing else of it is left. ("Peer netns
// reference is invalid" lines name no namespace: they may be other labs'.)
func assertNetnsClean(t *testing.T, l *lab) {
	t.Helper()
	argv := append(slices.Clone(l.wrap), "ip", "netns", "list")
	netns, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil || strings.Contains(string(netns), "cnb-"+l.name+"-") {
		t.Errorf("ip netns list: %v\n%s", err, netns)
	}
	if left := l.leftovers(); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// freshRunNetns starts a process in a private mount namespace where
// /run/netns is the plain directory under the host's bind mount of it, and
// returns the nsenter prefix that runs a command in that namespace. At
// cleanup (after the lab's and the neighbour's, registered later) it ends
// the process, and so the namespace and its mounts, and removes the files
// a failed teardown left in /run/netns: only the test's own (cnb-<lab>-…
// of *labName, noisy-<pid>-…), never a mounted one (os.Remove refuses
// those).
func freshRunNetns(t *testing.T, labName *string) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("lab tests need root")
	}
	holder := exec.Command("unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
		"if mountpoint -q /run/netns; then umount -l /run/netns; fi; mkdir -p /run/netns; echo ready; exec sleep 3600")
	stdout, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	holder.Stderr = os.Stderr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	t.Cleanup(func() {
		holder.Process.Kill()
		holder.Wait()
		ents, _ := os.ReadDir("/run/netns")
		for _, e := range ents {
			n := e.Name()
			if (*labName != "" && strings.HasPrefix(n, "cnb-"+*labName+"-") || strings.HasPrefix(n, fmt.Sprintf("noisy-%d-", os.Getpid()))) && os.Remove(filepath.Join("/run/netns", n)) == nil {
				t.Logf("removed /run/netns/%s, left by the run in its mount namespace", n)
			}
		}
	})
	if err != nil || line != "ready\n" {
		t.Fatalf("private mount namespace: %q, %v", line, err)
	}
	return []string{"nsenter", fmt.Sprintf("--mount=/proc/%d/ns/mnt", holder.Process.Pid), "--"}
}
