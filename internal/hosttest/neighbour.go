package hosttest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// Neighbour is a noisy neighbour: another process on the same host, as
// Docker, a CNI plugin or a second lab tool would be (what it does: see
// noise). The process is the test binary run again (RunMain serves it), so
// it shares nothing with the tests' process (file descriptors, threads),
// and it ends, cleaning up, when its stdin closes: when Stop is called or
// the test binary dies.
type Neighbour struct {
	Wrap  []string      // prefixes every command, e.g. nsenter into a mount namespace
	Every time.Duration // pause between cycles; default 100 ms

	cmd      *exec.Cmd
	stdin    io.WriteCloser
	out      bytes.Buffer
	prefix   string
	stopped  bool
	reported bool // StopFor ran
	stats    NeighbourStats
	err      error
}

// envChild carries a Neighbour's configuration (JSON) to its process.
const envChild = "CNIBENCH_NOISY_NEIGHBOUR_CHILD"

type childConfig struct {
	Wrap  []string
	Every time.Duration
}

// Start starts the neighbour's process.
func (n *Neighbour) Start() error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("noisy neighbour: %w", err)
	}
	cfg, _ := json.Marshal(childConfig{n.Wrap, n.Every})
	n.cmd = exec.Command(exe)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, EnvNoisyNeighbour+"=") {
			n.cmd.Env = append(n.cmd.Env, e)
		}
	}
	n.cmd.Env = append(n.cmd.Env, envChild+"="+string(cfg))
	n.cmd.Stdout, n.cmd.Stderr = &n.out, os.Stderr
	if n.stdin, err = n.cmd.StdinPipe(); err != nil {
		return fmt.Errorf("noisy neighbour: %w", err)
	}
	if err := n.cmd.Start(); err != nil {
		return fmt.Errorf("noisy neighbour: %w", err)
	}
	n.prefix = namePrefix(n.cmd.Process.Pid)
	return nil
}

// Stop ends the neighbour's process, which removes its namespaces, and
// checks none is left. The error says what failed, or that it never
// completed a cycle (a neighbour that did nothing proves nothing). Later
// calls return the same.
func (n *Neighbour) Stop() (NeighbourStats, error) {
	if n.stopped {
		return n.stats, n.err
	}
	n.stopped = true
	n.stdin.Close()
	var errs []error
	if err := n.cmd.Wait(); err != nil {
		errs = append(errs, fmt.Errorf("noisy neighbour process: %w", err))
	}
	if err := json.Unmarshal(n.out.Bytes(), &n.stats); err != nil {
		errs = append(errs, fmt.Errorf("noisy neighbour: no counts from its process: %q", n.out.String()))
	}
	s := n.stats
	if s.Cycles == 0 {
		errs = append(errs, errors.New("noisy neighbour: no cycle completed"))
	}
	if s.Failures > 0 {
		errs = append(errs, fmt.Errorf("noisy neighbour: %d failures, first: %s", s.Failures, strings.Join(s.Errors, "; ")))
	}
	if left := n.Leftovers(); len(left) > 0 {
		errs = append(errs, fmt.Errorf("noisy neighbour: namespaces left: %v", left))
	}
	n.err = errors.Join(errs...)
	return s, n.err
}

// Leftovers lists the neighbour's namespaces that `ip netns list` shows.
func (n *Neighbour) Leftovers() []string {
	args := append(append([]string{}, n.Wrap...), "ip", "netns", "list")
	out, _ := exec.Command(args[0], args[1:]...).Output()
	var left []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], n.prefix) {
			left = append(left, f[0])
		}
	}
	return left
}

// serveChild is the neighbour's process: noise until stdin closes, then
// its counts as JSON on stdout. SIGINT and SIGTERM (a ^C to go test reaches
// the whole process group) are ignored so that a toggle is never cut short
// with the root's ip_forward flipped; the parent's exit closes stdin.
func serveChild(cfg string) int {
	var c childConfig
	if err := json.Unmarshal([]byte(cfg), &c); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", envChild, err)
		return 2
	}
	if c.Every == 0 {
		c.Every = 100 * time.Millisecond
	}
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	n := &noise{Wrap: c.Wrap, Every: c.Every}
	n.start()
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := json.NewEncoder(os.Stdout).Encode(n.end()); err != nil {
		return 1
	}
	return 0
}
