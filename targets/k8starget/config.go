package k8starget

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"

	"github.com/cnibench/cnibench/internal/version"
	"github.com/cnibench/cnibench/suite"
)

// Defaults of a k8s run.
const (
	DefaultNamespace = "cnibench"
	DefaultImageRepo = "ghcr.io/cnibench/cnibench"
	DefaultTimeout   = 3 * time.Minute
	// ControlPort is the agents' control API port (in the pod, or on the
	// node for hostNetwork agents); the data ports are the engines' fixed
	// ports (engine.DefaultPort) and the HTTP server's 8080.
	ControlPort = 5200
	// BinaryPath is where the image puts the cnibench binary.
	BinaryPath = "/cnibench"
	// Access modes: how the CLI reaches the agents' control API.
	AccessPortForward = "port-forward" // through the API server (default: works from anywhere kubectl does)
	AccessDirect      = "direct"       // pod IP:5200 (the CLI runs in the cluster or on a node)
)

// Pod-to-Service placements: a client pod dials a ClusterIP Service whose
// only backend is on the same node (node0-pod1) or on the other node
// (node1-pod0).
const (
	PodToServiceSameNode  = suite.PodToServiceSameNode
	PodToServiceOtherNode = suite.PodToServiceOtherNode
)

// DefaultImage is the agent image of this build's version.
func DefaultImage() string { return DefaultImageRepo + ":" + version.Get().Version }

// Resources of every agent container: requests so agents are never
// BestEffort (first to be evicted, no CPU share guarantee), no CPU limit
// (CFS throttling would show up as latency), a memory limit as a fuse.
type Resources struct {
	CPURequest    string `json:"cpu_request"`
	MemoryRequest string `json:"memory_request"`
	MemoryLimit   string `json:"memory_limit"`
}

// DefaultResources are used for empty fields.
var DefaultResources = Resources{CPURequest: "500m", MemoryRequest: "64Mi", MemoryLimit: "1Gi"}

// Config of the k8s target. Zero values mean the defaults above.
type Config struct {
	Kubeconfig string `json:"kubeconfig,omitempty"` // "" = $KUBECONFIG, ~/.kube/config, in-cluster
	Context    string `json:"context,omitempty"`
	Namespace  string `json:"namespace"`
	Image      string `json:"image"`
	// PullPolicy of the agent image; IfNotPresent lets an image imported
	// on the nodes (ctr import, kind load) be used without a registry.
	PullPolicy corev1.PullPolicy `json:"pull_policy"`
	// ClientNode and ServerNode pin node0 and node1; empty ones are picked.
	ClientNode   string            `json:"client_node,omitempty"`
	ServerNode   string            `json:"server_node,omitempty"`
	NodeSelector map[string]string `json:"node_selector,omitempty"` // candidates must have these labels
	Placements   []string          `json:"placements"`
	// Pairs is how many client→server pairs of each placement measure at
	// once (run --pairs; 0 is 1): suite.PairEndpoints, a Service per
	// pod-to-service pair.
	Pairs   int           `json:"pairs,omitempty"`
	RunID   string        `json:"run_id"`
	Access  string        `json:"access"`  // AccessPortForward (default) or AccessDirect
	Timeout time.Duration `json:"timeout"` // for agents to become ready, and for cleanup
	// Force removes a previous run's objects instead of refusing to start.
	Force     bool      `json:"force,omitempty"`
	Resources Resources `json:"resources"`
	// NoPodSysctls leaves agent pods at the kernel's defaults instead of
	// DefaultPodSysctls (--pod-sysctls=false).
	NoPodSysctls bool `json:"no_pod_sysctls,omitempty"`
	// NoNodeCNIProbe never deploys node probes to read the nodes' CNI
	// config when no CNI DaemonSet is recognised (--node-cni-probe=false):
	// the CNI then stays unknown.
	NoNodeCNIProbe bool `json:"no_node_cni_probe,omitempty"`
	// Scale is set for a Service-scale sweep (scaletarget.go): node probes,
	// sync verification, the LB-map preflight.
	Scale *ScaleConfig `json:"scale,omitempty"`
	// NetworkPolicyCheck applies a NetworkPolicy between the agents and
	// verifies its enforcement with a denied probe (netpol_check.go).
	NetworkPolicyCheck bool `json:"network_policy_check,omitempty"`
	// Security makes the run the security profile's twins (security.go).
	Security *SecurityConfig `json:"security,omitempty"`
	// Dynamic reaches custom resources (the check's CiliumNetworkPolicy
	// where Cilium runs); nil: none are created.
	Dynamic  dynamic.Interface `json:"-"`
	Progress io.Writer         `json:"-"`
}

