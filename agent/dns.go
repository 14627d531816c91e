package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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

// runDNS runs the client side of a DNS load test (PathDNS).
func (h *handler) runDNS(w http.ResponseWriter, r *http.Request) {
	var o dnsload.Options
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		http.Error(w, "bad DNS options: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := o.Validate(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !h.busy.TryLock() {
		http.Error(w, "agent is already running a test", http.StatusConflict)
		return
	}
	defer h.busy.Unlock()
	res, err := dnsload.Run(r.Context(), o)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
