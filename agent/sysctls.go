package agent

import (
	"context"
	"errors"
	"net/http"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// PathSysctls answers the agent's effective sysctls (Sysctls).
const PathSysctls = "/v1/sysctls"

// SysctlKeys are the sysctls that shape what the tests measure (ephemeral
// ports and TIME_WAIT reuse for the connection-per-transaction tests,
// accept backlogs, socket buffer limits, the congestion control a new
// namespace takes from the host), read for the results' provenance in
// the agent's own network namespace.
var SysctlKeys = []string{
	"net.ipv4.ip_local_port_range",
	"net.ipv4.tcp_tw_reuse",
	"net.ipv4.tcp_fin_timeout",
	"net.core.somaxconn",
	"net.ipv4.tcp_max_syn_backlog",
	"net.netfilter.nf_conntrack_tcp_timeout_time_wait",
	"net.core.rmem_max",
	"net.core.wmem_max",
	"net.ipv4.tcp_congestion_control",
}

// Sysctls is the answer of PathSysctls: what the kernel applies to the
// agent's sockets, not what anyone asked for.
type Sysctls struct {
	Values map[string]string `json:"values"`
	// Unreadable are keys this namespace does not show (net.core.rmem_max
	// outside the host's namespace on older kernels, nf_conntrack_* without
	// conntrack) or that could not be read, with why.
	Unreadable map[string]string `json:"unreadable,omitempty"`
}

// ReadSysctls reads SysctlKeys in the calling process's network namespace.
func ReadSysctls() Sysctls {
	s := Sysctls{Values: map[string]string{}}
	for _, k := range SysctlKeys {
		v, err := netnsx.ReadSysctl(k)
		if err != nil {
			if s.Unreadable == nil {
				s.Unreadable = map[string]string{}
			}
			s.Unreadable[k] = "absent in this network namespace"
			if !errors.Is(err, netnsx.ErrNoSysctl) {
				s.Unreadable[k] = err.Error()
			}
			continue
		}
		s.Values[k] = v
	}
	return s
}

func (h *handler) sysctls(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, ReadSysctls())
}

// Sysctls asks the agent for its network namespace's effective sysctls.
func (c *Client) Sysctls(ctx context.Context) (*Sysctls, error) {
	var s Sysctls
	if err := c.do(ctx, http.MethodGet, PathSysctls, nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}
