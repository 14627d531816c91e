package dnsload

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StartFunc starts cmd (as exec.Cmd.Start does), for example inside a lab
// pod's namespace and cgroup:
//
//	func(c *exec.Cmd) error { return lab.Start(ep, c, cpus) }
//
// The Server waits for the process itself.
type StartFunc func(cmd *exec.Cmd) error

// Server is a running DNS daemon made from a ServerSpec: NewServer writes
// its files, Start runs it and waits until it answers, Stop kills it and
// removes everything.
type Server struct {
	// Spec is the spec as run, defaults filled in.
	Spec ServerSpec
	// Dir holds the config, the hosts file and the pid file; Stop removes
	// it.
	Dir string
	// StartCmd starts the daemon. nil: exec.Cmd.Start, in this process's
	// namespaces.
	StartCmd StartFunc
	// ProbeIn runs fn, the readiness probe (which opens its socket), where
	// Spec.Listen is reachable, e.g. netnsx.Do in the pod's namespace when
	// StartCmd starts the daemon in another namespace. nil: runs fn here.
	ProbeIn func(fn func() error) error

	bin, conf string
	cmd       *exec.Cmd
	out       tail
	done      chan struct{}
	waitErr   error
	stopOnce  sync.Once
	stopErr   error
}

// NewServer validates spec, finds the daemon and writes its files into a
// new temporary directory. Call Stop to remove them, whether or not Start
// was called.
func NewServer(spec ServerSpec) (*Server, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	bin, err := spec.binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "cnb-dnsload-")
	if err != nil {
		return nil, fmt.Errorf("dnsload: %v", err)
	}
	// dnsmasq drops root for nobody and reads the hosts file after that.
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("dnsload: %v", err)
	}
	conf, err := writeConfig(dir, &spec)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("dnsload: write dnsmasq config: %v", err)
	}
	return &Server{Spec: spec, Dir: dir, bin: bin, conf: conf}, nil
}

// Argv is the daemon's command line: in the foreground, everything else in
// its config file.
func (s *Server) Argv() []string {
	return []string{s.bin, "--keep-in-foreground", "--conf-file=" + s.conf}
}

// Addr is where the server answers, IP:port.
func (s *Server) Addr() string { return s.Spec.AddrPort().String() }

// Pid is the daemon's process ID, 0 before Start.
func (s *Server) Pid() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Output is the tail of the daemon's stderr and stdout.
func (s *Server) Output() string { return s.out.String() }

// Start runs the daemon and waits until it answers a real query for the
// first name with the right address, for at most Spec.ReadyTimeout. On
// failure everything is stopped and removed, and the error says why in one
// line, with the daemon's last words.
func (s *Server) Start(ctx context.Context) error {
	if s.cmd != nil {
		return fmt.Errorf("dnsload: server %s already started", s.Addr())
	}
	argv := s.Argv()
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
	s.cmd.Dir = s.Dir
	start := s.StartCmd
	if start == nil {
		start = (*exec.Cmd).Start
	}
	if err := start(s.cmd); err != nil {
		s.cmd = nil
		s.Stop()
		return fmt.Errorf("dnsload: start %s: %v", argv[0], err)
	}
	s.done = make(chan struct{})
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return err
	}
	return nil
}

// waitReady polls with real queries until the daemon answers correctly.
func (s *Server) waitReady(ctx context.Context) error {
	timeout := time.Duration(s.Spec.ReadyTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	probeIn := s.ProbeIn
	if probeIn == nil {
		probeIn = func(fn func() error) error { return fn() }
	}
	addr, name, want := s.Spec.AddrPort(), s.Spec.Name(0), s.Spec.Address(0)
	var last error
	for {
		var a *Answer
		err := probeIn(func() error {
			var err error
			a, err = Query(ctx, addr, name, 200*time.Millisecond)
			return err
		})
		if err == nil {
			if a.Rcode == "NOERROR" && slices.Contains(a.A, want) {
				return nil
			}
			// Someone answers, wrongly: not ours, or misconfigured.
			return fmt.Errorf("dnsload: server %s answers %s with %s %v, want %s%s", addr, name, a.Rcode, a.A, want, s.lastWords())
		}
		last = err
		select {
		case <-s.done:
			return fmt.Errorf("dnsload: %s exited during startup (%v)%s", s.bin, s.waitErr, s.lastWords())
		case <-ctx.Done():
			if parent := context.Cause(ctx); parent != context.DeadlineExceeded {
				return fmt.Errorf("dnsload: waiting for server %s: %w", addr, parent)
			}
			return fmt.Errorf("dnsload: server %s not answering after %s (%v)%s", addr, timeout, strings.TrimPrefix(last.Error(), "dnsload: "), s.lastWords())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// lastWords is ": " and the daemon's last output line, if any.
func (s *Server) lastWords() string {
	if l := s.out.lastLine(); l != "" {
		return ": " + l
	}
	return ""
}

// Stop kills the daemon (SIGTERM, SIGKILL after a second), reaps it and
// removes Dir. It may be called more than once, and after a failed Start.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		if s.done != nil {
			s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.done:
			case <-time.After(time.Second):
				s.cmd.Process.Kill()
				<-s.done
			}
		}
		if err := os.RemoveAll(s.Dir); err != nil {
			s.stopErr = fmt.Errorf("dnsload: %v", err)
		}
	})
	return s.stopErr
}

// tail keeps the last tailMax bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 8 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailMax {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailMax:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// lastLine is the last non-empty line written.
func (t *tail) lastLine() string {
	lines := strings.Split(strings.TrimSpace(t.String()), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
