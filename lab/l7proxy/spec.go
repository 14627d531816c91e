package l7proxy

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Model is where the proxies sit.
type Model string

// The models.
const (
	PerNode Model = "per-node" // one proxy per server node (Cilium, ingress L7 policy)
	// PerNodeEgress is one proxy on the client's node: Cilium runs the
	// proxy of an egress L7 policy on the source pod's node.
	PerNodeEgress Model = "per-node-egress"
	Sidecar       Model = "sidecar" // one proxy per pod, client and servers (Istio)
)

// HeaderProxy is the response header each proxy on the path adds, with its
// name as value (one value per proxy, in path order from the server).
const HeaderProxy = "X-Cnb-L7-Proxy"

// HTTPRule allows requests matching all of its non-empty fields.
type HTTPRule struct {
	Method     string `json:"method,omitempty"`      // "GET"; "" = any method
	Path       string `json:"path,omitempty"`        // exact path, "/"
	PathPrefix string `json:"path_prefix,omitempty"` // path prefix, "/api/"
}

// BenchRules allows what cnibench's HTTP tests send (GET / on
// httpload.DefaultPort, HTTP_RPS_C64 and HTTP_RPS_SHORT_C64) and nothing
// else, so a probe to any other path is denied.
var BenchRules = []HTTPRule{{Method: "GET", Path: "/"}}

// PodRef is a pod as l7proxy needs it: where it lives and how it is wired.
type PodRef struct {
	Name      string `json:"name"`       // "node1-pod0": names the sidecar
	Node      string `json:"node"`       // "node1": names the per-node proxy
	Netns     string `json:"netns"`      // path of the pod's netns
	NodeNetns string `json:"node_netns"` // path of its node's netns
	IP        string `json:"ip"`         // pod IPv4 address
	NodeIP    string `json:"node_ip"`    // its node's IPv4 address (the per-node proxy listens there)
}

// Spec is one L7 policy deployment.
type Spec struct {
	Model   Model      `json:"model"`
	Rules   []HTTPRule `json:"rules"`   // the allow-list; everything else gets 403
	Port    int        `json:"port"`    // the servers' HTTP port (8080)
	Client  PodRef     `json:"client"`  // the pod whose requests are proxied (sidecar model)
	Servers []PodRef   `json:"servers"` // the pods whose HTTP port is proxied
	// ClientPort is the port the client connects to when it differs from
	// Port (a Service port); the client sidecar captures it. 0: Port.
	ClientPort int `json:"client_port,omitempty"`
	// Services are the Service addresses the client dials on ClientPort
	// (or Port); the egress model captures the client's connections to
	// them besides those to the server pods.
	Services []string `json:"services,omitempty"`
	// DeniedPath is what Verify probes for a 403. "": DefaultDeniedPath.
	DeniedPath string `json:"denied_path,omitempty"`
}

// DefaultDeniedPath is the path Verify expects to be denied.
const DefaultDeniedPath = "/cnb-l7-denied"

// Validate says, in one line, what is wrong with s.
func (s Spec) Validate() error {
	if s.Model != PerNode && s.Model != PerNodeEgress && s.Model != Sidecar {
		return fmt.Errorf("l7proxy: model %q: want %q, %q or %q", s.Model, PerNode, PerNodeEgress, Sidecar)
	}
	if len(s.Rules) == 0 {
		return errors.New("l7proxy: no rules: everything would be denied")
	}
	for i, r := range s.Rules {
		if err := r.validate(); err != nil {
			return fmt.Errorf("l7proxy: rule %d: %w", i, err)
		}
	}
	if s.Port <= 0 || s.Port > 65535 || s.ClientPort < 0 || s.ClientPort > 65535 {
		return fmt.Errorf("l7proxy: port %d / client port %d out of range", s.Port, s.ClientPort)
	}
	if len(s.Servers) == 0 {
		return errors.New("l7proxy: no server pods")
	}
	for _, p := range s.Servers {
		if err := p.validate(); err != nil {
			return err
		}
	}
	if err := s.Client.validate(); err != nil {
		return fmt.Errorf("client: %w", err)
	}
	for _, a := range s.Services {
		if ip, err := netip.ParseAddr(a); err != nil || !ip.Is4() {
			return fmt.Errorf("l7proxy: Service address %q is not IPv4", a)
		}
	}
	if p := s.deniedPath(); !validPath(p) || s.allows("GET", p) {
		return fmt.Errorf("l7proxy: denied path %q is not a path the rules deny", p)
	}
	return nil
}

func (r HTTPRule) validate() error {
	if r.Method != "" && strings.Trim(r.Method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		return fmt.Errorf("method %q: want an upper-case token such as GET", r.Method)
	}
	if r.Path != "" && r.PathPrefix != "" {
		return errors.New("give path or path_prefix, not both")
	}
	for _, p := range []string{r.Path, r.PathPrefix} {
		if p != "" && !validPath(p) {
			return fmt.Errorf("path %q: want /... without spaces, braces or quotes", p)
		}
	}
	return nil
}

// validPath accepts paths that go into the HAProxy config unquoted.
func validPath(p string) bool {
	return strings.HasPrefix(p, "/") && !strings.ContainsAny(p, " \t\r\n{}\"'\\#")
}

func (p PodRef) validate() error {
	for _, a := range []string{p.IP, p.NodeIP} {
		if ip, err := netip.ParseAddr(a); err != nil || !ip.Is4() {
			return fmt.Errorf("l7proxy: pod %q: address %q is not IPv4", p.Name, a)
		}
	}
	if p.Name == "" || p.Node == "" || p.Netns == "" || p.NodeNetns == "" {
		return fmt.Errorf("l7proxy: pod %+v: name, node and both netns paths are required", p)
	}
	return nil
}

// allows says whether the rules let method path through (what the proxy
// will decide), to check the denied probe really is denied.
func (s Spec) allows(method, path string) bool {
	for _, r := range s.Rules {
		if (r.Method == "" || r.Method == method) &&
			(r.Path == "" || r.Path == path) &&
			(r.PathPrefix == "" || strings.HasPrefix(path, r.PathPrefix)) {
			return true
		}
	}
	return false
}

func (s Spec) deniedPath() string {
	if s.DeniedPath != "" {
		return s.DeniedPath
	}
	return DefaultDeniedPath
}

func (s Spec) clientPort() int {
	if s.ClientPort != 0 {
		return s.ClientPort
	}
	return s.Port
}

// allowedProbe is a request the rules allow, for Verify.
func (s Spec) allowedProbe() (method, path string) {
	r := s.Rules[0]
	method, path = r.Method, r.Path
	if method == "" {
		method = "GET"
	}
	if path == "" {
		path = r.PathPrefix
	}
	if path == "" {
		path = "/"
	}
	return method, path
}
