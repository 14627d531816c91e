package labtest

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/nsexec"
)

// GoldenSpec is the Services of the recorded tool output: three Service
// ports × two endpoints, one of them UDP with its own port name.
func GoldenSpec() datapath.Spec {
	ep := func(ip string, port uint16) datapath.Endpoint {
		return datapath.Endpoint{IP: netip.MustParseAddr(ip), Port: port}
	}
	return datapath.Spec{Services: []datapath.Service{
		{Namespace: "default", Name: "web", PortName: "http", VIP: netip.MustParseAddr("198.18.128.10"), Port: 80,
			Protocol: datapath.TCP, Endpoints: []datapath.Endpoint{ep("198.19.0.10", 8080), ep("198.19.1.10", 8080)}},
		{Namespace: "default", Name: "api", VIP: netip.MustParseAddr("198.18.128.11"), Port: 443,
			Protocol: datapath.TCP, Endpoints: []datapath.Endpoint{ep("198.19.0.11", 8443), ep("198.19.1.11", 8443)}},
		{Namespace: "kube-system", Name: "dns", PortName: "dns", VIP: netip.MustParseAddr("198.18.128.12"), Port: 53,
			Protocol: datapath.UDP, Endpoints: []datapath.Endpoint{ep("198.19.0.12", 5353), ep("198.19.1.12", 5353)}},
	}}
}

// ReadGolden returns testdata/name.
func ReadGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// WriteGolden writes b to testdata/name (a recording test, run as root
// with its package's -update flag).
func WriteGolden(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Tools is an nsexec.Runner playing recorded tool output, for testing a
// datapath without root: each command line ("iptables-nft-save", "nft -j
// list table ip kube-proxy") answers its Replies in turn, the last one
// again when they run out; a command with none fails. Every call is kept
// in Calls.
type Tools struct {
	mu      sync.Mutex
	Replies map[string][]Reply
	Calls   []Call
}

// Reply is one recorded answer of a tool.
type Reply struct {
	Out []byte
	Err error
}

// Call is one run of a tool: its command line, added environment and stdin.
type Call struct {
	Line  string
	Env   []string
	Stdin []byte
}

var _ nsexec.Runner = (*Tools)(nil)

// Run answers the next recorded reply of the command line.
func (f *Tools) Run(_ context.Context, env []string, stdin []byte, name string, args ...string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	line := strings.Join(append([]string{name}, args...), " ")
	f.Calls = append(f.Calls, Call{Line: line, Env: env, Stdin: stdin})
	rs := f.Replies[line]
	if len(rs) == 0 {
		return nil, fmt.Errorf("%s: no recorded output", line)
	}
	r := rs[0]
	if len(rs) > 1 {
		f.Replies[line] = rs[1:]
	}
	return r.Out, r.Err
}

// Lines returns the command lines run, in order.
func (f *Tools) Lines() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.Calls {
		out = append(out, c.Line)
	}
	return out
}
