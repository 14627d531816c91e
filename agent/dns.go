package agent

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"

	"github.com/cnibench/cnibench/engine/dnsload"
)

// startDNS runs the DNS server of the DNS tests (dnsmasq answering the
// test names from memory) in the agent's namespace and cgroup, so its CPU
// is the server's; it dies with the agent.
func startDNS(ctx context.Context, spec dnsload.ServerSpec) (stop func(), err error) {
	s, err := dnsload.NewServer(spec)
	if err != nil {
		return nil, fmt.Errorf("DNS server: %w", err)
	}
	s.StartCmd = func(c *exec.Cmd) error {
		c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		return c.Start()
	}
	if err := s.Start(ctx); err != nil {
		return nil, fmt.Errorf("DNS server: %w", err)
	}
	return func() { _ = s.Stop() }, nil
}
