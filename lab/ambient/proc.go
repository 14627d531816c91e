package ambient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/internal/logtail"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab/l7proxy"
)

// proxy is a started HAProxy of the mesh: a node's, or the waypoint.
type proxy struct {
	Name   string `json:"name"` // "ztunnel-node0", "waypoint"
	Node   string `json:"node"` // the node it runs in
	Netns  string `json:"netns"`
	Cfg    string `json:"cfg"`    // config file: also what Cleanup finds the process by
	Log    string `json:"log"`    // captured stderr
	Stats  string `json:"stats"`  // abstract stats socket name, in Netns
	Cgroup string `json:"cgroup"` // own cgroup v2 dir, "" if none
	PID    int    `json:"pid"`
	done   chan struct{}
	// ready tells the stats socket answers with what the config has.
	ready func(p *proxy) error
}

// startProxy writes cfg and starts HAProxy in the foreground (-db) in
// node n's namespace, in its own cgroup (<parent>/amb-<name>) and on its
// node's CPUs when given, and waits until ready says it answers.
func startProxy(ctx context.Context, name string, n Node, cfg, stats, base string, opts Options, ready func(*proxy) error) (*proxy, error) {
	p := &proxy{Name: name, Node: n.Name, Netns: n.Netns, Cfg: base + ".cfg", Log: base + ".log", Stats: stats, ready: ready}
	if len(p.Stats) > 100 {
		return p, fmt.Errorf("ambient: stats socket name %q longer than 100 bytes: shorten the prefix", p.Stats)
	}
	if err := os.WriteFile(p.Cfg, []byte(cfg), 0o644); err != nil {
		return p, fmt.Errorf("ambient: %w", err)
	}
	logf, err := os.Create(p.Log)
	if err != nil {
		return p, fmt.Errorf("ambient: %w", err)
	}
	defer logf.Close()
	if opts.CgroupParent != "" {
		p.Cgroup = filepath.Join(opts.CgroupParent, "amb-"+name)
		if err := os.Mkdir(p.Cgroup, 0o755); err != nil {
			return p, fmt.Errorf("ambient: cgroup: %w", err)
		}
	}
	var cpus []int
	if opts.CPUsOf != nil {
		cpus = opts.CPUsOf(n.Name)
	}
	cmd := exec.Command("haproxy", "-db", "-f", p.Cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := netnsx.StartIn(n.Netns, p.Cgroup, cpus, cmd); err != nil {
		return p, fmt.Errorf("ambient: start %s: %w", name, err)
	}
	p.PID = cmd.Process.Pid
	p.done = make(chan struct{})
	go func() { cmd.Wait(); close(p.done) }()
	return p, p.waitReady(ctx)
}

// waitReady polls the stats socket until HAProxy answers, up to 5 s.
func (p *proxy) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := p.ready(p); err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("ambient: haproxy of %s exited at start: %s", p.Name, logtail.Lines(p.Log, 3))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ambient: haproxy of %s not ready after 5s: %s", p.Name, logtail.Lines(p.Log, 3))
		}
	}
}

// stop ends the process: SIGTERM, then SIGKILL after 3 s. A process known
// only by pid (after a crash) is checked to still be ours first.
func (p *proxy) stop() error {
	if p.PID == 0 {
		return nil
	}
	if p.done == nil {
		err := l7proxy.KillOwn(p.PID, p.Cfg)
		p.PID = 0
		return err
	}
	syscall.Kill(p.PID, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(3 * time.Second):
		syscall.Kill(p.PID, syscall.SIGKILL)
		<-p.done
	}
	p.PID = 0
	return nil
}

// Counters are a node proxy's cumulative connection counts (HAProxy's
// stot, sessions since start).
type Counters struct {
	Outbound uint64 `json:"outbound"` // connections its node's pods opened through it
	Tunnels  uint64 `json:"tunnels"`  // of those, carried in TLS to another node
	Inbound  uint64 `json:"inbound"`  // mTLS connections it accepted from other nodes
}

// counters reads a node proxy's counters.
func (p *proxy) counters() (Counters, error) { return showStat(p, parseStat) }

// abstractName is HAProxy's abns@name as Go dials it: HAProxy binds the
// name padded with NULs to the whole sun_path (108 bytes).
func abstractName(name string) string {
	return "@" + name + strings.Repeat("\x00", 107-len(name))
}

// parseStat takes stot of the frontends "outbound" and "inbound" and of
// the backend "tunnel" from HAProxy's "show stat" CSV.
func parseStat(rd io.Reader) (Counters, error) {
	sc := bufio.NewScanner(rd)
	var cols map[string]int
	var c Counters
	found := map[string]bool{}
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# ") {
			cols = map[string]int{}
			for i, n := range strings.Split(strings.TrimPrefix(line, "# "), ",") {
				cols[n] = i
			}
			continue
		}
		f := strings.Split(line, ",")
		i, ok := cols["stot"]
		if !ok || len(f) <= i || len(f) < 2 {
			continue
		}
		var dst *uint64
		switch f[0] + "/" + f[1] {
		case "outbound/FRONTEND":
			dst = &c.Outbound
		case "inbound/FRONTEND":
			dst = &c.Inbound
		case "tunnel/BACKEND":
			dst = &c.Tunnels
		default:
			continue
		}
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return c, fmt.Errorf("ambient: show stat %s stot %q: %w", f[0], f[i], err)
		}
		*dst = v
		found[f[0]] = true
	}
	if err := sc.Err(); err != nil {
		return c, err
	}
	if len(found) != 3 {
		return c, errors.New("ambient: show stat lacks the outbound, inbound or tunnel row")
	}
	return c, nil
}

// showStat sends "show stat" on p's stats socket, dialled inside its
// namespace (abstract sockets are per netns), and parses the answer.
func showStat[T any](p *proxy, parse func(io.Reader) (T, error)) (T, error) {
	var zero T
	var c net.Conn
	err := netnsx.Do(p.Netns, func() (err error) {
		c, err = net.DialTimeout("unix", abstractName(p.Stats), time.Second)
		return err
	})
	if err != nil {
		return zero, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("show stat\n")); err != nil {
		return zero, err
	}
	return parse(c)
}

// nodeReady: a node proxy answers with its three rows.
func nodeReady(p *proxy) error { _, err := p.counters(); return err }

// cpu is the proxy's CPU time: its cgroup's usage_usec when it has one,
// else utime+stime of the live process.
func (p *proxy) cpu() (time.Duration, error) {
	if p.Cgroup != "" {
		return cgroupCPU(p.Cgroup)
	}
	return l7proxy.ProcessCPU(p.PID)
}
