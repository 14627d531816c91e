package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/hosttest"
	"github.com/cnibench/cnibench/internal/netnsx"
)

func needRoot(t *testing.T) {
	t.Helper()
	if err := RequirePrivileges(); err != nil {
		t.Skipf("skipping: %v", err)
	}
}

func uniqueName() string { return fmt.Sprintf("t%06d", rand.IntN(1000000)) }

// assertGone checks that nothing of lab name is left.
func assertGone(t *testing.T, stateDir, name string) {
	t.Helper()
	if ns, _ := netnsx.ListNamed(Prefix(name)); len(ns) > 0 {
		t.Errorf("namespaces left: %v", ns)
	}
	if r := cgroupRootFor(name); r != "" {
		if _, err := os.Stat(r); err == nil {
			t.Errorf("cgroup left: %s", r)
		}
	}
	if _, err := os.Stat(filepath.Join(stateDir, name)); err == nil {
		t.Errorf("state dir left: %s", filepath.Join(stateDir, name))
	}
	if d := tempDirs(Prefix(name)); len(d) > 0 {
		t.Errorf("temp dirs left: %v", d)
	}
}

// newLab creates a lab with a unique name that is taken down at cleanup.
func newLab(t *testing.T, cfg Config) *Lab {
	t.Helper()
	needRoot(t)
	if cfg.Name == "" {
		cfg.Name = uniqueName()
	}
	if cfg.StateDir == "" {
		cfg.StateDir = t.TempDir()
	}
	t.Cleanup(func() {
		if _, err := Down(cfg.StateDir, cfg.Name); err != nil {
			t.Errorf("cleanup Down: %v", err)
		}
		assertGone(t, cfg.StateDir, cfg.Name)
	})
	start := time.Now()
	l, err := Up(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Logf("Up %s (%d nodes x %d pods) took %v", cfg.Name, l.Config.Nodes, l.Config.PodsPerNode, time.Since(start))
	return l
}

func mustEP(t *testing.T, l *Lab, name string) Endpoint {
	t.Helper()
	ep, err := l.Endpoint(name)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// listen starts a TCP echo-once server whose socket lives in ep's namespace.
func listen(t *testing.T, ep Endpoint, port int) {
	t.Helper()
	var ln net.Listener
	err := netnsx.Do(ep.NetnsPath(), func() error {
		var err error
		ln, err = net.Listen("tcp4", net.JoinHostPort(ep.IP, strconv.Itoa(port)))
		return err
	})
	if err != nil {
		t.Fatalf("listen in %s: %v", ep.Name, err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
}

// dial connects from ep's namespace to addr and does a round trip.
func dial(from Endpoint, addr string, timeout time.Duration) error {
	var c net.Conn
	err := netnsx.Do(from.NetnsPath(), func() error {
		d := net.Dialer{Timeout: timeout}
		var err error
		c, err = d.Dial("tcp4", addr)
		return err
	})
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	msg := []byte("ping " + from.Name)
	if _, err := c.Write(msg); err != nil {
		return err
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != string(msg) {
		return fmt.Errorf("echo mismatch: %q", buf)
	}
	if got := c.LocalAddr().(*net.TCPAddr).IP.String(); got != from.IP {
		return fmt.Errorf("source address %s, want %s", got, from.IP)
	}
	return nil
}

func TestConnectivity(t *testing.T) {
	l := newLab(t, Config{Nodes: 3, PodsPerNode: 2})
	if len(l.Endpoints()) != 9 {
		t.Fatalf("endpoints: %d", len(l.Endpoints()))
	}
	for _, ep := range []string{"node1-pod1", "node1", "node2-pod0"} {
		listen(t, mustEP(t, l, ep), 8080)
	}
	cases := []struct{ from, to string }{
		{"node1-pod0", "node1-pod1"}, // same node
		{"node0-pod0", "node1-pod1"}, // other node
		{"node2-pod1", "node1-pod1"}, // other node
		{"node0", "node1"},           // node to node
		{"node0-pod1", "node1"},      // pod to remote node
		{"node1", "node1-pod1"},      // node to local pod
		{"node0", "node2-pod0"},      // node to remote pod
		{"node1-pod1", "node2-pod0"}, // other node, reverse direction
	}
	for _, c := range cases {
		from, to := mustEP(t, l, c.from), mustEP(t, l, c.to)
		start := time.Now()
		if err := dial(from, net.JoinHostPort(to.IP, "8080"), 3*time.Second); err != nil {
			t.Errorf("%s -> %s (%s): %v", c.from, c.to, to.IP, err)
		}
		// First contact includes ARP resolution; proxy ARP must not be delayed.
		if d := time.Since(start); d > 300*time.Millisecond {
			t.Errorf("%s -> %s took %v", c.from, c.to, d)
		}
	}
	// Nothing leaves the lab: no route outside 198.18.0.0/15.
	for _, name := range []string{"node0-pod0", "node1"} {
		start := time.Now()
		err := dial(mustEP(t, l, name), "198.51.100.1:9", 2*time.Second)
		if !errors.Is(err, syscall.ENETUNREACH) {
			t.Errorf("%s -> 198.51.100.1: got %v, want network is unreachable", name, err)
		}
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Errorf("%s -> 198.51.100.1 took %v, want immediate failure", name, d)
		}
	}
	// No default route anywhere.
	for _, ns := range l.namespaces() {
		out, err := exec.Command("ip", "-n", ns, "route", "show", "default").CombinedOutput()
		if err != nil {
			t.Fatalf("ip -n %s route: %v %s", ns, err, out)
		}
		if strings.TrimSpace(string(out)) != "" {
			t.Errorf("%s has a default route: %s", ns, out)
		}
	}
	// Pod routes are exactly the gateway and the lab range.
	out, _ := exec.Command("ip", "-n", l.Prefix+"node2-pod1", "-4", "route", "show").CombinedOutput()
	want := "169.254.1.1 dev eth0 scope link \n198.18.0.0/15 via 169.254.1.1 dev eth0 \n"
	if string(out) != want {
		t.Errorf("pod routes:\n%s\nwant:\n%s", out, want)
	}

	// Load, Endpoint errors, List, Status.
	l2, err := Load(l.Config.StateDir, l.Config.Name)
	if err != nil {
		t.Fatal(err)
	}
	if l2.Nodes[2].Pods[1].IP != "198.19.2.11" || l2.Nodes[1].IP != "198.18.0.11" || l2.Config.StateDir != l.Config.StateDir {
		t.Errorf("loaded lab differs: %+v", l2.Nodes[2])
	}
	if _, err := l.Endpoint("node9-pod0"); err == nil || !strings.Contains(err.Error(), "node0..node2") {
		t.Errorf("Endpoint(bad) error = %v", err)
	}
	names, err := List(l.Config.StateDir)
	if err != nil || !contains(names, l.Config.Name) {
		t.Errorf("List = %v, %v", names, err)
	}
	st, err := l.Status()
	if err != nil || strings.Contains(st, "MISSING") || !strings.Contains(st, "198.19.2.11") {
		t.Errorf("Status: %v\n%s", err, st)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestRootSysctlsCoverDefaults: the root snapshot watches every sysctl the
// lab writes by default.
func TestRootSysctlsCoverDefaults(t *testing.T) {
	for k := range DefaultSysctls() {
		if !slices.Contains(hosttest.RootSysctls, k) {
			t.Errorf("hosttest.RootSysctls lacks %s", k)
		}
	}
}

func TestRootNamespaceUnchanged(t *testing.T) {
	needRoot(t)
	before := hosttest.Take(t)
	name, dir := uniqueName(), t.TempDir()
	l, err := Up(context.Background(), Config{Name: name, Nodes: 2, PodsPerNode: 2, StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	hosttest.AssertUnchanged(t, before, "while the lab was up")
	if err := dial(mustEP(t, l, "node0-pod0"), "198.18.0.11:1", time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial node1 closed port: %v, want connection refused", err)
	}
	if _, err := Down(dir, name); err != nil {
		t.Fatal(err)
	}
	hosttest.AssertUnchanged(t, before, "after Up+Down")
	assertGone(t, dir, name)
}

func TestDownIdempotent(t *testing.T) {
	needRoot(t)
	name, dir := uniqueName(), t.TempDir()
	fds := openFDs(t)
	if _, err := Up(context.Background(), Config{Name: name, Nodes: 2, PodsPerNode: 1, StateDir: dir}); err != nil {
		t.Fatal(err)
	}
	removed, err := Down(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) < 5+1 { // 5 namespaces (+ 6 cgroups with cgroup v2), state dir
		t.Errorf("removed: %v", removed)
	}
	assertGone(t, dir, name)
	// A leaked namespace fd or netlink socket would keep a namespace alive.
	if after := openFDs(t); after != fds {
		t.Errorf("open fds: %d before Up, %d after Down", fds, after)
	}
	removed, err = Down(dir, name)
	if err != nil || len(removed) != 0 {
		t.Errorf("second Down = %v, %v; want nothing, nil", removed, err)
	}
	removed, err = Down(dir, uniqueName())
	if err != nil || len(removed) != 0 {
		t.Errorf("Down(never existed) = %v, %v; want nothing, nil", removed, err)
	}
	if _, err := Load(dir, name); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load after Down = %v, want ErrNotFound", err)
	}
	if _, err := Down(dir, "Bad-Name"); err == nil {
		t.Error("Down accepted an invalid name")
	}
}

func TestCrashRecovery(t *testing.T) {
	needRoot(t)
	name, dir := uniqueName(), t.TempDir()
	l, err := Up(context.Background(), Config{Name: name, Nodes: 1, PodsPerNode: 1, StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Down(dir, name) })
	var cmds []*exec.Cmd
	for _, ep := range l.Endpoints() {
		cmd := exec.Command("sleep", "300")
		if err := l.Start(ep, cmd, nil); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	// Also a process that is in a lab namespace but not in a lab cgroup.
	outsider := exec.Command("ip", "netns", "exec", l.Prefix+"node0-pod0", "sleep", "300")
	if err := outsider.Start(); err != nil {
		t.Fatal(err)
	}
	cmds = append(cmds, outsider)
	waited := make(chan error, len(cmds))
	for _, c := range cmds {
		go func() { waited <- c.Wait() }()
	}
	// Wait until ip netns exec has exec'd sleep in the namespace.
	nsID, _ := netnsx.IDOf(netnsx.Path(l.Prefix + "node0-pod0"))
	for i := 0; i < 200; i++ {
		if id, err := netnsx.IDOf(fmt.Sprintf("/proc/%d/ns/net", outsider.Process.Pid)); err == nil && id == nsID && netnsx.Comm(outsider.Process.Pid) == "sleep" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Crash: the state file is gone.
	if err := os.Remove(filepath.Join(dir, name, stateFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir, name); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Load without state = %v", err)
	}
	names, _ := List(dir)
	if !contains(names, name) {
		t.Errorf("List without state = %v, want %s", names, name)
	}
	removed, err := Down(dir, name)
	if err != nil {
		t.Fatalf("Down: %v", err)
	}
	t.Logf("removed: %s", strings.Join(removed, "; "))
	for range cmds {
		select {
		case err := <-waited:
			if err == nil || !strings.Contains(err.Error(), "killed") {
				t.Errorf("process exit = %v, want killed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a process survived Down")
		}
	}
	assertGone(t, dir, name)
}

// What a SIGKILLed process leaves in its TempDir (an agent's DNS server
// files) is the lab's: Leftovers lists it and Down removes it, also after
// a crash of the process's owner (no state file).
func TestTempDirRemovedByDown(t *testing.T) {
	needRoot(t)
	name, dir := uniqueName(), t.TempDir()
	l, err := Up(context.Background(), Config{Name: name, Nodes: 1, PodsPerNode: 1, StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Down(dir, name) })
	ep := mustEP(t, l, "node0-pod0")
	tmp, err := l.TempDir(ep)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(tmp)
	if err != nil || fi.Mode().Perm() != 0o755 || filepath.Dir(tmp) != os.TempDir() || !strings.HasPrefix(filepath.Base(tmp), l.Prefix+"node0-pod0-") {
		t.Fatalf("TempDir %s (%v, %v), want a 0755 dir %snode0-pod0-* in %s", tmp, fi.Mode(), err, l.Prefix, os.TempDir())
	}
	cmd := exec.Command("sh", "-c", `mkdir "$TMPDIR/cnb-dnsload-1" && echo made && exec sleep 300`)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, _ := cmd.StdoutPipe()
	if err := l.Start(ep, cmd, nil); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "made\n" {
		t.Fatalf("the process made nothing: %q, %v", line, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	// Crash of the owner: the state file is gone.
	if err := os.Remove(filepath.Join(dir, name, stateFile)); err != nil {
		t.Fatal(err)
	}
	if left, _ := Leftovers(dir, name); !contains(left, "temp dir "+tmp) {
		t.Errorf("Leftovers = %v, want temp dir %s", left, tmp)
	}
	removed, err := Down(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	if !contains(removed, "temp dir "+tmp) {
		t.Errorf("Down removed %v, want temp dir %s", removed, tmp)
	}
	assertGone(t, dir, name)
}

func TestCreatingMarkerCleanedByDown(t *testing.T) {
	needRoot(t)
	name, dir := uniqueName(), t.TempDir()
	// Simulate a crash mid-Up: marker, one namespace, one cgroup.
	if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, name, creatingFile), []byte("x"), 0o644)
	if err := netnsx.CreateNamed([]string{Prefix(name) + "node0"}, func(string) {}); err != nil {
		t.Fatal(err)
	}
	if r := cgroupRootFor(name); r != "" {
		os.MkdirAll(filepath.Join(r, "node0"), 0o755)
	}
	if _, err := Up(context.Background(), Config{Name: name, StateDir: dir}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("Up over leftovers = %v, want already exists", err)
	}
	if _, err := Load(dir, name); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "did not finish") {
		t.Errorf("Load of half-created lab = %v", err)
	}
	if _, err := Down(dir, name); err != nil {
		t.Fatal(err)
	}
	assertGone(t, dir, name)
}

func procField(t *testing.T, pid int, field string) string {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func TestStartPlacement(t *testing.T) {
	l := newLab(t, Config{Nodes: 1, PodsPerNode: 2})
	ep := mustEP(t, l, "node0-pod1")
	cpu := runtime.NumCPU() - 1
	selfAffinity := procField(t, os.Getpid(), "Cpus_allowed_list")
	rootNS, err := netnsx.IDOf("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "300")
	if err := l.Start(ep, cmd, []int{cpu}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid

	nsID, _ := netnsx.IDOf(ep.NetnsPath())
	if got, err := netnsx.IDOf(fmt.Sprintf("/proc/%d/ns/net", pid)); err != nil || got != nsID {
		t.Errorf("child netns %v (%v), want %v", got, err, nsID)
	}
	if got := procField(t, pid, "Cpus_allowed_list"); got != strconv.Itoa(cpu) {
		t.Errorf("child Cpus_allowed_list = %q, want %d", got, cpu)
	}
	if l.CgroupRoot != "" {
		cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		want := "0::/" + filepath.Base(l.CgroupRoot) + "/node0-pod1\n"
		if !strings.Contains(string(cg), want) {
			t.Errorf("child cgroups:\n%s\nwant line %q", cg, want)
		}
		if procs := cgroupProcs(ep.Cgroup); len(procs) != 1 || procs[0] != pid {
			t.Errorf("cgroup.procs of %s = %v, want [%d]", ep.Cgroup, procs, pid)
		}
	} else {
		t.Log("no cgroup v2: cgroup placement not checked")
	}
	// The parent is untouched: every thread still in the root namespace,
	// affinity unchanged.
	for _, b := range netnsx.ThreadsOutside(rootNS, 2*time.Second) {
		t.Errorf("test process: %s", b)
	}
	if got := procField(t, os.Getpid(), "Cpus_allowed_list"); got != selfAffinity {
		t.Errorf("parent affinity changed: %q -> %q", selfAffinity, got)
	}
	st, _ := l.Status()
	if !strings.Contains(st, fmt.Sprintf("%d(sleep)", pid)) {
		t.Errorf("Status does not show the process:\n%s", st)
	}
	// Pdeathsig would kill the child when the forking thread exits.
	bad := exec.Command("sleep", "1")
	bad.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := l.Start(ep, bad, nil); err == nil {
		bad.Process.Kill()
		bad.Wait()
		t.Error("Start accepted Pdeathsig")
	}
}

func TestSysctls(t *testing.T) {
	needRoot(t)
	rootBefore := hosttest.Take(t)
	custom := DefaultSysctls()
	custom["net.core.somaxconn"] = "4321"
	custom["net.ipv4.no_such_sysctl"] = "1"
	l := newLab(t, Config{Nodes: 1, PodsPerNode: 1, Sysctls: custom})
	if l.Sysctls["net.ipv4.no_such_sysctl"] != "unsupported" {
		t.Errorf("missing key recorded as %q, want unsupported", l.Sysctls["net.ipv4.no_such_sysctl"])
	}
	for _, name := range []string{"node0", "node0-pod0"} {
		ep := mustEP(t, l, name)
		got := map[string]string{}
		err := netnsx.Do(ep.NetnsPath(), func() error {
			for k := range custom {
				v, err := netnsx.ReadSysctl(k)
				if errors.Is(err, netnsx.ErrNoSysctl) {
					v = "unsupported"
				} else if err != nil {
					return err
				}
				got[k] = v
			}
			for _, k := range []string{"net.ipv4.conf.all.rp_filter", "net.ipv4.ip_forward"} {
				got[k], _ = netnsx.ReadSysctl(k)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range custom {
			want := l.Sysctls[k]
			if want != "unsupported" && want != v {
				t.Errorf("recorded %s=%q, configured %q", k, want, v)
			}
			if got[k] != want {
				t.Errorf("%s: %s = %q, want %q", name, k, got[k], want)
			}
		}
		if got["net.ipv4.conf.all.rp_filter"] != "0" {
			t.Errorf("%s: rp_filter = %q", name, got["net.ipv4.conf.all.rp_filter"])
		}
		if wantFwd := map[string]string{"node0": "1", "node0-pod0": "0"}[name]; got["net.ipv4.ip_forward"] != wantFwd {
			t.Errorf("%s: ip_forward = %q, want %s", name, got["net.ipv4.ip_forward"], wantFwd)
		}
	}
	hosttest.AssertUnchanged(t, rootBefore, "by a lab with custom sysctls")
	t.Logf("applied: %v", l.Sysctls)
}

func TestDuplicateName(t *testing.T) {
	l := newLab(t, Config{Nodes: 1, PodsPerNode: 1})
	_, err := Up(context.Background(), Config{Name: l.Config.Name, Nodes: 1, PodsPerNode: 1, StateDir: l.Config.StateDir})
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("duplicate Up = %v, want already exists", err)
	}
	// Also with another state dir: the namespaces give it away.
	_, err = Up(context.Background(), Config{Name: l.Config.Name, Nodes: 1, PodsPerNode: 1, StateDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("duplicate Up (other state dir) = %v, want already exists", err)
	}
	// The original is intact.
	if _, err := Load(l.Config.StateDir, l.Config.Name); err != nil {
		t.Fatal(err)
	}
	st, _ := l.Status()
	if strings.Contains(st, "MISSING") {
		t.Errorf("original lab damaged:\n%s", st)
	}
}

func TestUpFailureCleansUp(t *testing.T) {
	needRoot(t)
	name, dir := uniqueName(), t.TempDir()
	// A sysctl that exists but cannot take this value makes Up fail midway.
	_, err := Up(context.Background(), Config{Name: name, Nodes: 2, PodsPerNode: 1, StateDir: dir,
		Sysctls: map[string]string{"net.ipv4.ip_local_port_range": "9 8 7 x"}})
	if err == nil {
		Down(dir, name)
		t.Fatal("Up succeeded with an invalid sysctl value")
	}
	t.Logf("Up error: %v", err)
	assertGone(t, dir, name)
}

func TestEightNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	start := time.Now()
	l := newLab(t, Config{Nodes: 8, PodsPerNode: 2})
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Up of 8x2 took %v", d)
	}
	listen(t, mustEP(t, l, "node7-pod1"), 9000)
	if err := dial(mustEP(t, l, "node0-pod0"), "198.19.7.11:9000", 3*time.Second); err != nil {
		t.Error(err)
	}
}

func TestValidate(t *testing.T) {
	var c Config
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Name != "default" || c.Nodes != 2 || c.PodsPerNode != 2 || c.StateDir != "/run/cnibench" || len(c.Sysctls) != 5 || c.Routing != "native" {
		t.Errorf("defaults: %+v", c)
	}
	bad := []struct {
		cfg   Config
		field string
	}{
		{Config{Name: "Bad"}, "name"},
		{Config{Name: "a-b"}, "name"},
		{Config{Name: "abcdefghijklm"}, "name"},
		{Config{Nodes: 17}, "nodes"},
		{Config{Nodes: -1}, "nodes"},
		{Config{PodsPerNode: 33}, "pods_per_node"},
		{Config{PodsPerNode: -2}, "pods_per_node"},
		{Config{Sysctls: map[string]string{"kernel.pid_max": "1"}}, "sysctls"},
		{Config{Sysctls: map[string]string{"net.core.somaxconn": ""}}, "sysctls"},
		{Config{Sysctls: map[string]string{"net.core.somaxconn": "1\n2"}}, "sysctls"},
		{Config{Sysctls: map[string]string{"net/../../kernel/x": "1"}}, "sysctls"},
		{Config{Routing: "bgp"}, "routing"},
		{Config{Routing: "VXLAN"}, "routing"},
	}
	for _, b := range bad {
		err := b.cfg.Validate()
		if err == nil {
			t.Errorf("%+v: no error", b.cfg)
			continue
		}
		if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), b.field) {
			t.Errorf("%+v: error %q should be one line naming %s", b.cfg, err, b.field)
		}
	}
	r := Config{Routing: "bgp"}
	if err := r.Validate(); err == nil || err.Error() != `lab config: routing must be "native" or "vxlan", got "bgp"` {
		t.Errorf("routing bgp: error %v", err)
	}
	good := Config{Name: "abcdefghijkl", Nodes: 16, PodsPerNode: 32, Sysctls: map[string]string{}, Routing: "vxlan"}
	if err := good.Validate(); err != nil {
		t.Error(err)
	}
}

// TestMaxLab builds the largest lab (16 nodes x 32 pods); opt-in with
// CNB_LAB_MAX=1 because it creates 529 namespaces.
func TestMaxLab(t *testing.T) {
	if os.Getenv("CNB_LAB_MAX") == "" {
		t.Skip("set CNB_LAB_MAX=1 to build a 16x32 lab")
	}
	l := newLab(t, Config{Nodes: MaxNodes, PodsPerNode: MaxPodsPerNode})
	listen(t, mustEP(t, l, "node15-pod31"), 9000)
	if err := dial(mustEP(t, l, "node0-pod0"), "198.19.15.41:9000", 3*time.Second); err != nil {
		t.Error(err)
	}
	if os.Getenv("CNB_LAB_KEEP") != "" {
		st, _ := l.Status()
		t.Log(st[:min(len(st), 2000)])
	}
}

// Down must not wait on children of the caller that nobody reaps (zombies).
func TestDownUnreapedChild(t *testing.T) {
	needRoot(t)
	name, dir := uniqueName(), t.TempDir()
	l, err := Up(context.Background(), Config{Name: name, Nodes: 1, PodsPerNode: 1, StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "300")
	if err := l.Start(mustEP(t, l, "node0-pod0"), cmd, nil); err != nil {
		Down(dir, name)
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := Down(dir, name); err != nil {
		t.Errorf("Down: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Down took %v", d)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("child exit = %v, want killed", err)
	}
	assertGone(t, dir, name)
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