// podSysctls are the sysctls of the agent pods with their own network
// namespace.
func (c *Config) podSysctls() []corev1.Sysctl {
	if c.NoPodSysctls {
		return nil
	}
	return DefaultPodSysctls()
}

// Validate fills defaults and checks every field, with one-line errors
// naming the flag at fault.
func (c *Config) Validate() error {
	for _, check := range []func() error{c.validateImage, c.validateNodes, c.validatePlacements, c.validateAccess,
		c.Scale.validate, c.validateNetPol, c.validateSecurity, c.validatePairs, c.validateResources} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateAccess checks the run id and fills and checks how the client
// reaches the agents and how long it waits for them.
func (c *Config) validateAccess() error {
	if err := validLabelValue("run id", c.RunID); err != nil {
		return err
	}
	switch c.Access {
	case "":
		c.Access = AccessPortForward
	case AccessPortForward, AccessDirect:
	default:
		return fmt.Errorf("--access %q: want %s or %s", c.Access, AccessPortForward, AccessDirect)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Timeout < time.Second {
		return fmt.Errorf("--timeout %s: must be at least 1s", c.Timeout)
	}
	return nil
}

// validateImage fills and checks the namespace, the agent image and its
// pull policy.
func (c *Config) validateImage() error {
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if errs := validation.IsDNS1123Label(c.Namespace); len(errs) > 0 {
		return fmt.Errorf("--namespace %q: %s", c.Namespace, strings.Join(errs, "; "))
	}
	if c.Image == "" {
		c.Image = DefaultImage()
	}
	if strings.ContainsAny(c.Image, " \t\n") {
		return fmt.Errorf("--image %q: must not contain spaces", c.Image)
	}
	switch c.PullPolicy {
	case "":
		c.PullPolicy = corev1.PullIfNotPresent
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return fmt.Errorf("image pull policy %q: want Always, IfNotPresent or Never", c.PullPolicy)
	}
	return nil
}

// validateNodes checks the nodes asked for by name or selector.
func (c *Config) validateNodes() error {
	for flag, n := range map[string]string{"--client-node": c.ClientNode, "--server-node": c.ServerNode} {
		if n != "" {
			if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
				return fmt.Errorf("%s %q: not a node name: %s", flag, n, strings.Join(errs, "; "))
			}
		}
	}
	if c.ClientNode != "" && c.ClientNode == c.ServerNode {
		return fmt.Errorf("--client-node and --server-node are both %q: other-node placements need two nodes", c.ClientNode)
	}
	for k, v := range c.NodeSelector {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("--node-selector %s=%s: bad key: %s", k, v, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("--node-selector %s=%s: bad value: %s", k, v, strings.Join(errs, "; "))
		}
	}
	return nil
}

// validatePlacements checks that there are placements and that the target
// serves each.
func (c *Config) validatePlacements() error {
	if len(c.Placements) == 0 {
		return fmt.Errorf("no placement to run")
	}
	for _, p := range c.Placements {
		if _, ok := placementEndpoints[p]; !ok {
			return fmt.Errorf("placement %s is not available on the k8s target (known: %s)", p, strings.Join(KnownPlacements(), ", "))
		}
	}
	return nil
}

// validatePairs fills and checks the pair count against what a cluster run
// places per pair: the NetworkPolicy check and the security profile's
// policies allow pair 0's client alone, and a sweep measures one client.
func (c *Config) validatePairs() error {
	if c.Pairs == 0 {
		c.Pairs = 1
	}
	if c.Pairs < 1 || c.Pairs > suite.MaxPairs {
		return fmt.Errorf("--pairs must be 1 to %d, got %d", suite.MaxPairs, c.Pairs)
	}
	switch {
	case c.Pairs == 1:
	case c.Scale != nil:
		return fmt.Errorf("--pairs %d does not apply to the Service-scale sweep", c.Pairs)
	case c.NetworkPolicyCheck:
		return fmt.Errorf("--pairs %d: --network-policy-check allows pair 0's client (%s) alone; run it without --pairs", c.Pairs, netPolClient)
	case c.Security != nil:
		return fmt.Errorf("--pairs %d: the security profile's policies allow pair 0's client (%s) alone; run it without --pairs", c.Pairs, netPolClient)
	}
	return nil
}

// pairCPURequest is each agent's default CPU request with that many pairs:
// the pairs' agents of a node ask together what one pair's do, so that N
// pairs fit wherever one pair does (requests only keep the agents out of
// BestEffort; there is no CPU limit).
func pairCPURequest(pairs int) string {
	if pairs <= 1 {
		return DefaultResources.CPURequest
	}
	one := resource.MustParse(DefaultResources.CPURequest)
	return resource.NewMilliQuantity(one.MilliValue()/int64(pairs), resource.DecimalSI).String()
}

// validateResources fills and checks the agents' resource requests and
// limits.
func (c *Config) validateResources() error {
	r := &c.Resources
	for _, f := range []struct {
		v   *string
		def string
		sel string
	}{{&r.CPURequest, pairCPURequest(c.Pairs), "cpu request"}, {&r.MemoryRequest, DefaultResources.MemoryRequest, "memory request"}, {&r.MemoryLimit, DefaultResources.MemoryLimit, "memory limit"}} {
		if *f.v == "" {
			*f.v = f.def
		}
		if _, err := resource.ParseQuantity(*f.v); err != nil {
			return fmt.Errorf("agent %s %q: %v", f.sel, *f.v, err)
		}
	}
	return nil
}

// endpointSpec is one agent: where it runs and on which network.
type endpointSpec struct {
	Name string // lab-style name: node0-pod0, node1 (host network)
	Node int    // 0: the client node, 1: the server node
	Host bool   // hostNetwork
}

// endpointSpecs are every agent the k8s target can run with that many
// pairs (suite.PairEndpoints), in creation order: node0's 2N pods,
// node1's N pods, then the two hosts. One pair's are node0-pod0,
// node0-pod1, node1-pod0, node0, node1.
func endpointSpecs(pairs int) []endpointSpec {
	pairs = max(1, pairs)
	var out []endpointSpec
	for i := range 2 * pairs {
		out = append(out, endpointSpec{Name: fmt.Sprintf("node0-pod%d", i)})
	}
	for i := range pairs {
		out = append(out, endpointSpec{Name: fmt.Sprintf("node1-pod%d", i), Node: 1})
	}
	return append(out, endpointSpec{"node0", 0, true}, endpointSpec{"node1", 1, true})
}

// lookupEndpoint reads an endpoint's name: node<0|1> (its host network) or
// node<0|1>-pod<i> with i below what suite.MaxPairs pairs take.
func lookupEndpoint(name string) (endpointSpec, bool) {
	var node, pod int
	if n, _ := fmt.Sscanf(name, "node%d-pod%d", &node, &pod); n == 2 && name == fmt.Sprintf("node%d-pod%d", node, pod) &&
		node >= 0 && node <= 1 && pod >= 0 && pod < 2*suite.MaxPairs {
		return endpointSpec{Name: name, Node: node}, true
	}
	if n, _ := fmt.Sscanf(name, "node%d", &node); n == 1 && name == fmt.Sprintf("node%d", node) && node >= 0 && node <= 1 {
		return endpointSpec{Name: name, Node: node, Host: true}, true
	}
	return endpointSpec{}, false
}

// isClientEndpoint says whether an endpoint is a client in every placement
// it serves: node0's host and node0's even pods (suite.PairClient).
func isClientEndpoint(name string) bool {
	spec, ok := lookupEndpoint(name)
	if !ok || spec.Node != 0 {
		return false
	}
	var pod int
	_, err := fmt.Sscanf(name, "node0-pod%d", &pod)
	return spec.Host || (err == nil && pod%2 == 0)
}

// pairEndpoints are pair k's (client, server) of a placement: pair 0's are
// placementEndpoints', pair k's suite.PairEndpoints (a pod-to-service pair
// dials a Service of its own in front of its server pod).
func pairEndpoints(name string, k int) ([2]string, error) {
	eps, ok := placementEndpoints[name]
	if !ok {
		return eps, fmt.Errorf("%w: placement %s is not available on the k8s target", suite.ErrUnsupported, name)
	}
	return suite.PairEndpoints(name, k, eps)
}

// placementEndpoints maps each placement onto endpoints (client, server),
// the same ones the lab uses, so both targets' results line up.
var placementEndpoints = map[string][2]string{
	suite.PodToPodSameNode:   {"node0-pod0", "node0-pod1"},
	suite.PodToPodOtherNode:  {"node0-pod0", "node1-pod0"},
	suite.HostToHostOtherNod: {"node0", "node1"},
	PodToServiceSameNode:     {"node0-pod0", "node0-pod1"},
	PodToServiceOtherNode:    {"node0-pod0", "node1-pod0"},
}

// KnownPlacements lists the placements the k8s target can host.
func KnownPlacements() []string {
	var n []string
	for p := range placementEndpoints {
		n = append(n, p)
	}
	sort.Strings(n)
	return n
}

// isServicePlacement says whether the client dials a Service VIP.
func isServicePlacement(p string) bool { return strings.HasPrefix(p, "pod-to-service/") }

// needsTwoNodes says whether a placement crosses nodes.
func needsTwoNodes(p string) bool { return strings.HasSuffix(p, "/other-node") }
