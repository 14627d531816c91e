// Package nodeprobe reads, on a cluster node, what the node's Service
// datapath holds: how many Services and endpoints kube-proxy (iptables or
// nftables mode) or Cilium (its LB map) has programmed, and the memory of
// the datapath's BPF maps. It runs inside a privileged hostNetwork agent
// (`cnibench agent --node-probe`), so the Service-scale sweep can verify on
// every node that a step is synced instead of sleeping and hoping.
package nodeprobe

import "time"

// Datapath kinds a probe can read.
const (
	KubeProxyIPTables = "kube-proxy-iptables" // iptables-nft tables (KUBE-SVC-* chains)
	KubeProxyNFTables = "kube-proxy-nftables" // table ip kube-proxy, service-ips map
	Cilium            = "cilium"              // pinned cilium_lb4_services_v2 map
)

// Report is what a node probe answers: one read of the node's datapath.
// Services and Endpoints count what the datapath holds for every Service on
// the node (not only cnibench's); a sweep compares them with what the API
// server holds. A datapath the probe cannot read is named in Errors, never
// guessed.
type Report struct {
	Node      string `json:"node"`
	Datapath  string `json:"datapath"` // one of the kinds above, "" when none was found
	Services  int    `json:"services"` // Service port frontends with endpoints programmed
	Endpoints int    `json:"endpoints"`
	// BPFMapBytes is the memory of the datapath's BPF maps as the kernel
	// reports it (memlock of each map), 0 when the datapath has none.
	BPFMapBytes uint64    `json:"bpf_map_bytes"`
	Maps        []MapInfo `json:"maps,omitempty"`
	// Keys name every Service port the datapath holds (see Key), so a
	// sweep can tell when each of its Services appeared on the node.
	Keys []string `json:"keys,omitempty"`
	// EndpointKeys name the endpoints the datapath holds live (see
	// EndpointKey) for the Service ports Query.EndpointsOf asks for, so
	// a churn sees an endpoint replaced (the counts stay the same): in
	// kube-proxy's iptables mode the KUBE-SEP chains its KUBE-SVC chain
	// jumps to (above 1,000 endpoints it deletes stale chains only once
	// per sync period), in its nftables mode the endpoint chains that
	// still have rules (it flushes a stale one at once and deletes it a
	// second or more later), in Cilium the active backends in the slots
	// of the frontends Query.Frontends asks for. EndpointKeysRead is false
	// where they are not read (Cilium asked without Frontends).
	EndpointKeys     []string `json:"endpoint_keys,omitempty"`
	EndpointKeysRead bool     `json:"endpoint_keys_read,omitempty"`
	// CNI is the node's CNI config, when Query.CNIConfig asked for it
	// (and nothing else was read).
	CNI *CNIConfig `json:"cni,omitempty"`
	// Kernel is the node kernel's encryption support, asked with CNI.
	Kernel   *KernelEncryption `json:"kernel,omitempty"`
	ReadTime time.Duration     `json:"read_time"` // how long the read took
	Errors   []string          `json:"errors,omitempty"`
}

// MapInfo is one BPF map of the datapath.
type MapInfo struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	MaxEntries uint32 `json:"max_entries"`
	Entries    int    `json:"entries,omitempty"` // counted where the probe iterates the map
	Memlock    uint64 `json:"memlock_bytes"`
}
