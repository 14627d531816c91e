package netnsx

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// testNS creates a uniquely named namespace removed at cleanup.
func testNS(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN)")
	}
	name := fmt.Sprintf("cnb-nx%06d-a", rand.IntN(1000000))
	if err := CreateNamed([]string{name}, func(string) {}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := DeleteNamed(name); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(Path(name)); err == nil {
			t.Errorf("%s left behind", Path(name))
		}
	})
	return name
}

// allThreadsIn fails if any thread of this process is not in netns id.
func allThreadsIn(t *testing.T, id ID) {
	t.Helper()
	for _, b := range ThreadsOutside(id, 2*time.Second) {
		t.Error(b)
	}
}

func TestDo(t *testing.T) {
	ns := testNS(t)
	root, err := IDOf("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := IDOf(Path(ns))
	if want == root {
		t.Fatal("new namespace has the root namespace's inode")
	}
	var ln net.Listener
	for i := 0; i < 20; i++ {
		err := Do(Path(ns), func() error {
			got, err := IDOf("/proc/thread-self/ns/net")
			if err != nil {
				return err
			}
			if got != want {
				return fmt.Errorf("in %v, want %v", got, want)
			}
			if i == 0 {
				// lo is down in a fresh namespace: bring it up with a handle.
				h, err := NewHandle(Path(ns))
				if err != nil {
					return err
				}
				defer h.Close()
				lo, err := h.LinkByName("lo")
				if err != nil {
					return err
				}
				if err := h.LinkSetUp(lo); err != nil {
					return err
				}
				ln, err = net.Listen("tcp4", "127.0.0.1:0")
				return err
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	defer ln.Close()
	allThreadsIn(t, root)
	// The listener's socket stays in the namespace: reachable from inside.
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	err = Do(Path(ns), func() error {
		c, err := net.DialTimeout("tcp4", ln.Addr().String(), time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	if err != nil {
		t.Errorf("dial inside namespace: %v", err)
	}
	if err := Do("/run/netns/cnb-does-not-exist", func() error { return nil }); err == nil {
		t.Error("Do on a missing namespace succeeded")
	}
	wantErr := errors.New("boom")
	if err := Do(Path(ns), func() error { return wantErr }); !errors.Is(err, wantErr) {
		t.Errorf("Do error = %v", err)
	}
	allThreadsIn(t, root)
}

func TestMainThreadPath(t *testing.T) {
	ns := testNS(t)
	var calls atomic.Int32
	old := onMainThread
	onMainThread = func() bool { return calls.Add(1) == 1 } // pretend the first goroutine landed on m0
	defer func() { onMainThread = old }()
	want, _ := IDOf(Path(ns))
	err := Do(Path(ns), func() error {
		got, err := IDOf("/proc/thread-self/ns/net")
		if err == nil && got != want {
			err = errors.New("not in namespace")
		}
		return err
	})
	if err != nil || calls.Load() != 2 {
		t.Errorf("err=%v calls=%d", err, calls.Load())
	}
}

func TestStartIn(t *testing.T) {
	ns := testNS(t)
	root, _ := IDOf("/proc/self/ns/net")
	cmd := exec.Command("sleep", "30")
	if err := StartIn(Path(ns), "", []int{0}, cmd); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	want, _ := IDOf(Path(ns))
	if got, err := IDOf(fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid)); err != nil || got != want {
		t.Errorf("child netns %v %v, want %v", got, err, want)
	}
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if !strings.Contains(string(status), "Cpus_allowed_list:\t0\n") {
		t.Errorf("child affinity not 0:\n%s", status)
	}
	pids, err := PidsIn(map[ID]string{want: ns})
	if err != nil || len(pids[ns]) != 1 || pids[ns][0] != cmd.Process.Pid {
		t.Errorf("PidsIn = %v, %v; want [%d]", pids, err, cmd.Process.Pid)
	}
	if !Alive(cmd.Process.Pid) || Comm(cmd.Process.Pid) != "sleep" {
		t.Error("Alive/Comm wrong")
	}
	allThreadsIn(t, root)

	bad := exec.Command("true")
	bad.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := StartIn(Path(ns), "", nil, bad); err == nil {
		t.Error("Pdeathsig accepted")
	}
	if err := StartIn(Path(ns), "/nonexistent-cgroup", nil, exec.Command("true")); err == nil {
		t.Error("missing cgroup accepted")
	}
}

func TestSysctl(t *testing.T) {
	ns := testNS(t)
	rootVal, err := os.ReadFile(SysctlPath("net.core.somaxconn"))
	if err != nil {
		t.Fatal(err)
	}
	newVal := "1234"
	if strings.TrimSpace(string(rootVal)) == newVal {
		newVal = "1235"
	}
	var got string
	err = Do(Path(ns), func() error {
		if err := WriteSysctl("net.core.somaxconn", newVal); err != nil {
			return err
		}
		if err := WriteSysctl("net.ipv4.nope_nope", "1"); !errors.Is(err, ErrNoSysctl) {
			return fmt.Errorf("missing key: %v", err)
		}
		if _, err := ReadSysctl("net/ipv4/nope_nope"); !errors.Is(err, ErrNoSysctl) {
			return fmt.Errorf("missing key: %v", err)
		}
		var err error
		got, err = ReadSysctl("net.core.somaxconn")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != newVal {
		t.Errorf("read back %q, want %q", got, newVal)
	}
	after, _ := os.ReadFile(SysctlPath("net.core.somaxconn"))
	if string(after) != string(rootVal) {
		t.Errorf("root somaxconn changed: %q -> %q", rootVal, after)
	}
}

func TestNamed(t *testing.T) {
	ns := testNS(t)
	if err := CreateNamed([]string{ns}, func(string) { t.Error("reported an existing namespace as created") }); err == nil {
		t.Error("CreateNamed over an existing name succeeded")
	}
	prefix := strings.TrimSuffix(ns, "a")
	names, err := ListNamed(prefix)
	if err != nil || len(names) != 1 || names[0] != ns {
		t.Errorf("ListNamed = %v, %v", names, err)
	}
	if err := DeleteNamed(prefix + "never"); err != nil {
		t.Errorf("DeleteNamed(missing) = %v", err)
	}
	// A leftover plain file (crash between create and mount) is removed.
	leftover := prefix + "file"
	if err := os.WriteFile(Path(leftover), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := DeleteNamed(leftover); err != nil {
		t.Errorf("DeleteNamed(plain file) = %v", err)
	}
	if _, err := os.Stat(Path(leftover)); err == nil {
		t.Error("leftover file not removed")
	}
}
