package l7proxy

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
)

// running is a started proxy.
type running struct {
	proxy
	Cfg    string `json:"cfg"`    // config file: also what Cleanup finds the process by
	Log    string `json:"log"`    // captured stderr
	Stats  string `json:"stats"`  // abstract stats socket name, in Netns
	Cgroup string `json:"cgroup"` // own cgroup v2 dir, "" if none
	PID    int    `json:"pid"`
	done   chan struct{}
}

// startProxy writes p's config and starts HAProxy in the foreground (-db)
// in p's namespace, in its own cgroup under opts.CgroupParent if given,
// pinned to its CPUs (Options.cpus) if given, and waits until its stats
// socket answers.
func startProxy(ctx context.Context, s Spec, p proxy, opts Options) (*running, error) {
	base := filepath.Join(opts.StateDir, opts.Prefix+"l7-"+p.Name)
	r := &running{proxy: p, Cfg: base + ".cfg", Log: base + ".log", Stats: opts.Prefix + "l7-" + p.Name}
	if len(r.Stats) > 100 {
		return r, fmt.Errorf("l7proxy: stats socket name %q longer than 100 bytes: shorten the prefix", r.Stats)
	}
	if err := os.WriteFile(r.Cfg, []byte(config(s, p, r.Stats)), 0o644); err != nil {
		return r, fmt.Errorf("l7proxy: %w", err)
	}
	logf, err := os.Create(r.Log)
	if err != nil {
		return r, fmt.Errorf("l7proxy: %w", err)
	}
	defer logf.Close()
	if opts.CgroupParent != "" {
		r.Cgroup = filepath.Join(opts.CgroupParent, "l7-"+p.Name)
		if err := os.Mkdir(r.Cgroup, 0o755); err != nil {
			return r, fmt.Errorf("l7proxy: cgroup: %w", err)
		}
	}
	cmd := exec.Command("haproxy", "-db", "-f", r.Cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := netnsx.StartIn(p.Netns, r.Cgroup, opts.cpus(p.Name), cmd); err != nil {
		return r, fmt.Errorf("l7proxy: start %s: %w", p.Name, err)
	}
	r.PID = cmd.Process.Pid
	r.done = make(chan struct{})
	go func() { cmd.Wait(); close(r.done) }()
	return r, r.waitReady(ctx)
}

// waitReady polls the stats socket until HAProxy answers, up to 5 s.
func (r *running) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := r.stats(); err == nil {
			return nil
		}
		select {
		case <-r.done:
			return fmt.Errorf("l7proxy: haproxy %s exited at start: %s", r.Name, r.logTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("l7proxy: haproxy %s not ready after 5s: %s", r.Name, r.logTail())
		}
	}
}

// logTail is the last lines HAProxy wrote, on one line.
func (r *running) logTail() string { return logtail.Lines(r.Log, 3) }

// Counters are a proxy's counters, from its stats socket.
type Counters struct {
	Requests uint64 `json:"requests"` // HTTP requests received (frontend req_tot)
	Denied   uint64 `json:"denied"`   // requests denied by the rules (frontend dreq)
	// Connects and Reuses are upstream connections opened and requests
	// sent on an idle pooled one (server connect, reuse): the pool at work.
	Connects uint64 `json:"connects"`
	Reuses   uint64 `json:"reuses"`
}

// stats reads the counters with "show stat" on the socket, dialled inside
// the proxy's namespace (abstract sockets are per netns).
func (r *running) stats() (Counters, error) {
	var c net.Conn
	err := netnsx.Do(r.Netns, func() (err error) {
		c, err = net.DialTimeout("unix", abstractName(r.Stats), time.Second)
		return err
	})
	if err != nil {
		return Counters{}, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("show stat\n")); err != nil {
		return Counters{}, err
	}
	return parseStat(c)
}

// abstractName is HAProxy's abns@name as Go dials it: HAProxy binds the
// name padded with NULs to the whole sun_path (108 bytes), and an
// abstract address must match to the last byte.
func abstractName(name string) string {
	return "@" + name + strings.Repeat("\x00", 107-len(name))
}

// parseStat reads HAProxy's "show stat" CSV: the counters of frontend
// "in" and of server "original" of backend "original".
func parseStat(rd io.Reader) (Counters, error) {
	sc := bufio.NewScanner(rd)
	var cols map[string]int
	var c Counters
	var errs []error
	get := func(f []string, n string) uint64 {
		i, ok := cols[n]
		if !ok || i >= len(f) {
			errs = append(errs, fmt.Errorf("l7proxy: show stat has no %s column", n))
			return 0
		}
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil && f[i] != "" {
			errs = append(errs, fmt.Errorf("l7proxy: show stat %s %q: %w", n, f[i], err))
		}
		return v
	}
	rows := 0
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
		switch {
		case cols == nil || len(f) < 2:
		case f[0] == "in" && f[1] == "FRONTEND":
			c.Requests, c.Denied = get(f, "req_tot"), get(f, "dreq")
			rows++
		case f[0] == "original" && f[1] == "original":
			c.Connects, c.Reuses = get(f, "connect"), get(f, "reuse")
			rows++
		}
	}
	errs = append(errs, sc.Err())
	if rows != 2 {
		errs = append(errs, errors.New("l7proxy: show stat lacks the frontend \"in\" or the server \"original\" row"))
	}
	return c, errors.Join(errs...)
}

// stop ends the process: SIGTERM (HAProxy's hard stop), then SIGKILL
// after 3 s. A process found only by pid (after a crash) is checked to
// still be our HAProxy first.
func (r *running) stop() error {
	if r.PID == 0 {
		return nil
	}
	if r.done == nil {
		return killOwn(r.PID, r.Cfg)
	}
	syscall.Kill(r.PID, syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(3 * time.Second):
		syscall.Kill(r.PID, syscall.SIGKILL)
		<-r.done
	}
	r.PID = 0
	return nil
}

// cpu is the proxy's CPU time: its cgroup's usage_usec when it has one
// (kept after exit), else utime+stime of the live process.
func (r *running) cpu() (time.Duration, error) {
	if r.Cgroup != "" {
		return cgroupCPU(r.Cgroup)
	}
	return procCPU(r.PID)
}
