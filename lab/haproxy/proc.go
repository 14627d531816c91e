package haproxy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/internal/logtail"
	"github.com/cnibench/cnibench/internal/netnsx"
)

// Proc is a started HAProxy. Its exported fields are what a state file
// keeps, so that a crashed run's process is found and stopped again.
type Proc struct {
	Cfg    string `json:"cfg"`    // config file: also what KillOwn finds the process by
	Log    string `json:"log"`    // captured stderr
	Stats  string `json:"stats"`  // abstract stats socket name, in the proxy's namespace
	Cgroup string `json:"cgroup"` // own cgroup v2 dir, "" if none
	PID    int    `json:"pid"`
	done   chan struct{}
}

// Launch is how to start one HAProxy.
type Launch struct {
	Name   string // for errors: "node0", "waypoint"
	Netns  string // namespace path it runs in
	Config string // the config file's text
	Base   string // path prefix of its files: Base.cfg, Base.log
	Stats  string // abstract stats socket name the config binds
	Cgroup string // cgroup v2 dir to create and run it in ("" for none)
	CPUs   []int  // CPUs to pin it to (nil for any)
	// Ready tells the stats socket answers with what the config has.
	Ready func(*Proc) error
}

// Start writes the config and starts HAProxy in the foreground (-db) as
// l says, and waits until l.Ready holds (up to 5 s). The Proc is returned
// also on error, for the caller to stop what did start.
func Start(ctx context.Context, l Launch) (*Proc, error) {
	p := &Proc{Cfg: l.Base + ".cfg", Log: l.Base + ".log", Stats: l.Stats}
	if len(p.Stats) > 100 {
		return p, fmt.Errorf("haproxy: stats socket name %q longer than 100 bytes: shorten the prefix", p.Stats)
	}
	if err := os.WriteFile(p.Cfg, []byte(l.Config), 0o644); err != nil {
		return p, fmt.Errorf("haproxy: %w", err)
	}
	logf, err := os.Create(p.Log)
	if err != nil {
		return p, fmt.Errorf("haproxy: %w", err)
	}
	defer logf.Close()
	if l.Cgroup != "" {
		if err := os.Mkdir(l.Cgroup, 0o755); err != nil {
			return p, fmt.Errorf("haproxy: cgroup: %w", err)
		}
		p.Cgroup = l.Cgroup
	}
	cmd := exec.Command("haproxy", "-db", "-f", p.Cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := netnsx.StartIn(l.Netns, p.Cgroup, l.CPUs, cmd); err != nil {
		return p, fmt.Errorf("haproxy: start %s: %w", l.Name, err)
	}
	p.PID = cmd.Process.Pid
	p.done = make(chan struct{})
	go func() { cmd.Wait(); close(p.done) }()
	return p, p.waitReady(ctx, l)
}

// waitReady polls l.Ready until it holds, up to 5 s.
func (p *Proc) waitReady(ctx context.Context, l Launch) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := l.Ready(p); err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("haproxy %s exited at start: %s", l.Name, p.LogTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("haproxy %s not ready after 5s: %s", l.Name, p.LogTail())
		}
	}
}

// LogTail is the last lines HAProxy wrote, on one line.
func (p *Proc) LogTail() string { return logtail.Lines(p.Log, 3) }

// Stop ends the process: SIGTERM (HAProxy's hard stop), then SIGKILL
// after 3 s. A process known only by pid (after a crash) is checked to
// still be our HAProxy first.
func (p *Proc) Stop() error {
	if p.PID == 0 {
		return nil
	}
	if p.done == nil {
		err := KillOwn(p.PID, p.Cfg)
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

// CPU is the proxy's CPU time: its cgroup's usage_usec when it has one
// (kept after exit), else utime+stime of the live process.
func (p *Proc) CPU() (time.Duration, error) {
	if p.Cgroup != "" {
		return CgroupCPU(p.Cgroup)
	}
	return ProcessCPU(p.PID)
}
