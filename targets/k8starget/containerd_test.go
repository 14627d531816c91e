package k8starget

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/results"
)

// privateContainerd is a containerd of the test's own: its root, state,
// socket, runc root and FIFOs all live in dir, the CRI plugin (and with
// it any CNI) is off, and the process is killed at cleanup. The machine's
// containerd, if any, is never touched.
type privateContainerd struct {
	t    *testing.T
	dir  string
	sock string
	ns   string // containerd namespace, cnb-...
	cmd  *exec.Cmd
}

func startContainerd(t *testing.T) *privateContainerd {
	t.Helper()
	for _, tool := range []string{"containerd", "ctr", "runc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipping: %s not found (apt-get install containerd runc)", tool)
		}
	}
	// /run/containerd is where containerd 1.6 puts shim sockets whatever
	// its config says; remember whether it existed, to leave no trace.
	_, runErr := os.Stat("/run/containerd")
	dir, err := os.MkdirTemp("", "cnb-ctrd-") // short: socket paths are limited to 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	c := &privateContainerd{t: t, dir: dir, sock: filepath.Join(dir, "c.sock"), ns: fmt.Sprintf("cnb-ctr%06d", rand.IntN(1000000))}
	conf := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = %q
[plugins."io.containerd.internal.v1.opt"]
  path = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), c.sock, filepath.Join(dir, "opt"))
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, _ := os.Create(filepath.Join(dir, "containerd.log"))
	c.cmd = exec.Command("containerd", "--config", filepath.Join(dir, "config.toml"))
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = c.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = c.cmd.Process.Kill()
			<-done
		}
		// Snapshot mounts go with their containers; unmount anything left.
		if b, err := os.ReadFile("/proc/self/mounts"); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], dir) {
					_ = syscall.Unmount(f[1], syscall.MNT_DETACH)
				}
			}
		}
		os.RemoveAll(dir)
		if os.IsNotExist(runErr) {
			for _, d := range []string{"/run/containerd/s", "/run/containerd/fifo", "/run/containerd/runc", "/run/containerd"} {
				_ = os.Remove(d) // only if empty
			}
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := c.ctr("version"); err == nil {
			return c
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "containerd.log"))
			t.Fatalf("private containerd did not come up: %s", tailString(string(b), 600))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *privateContainerd) ctr(args ...string) (string, error) {
	out, err := exec.Command("ctr", append([]string{"--address", c.sock, "-n", c.ns}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func tailString(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// buildCnibench compiles the real CLI, statically, as make build does.
func buildCnibench(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cnibench")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "../../cmd/cnibench")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build cnibench: %v: %s", err, out)
	}
	return bin
}

// The agent image, as make image builds it, imported into containerd and
// run by runc inside a lab pod's network namespace (and no other network):
// the CLI's agent client reaches it with the run token, and a lab-side
// agent completes a TCP_RR test against its data ports.
func TestImageRunsAgentUnderContainerd(t *testing.T) {
	needRoot(t)
	ctrd := startContainerd(t)
	bin := buildCnibench(t)
	tarball := filepath.Join(t.TempDir(), "cnibench-image.tar")
	info, err := BuildImage(ImageOptions{Binary: bin, Ref: "ghcr.io/cnibench/cnibench:test", Out: tarball})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctrd.ctr("image", "import", tarball); err != nil {
		t.Fatal(err)
	}
	ls, err := ctrd.ctr("image", "ls")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ls, "ghcr.io/cnibench/cnibench:test") || !strings.Contains(ls, info.Digest) {
		t.Fatalf("imported image is not %s %s:\n%s", info.Ref, info.Digest, ls)
	}

	l := newLab(t, 2, 1)
	server, _ := l.Endpoint("node1-pod0")
	client, _ := l.Endpoint("node0-pod0")
	token := "containerd-test-token-0123456789abcdef"
	sockDir := filepath.Join(ctrd.dir, "sock")
	os.MkdirAll(sockDir, 0o777)
	os.Chmod(sockDir, 0o777) // the agent runs as nobody
	id := ctrd.ns + "-agent"
	cgroup := "/" + ctrd.ns + "/agent"
	t.Cleanup(func() {
		_, _ = ctrd.ctr("task", "kill", "-s", "SIGKILL", id)
		for i := 0; i < 50; i++ {
			if _, err := ctrd.ctr("task", "rm", "-f", id); err == nil || strings.Contains(err.Error(), "not found") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		_, _ = ctrd.ctr("container", "rm", id)
		dirs, _ := filepath.Glob("/sys/fs/cgroup/*/" + ctrd.ns)
		if d := "/sys/fs/cgroup/" + ctrd.ns; isDir(d) {
			dirs = append(dirs, d)
		}
		for _, d := range dirs {
			_ = os.Remove(filepath.Join(d, "agent"))
			_ = os.Remove(d)
		}
	})
	// Network: only the lab pod's namespace (--with-ns); no --net-host, no
	// CNI (the CRI plugin is off). Control: a unix socket on a bind mount.
	if _, err := ctrd.ctr("run", "-d",
		"--with-ns", "network:"+server.NetnsPath(),
		"--cgroup", cgroup,
		"--fifo-dir", filepath.Join(ctrd.dir, "fifo"),
		"--runc-root", filepath.Join(ctrd.dir, "runc"),
		"--mount", "type=bind,src="+sockDir+",dst=/sock,options=rbind:rw",
		"--env", agent.TokenEnv+"="+token,
		"ghcr.io/cnibench/cnibench:test", id,
		BinaryPath, "agent", "--control", "unix:/sock/agent.sock"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	boxed, err := agent.NewClient("container", "unix:"+filepath.Join(sockDir, "agent.sock"), token)
	if err != nil {
		t.Fatal(err)
	}
	if err := boxed.WaitReady(ctx, 15*time.Second); err != nil {
		out, _ := ctrd.ctr("task", "ls")
		t.Fatalf("%v (tasks: %s)", err, out)
	}
	h, err := boxed.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// PID 1: the agent is the container's init, in its own PID namespace.
	if h.PID != 1 {
		t.Errorf("containerised agent reports PID %d, want 1 (its own PID namespace)", h.PID)
	}
	wrong, _ := agent.NewClient("container", "unix:"+filepath.Join(sockDir, "agent.sock"), "wrong")
	if _, err := wrong.Health(ctx); err == nil || !strings.Contains(err.Error(), "bad or missing agent token") {
		t.Errorf("wrong token: %v", err)
	}

	// The client side: a lab agent in node0-pod0 (same binary, not
	// containerised) runs TCP_RR against the container's address.
	csock := filepath.Join(ctrd.dir, "client.sock")
	cmd := exec.Command(bin, "agent", "--control", "unix:"+csock, "--exit-on-stdin-eof")
	cmd.Env = append(os.Environ(), agent.TokenEnv+"="+token)
	stdin, _ := cmd.StdinPipe()
	if err := l.Start(client, cmd, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	lc, _ := agent.NewClient("node0-pod0", "unix:"+csock, token)
	if err := lc.WaitReady(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	res, err := agent.RunAs[engine.Result](ctx, lc, results.KindRR, &engine.Options{Test: engine.TCPRR, Host: server.IP, RunnerOptions: engine.RunnerOptions{Duration: engine.Duration(time.Second)}, Streams: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Transactions < 100 || res.Errors != 0 || res.Options.Host != server.IP {
		t.Fatalf("TCP_RR against the containerised agent: %d transactions, %d errors (%s)", res.Transactions, res.Errors, res.ErrorMsg)
	}
	t.Logf("TCP_RR lab pod -> containerised agent %s: %d transactions in %.1fs", server.IP, res.Transactions, res.Seconds)
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
