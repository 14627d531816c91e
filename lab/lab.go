package lab

import (
	"errors"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// Addressing and naming constants of the lab topology.
const (
	LabRange      = "198.18.0.0/15" // everything routable in a lab
	GatewayIP     = "169.254.1.1"   // pods' next hop, answered by proxy ARP
	UnderlayBr    = "cnbbr0"        // bridge in the underlay namespace
	MTU           = 1500            // underlay MTU, and pod MTU with native routing
	RoutingNative = "native"        // Config.Routing: plain routing over the underlay
	RoutingVXLAN  = "vxlan"         // Config.Routing: VXLAN overlay between nodes
	VXLANDev      = "cnb_vxlan"
	VXLANVNI      = 1
	VXLANPort     = 8472
	VXLANOverhead = 50 // outer IPv4 (20) + UDP (8) + VXLAN (8) + inner Ethernet (14)
	VXLANMTU      = MTU - VXLANOverhead
	// EncryptionWireGuard is Config.Encryption's WireGuard.
	EncryptionWireGuard = "wireguard"

	stateFile     = "state.json"
	creatingFile  = "creating"
	killTimeout   = 3 * time.Second
	rmdirTimeout  = 3 * time.Second
	unsupportedSC = "unsupported"
)

// ErrNotFound is wrapped by Load when a lab has no state file.
var ErrNotFound = errors.New("lab not found")

// Lab is a created lab, as saved in <StateDir>/<name>/state.json.
type Lab struct {
	Config     Config            `json:"config"`
	Prefix     string            `json:"prefix"`   // "cnb-<name>-"
	Underlay   string            `json:"underlay"` // netns name of the underlay bridge namespace
	Nodes      []Node            `json:"nodes"`
	Routing    string            `json:"routing"`     // "native" | "vxlan"
	MTU        int               `json:"mtu"`         // pod MTU: 1500 native, 1450 vxlan
	CgroupRoot string            `json:"cgroup_root"` // cgroup v2 dir of this lab, "" if cgroup v2 unavailable
	Sysctls    map[string]string `json:"sysctls"`     // applied value, or "unsupported"
	Created    time.Time         `json:"created"`
}

// Node is one node namespace.
type Node struct {
	Name    string `json:"name"`               // "node0"
	Netns   string `json:"netns"`              // "cnb-<lab>-node0"
	IP      string `json:"ip"`                 // "198.18.0.10"
	PodCIDR string `json:"pod_cidr"`           // "198.19.0.0/24"
	Cgroup  string `json:"cgroup"`             // cgroup v2 dir, "" without cgroup v2
	VTEP    string `json:"vtep,omitempty"`     // vxlan: address of cnb_vxlan, "198.19.0.0"
	VTEPMAC string `json:"vtep_mac,omitempty"` // vxlan: MAC of cnb_vxlan, "02:cb:00:00:00:00"
	// WireGuard is the node's WireGuard device under Config.Encryption.
	WireGuard *NodeWireGuard `json:"wireguard,omitempty"`
	Pods      []Pod          `json:"pods"`
}

// NodeWireGuard is a node's WireGuard device and daemon.
type NodeWireGuard struct {
	Addr      string `json:"addr"`       // the device's address, "198.18.192.10"
	PublicKey string `json:"public_key"` // hex
	Cgroup    string `json:"cgroup"`     // the daemon's cgroup v2 dir, "" without cgroup v2
	PID       int    `json:"pid"`        // the daemon
}

// Pod is one pod namespace.
type Pod struct {
	Name   string `json:"name"`   // "node0-pod1"
	Node   string `json:"node"`   // "node0"
	Netns  string `json:"netns"`  // "cnb-<lab>-node0-pod1"
	IP     string `json:"ip"`     // "198.19.0.11"
	Cgroup string `json:"cgroup"` // cgroup v2 dir, "" without cgroup v2
}

// Endpoint is a node or a pod, where commands can be started.
type Endpoint struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"` // "node" | "pod"
	Node   string `json:"node"`
	Netns  string `json:"netns"`
	IP     string `json:"ip"`
	Cgroup string `json:"cgroup"`
}

// NetnsPath is the bind-mount path of the endpoint's namespace.
func (e Endpoint) NetnsPath() string { return netnsx.Path(e.Netns) }
