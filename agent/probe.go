package agent

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/cnibench/cnibench/agent/nodeprobe"
)

// DefaultProbePort is a node probe's control port: agents use 5200, the
// engines 5201-5205 and HTTP 8080, so a hostNetwork probe beside an agent
// on the same node takes none of theirs.
const DefaultProbePort = 5210

// ProbeConfig says where a node probe listens and what it reads.
type ProbeConfig struct {
	// Control is "unix:/path/to.sock" or "tcp:host:port" (a probe on a
	// cluster: tcp::5210, see DefaultProbePort).
	Control string
	// Token authenticates the CLI as for Config.Token.
	Token string
	// Node is the node name the reports carry.
	Node string
	// BPFFS is where the node's BPF filesystem is mounted ("" =
	// nodeprobe.DefaultBPFFS).
	BPFFS string
	// NetNS is the network namespace to read ("" = the probe's own, the
	// node's in a hostNetwork pod); tests point it at a scratch one.
	NetNS string
	// CNIConfDir is where the node's CNI config is mounted ("" =
	// nodeprobe.DefaultCNIConfDir); tests point it at a scratch one.
	CNIConfDir string
	// Kernel is where the node kernel's encryption support is read (the
	// zero value: the pod's /sys and /proc, the node's kernel's); tests
	// point it at a fake tree.
	Kernel nodeprobe.KernelPaths
}

// ServeProbe serves a node probe's control API until ctx is done: health
// and the node's Service datapath (PathNodeServices), nothing else. It
// starts no engine: a probe runs in the node's network namespace
// (hostNetwork) and must not take the data ports the agents use there.
func ServeProbe(ctx context.Context, cfg ProbeConfig) error {
	if err := requireToken(cfg.Control, cfg.Token); err != nil {
		return err
	}
	ln, err := listenControl(cfg.Control)
	if err != nil {
		return err
	}
	h := &handler{token: cfg.Token}
	p := &probeHandler{opts: nodeprobe.Options{Node: cfg.Node, NetNS: cfg.NetNS, BPFFS: cfg.BPFFS, CNIConfDir: cfg.CNIConfDir, Kernel: cfg.Kernel}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathHealth, h.health)
	mux.HandleFunc("GET "+PathNodeServices, p.nodeServices)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	return serveControl(ctx, cancel, ln, h.authenticate(mux), make(chan error, 1))
}

// probeHandler answers PathNodeServices with one nodeprobe.Read.
type probeHandler struct {
	opts nodeprobe.Options
	mu   sync.Mutex // one read at a time: polls queue rather than load the node
}

// nodeServices reads the datapath now; ?live=1 asks for the Services in
// use only, ?endpoints=ref,ref (nodeprobe.PortRef) and
// ?frontends=key,key (nodeprobe.Key of Cilium) for the endpoint keys of
// those Service ports too, ?cni=1 for the node's CNI config and its
// kernel's encryption support instead of the datapath. A datapath the probe cannot read
// (kube-proxy on iptables-legacy) is 501 Not Implemented, which the client
// turns back into an error wrapping errors.ErrUnsupported.
func (p *probeHandler) nodeServices(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	opts := p.opts
	opts.Query = probeQuery(r.URL.Query())
	rep, err := nodeprobe.Read(r.Context(), opts)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		http.Error(w, err.Error(), http.StatusNotImplemented)
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	default:
		writeJSON(w, http.StatusOK, rep)
	}
}

// probeQuery is the query of a node-probe request (probeValues).
func probeQuery(v url.Values) nodeprobe.Query {
	q := nodeprobe.Query{Live: v.Get("live") == "1", CNIConfig: v.Get("cni") == "1"}
	if e := v.Get("endpoints"); e != "" {
		q.EndpointsOf = strings.Split(e, ",")
	}
	if f := v.Get("frontends"); f != "" {
		q.Frontends = strings.Split(f, ",")
	}
	return q
}

// unsupportedError is an agent's 501 answer: its text, and
// errors.Is(err, errors.ErrUnsupported) holds.
type unsupportedError struct{ msg string }

func (e *unsupportedError) Error() string { return e.msg }
func (e *unsupportedError) Unwrap() error { return errors.ErrUnsupported }
