// Package datapath programs ClusterIP Services into a lab node the way a
// Kubernetes Service proxy would: kube-proxy's iptables and nftables
// layouts, or an eBPF load balancer as Cilium's. A Spec (the Services
// wanted) is kept apart from the live kernel objects: Program turns a Spec
// into kernel state in one batch, Verify reads the kernel back and counts
// what is really there, so a benchmark never measures before the datapath
// is in sync and never sleeps hoping it is.
package datapath

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// ErrUnsupported is wrapped by datapaths when the kernel or a tool lacks a
// feature they need; tests skip on it.
var ErrUnsupported = errors.ErrUnsupported

// Protocol of a Service port.
type Protocol string

const (
	TCP Protocol = "TCP"
	UDP Protocol = "UDP"
)

// Endpoint is one backend of a Service.
type Endpoint struct {
	IP   netip.Addr `json:"ip"`
	Port uint16     `json:"port"`
}

// Service is one ClusterIP Service port with its endpoints, as kube-proxy
// sees it after merging the Service and its EndpointSlices.
type Service struct {
	Namespace string     `json:"namespace"` // e.g. "default"
	Name      string     `json:"name"`      // e.g. "svc-17"
	PortName  string     `json:"port_name"` // e.g. "http"; may be empty
	VIP       netip.Addr `json:"vip"`
	Port      uint16     `json:"port"`
	Protocol  Protocol   `json:"protocol"`
	Endpoints []Endpoint `json:"endpoints"`
}

// ServicePortName is kube-proxy's ServicePortName, "namespace/name" with
// ":portname" when the port is named: what its chain names are hashed from
// and how its errors name a Service port.
func (s Service) ServicePortName() string {
	n := s.Namespace + "/" + s.Name
	if s.PortName != "" {
		n += ":" + s.PortName
	}
	return n
}

// Key is "namespace/name:port/proto", unique per Service port.
func (s Service) Key() string {
	return fmt.Sprintf("%s/%s:%d/%s", s.Namespace, s.Name, s.Port, strings.ToLower(string(s.Protocol)))
}

// Spec is the whole desired state of one node's Service datapath.
type Spec struct {
	Services []Service `json:"services"`
}

// Counts is what Verify read back from the kernel (or what a Spec should
// produce, from Expected). Fields a datapath does not use stay zero.
type Counts struct {
	Services   int `json:"services"`              // Service ports present
	Endpoints  int `json:"endpoints"`             // endpoint entries present
	Rules      int `json:"rules,omitempty"`       // iptables rules / nft rules
	Chains     int `json:"chains,omitempty"`      // iptables or nft chains of ours
	Elements   int `json:"elements,omitempty"`    // nft set/map elements
	MapEntries int `json:"map_entries,omitempty"` // BPF map entries
}

// Holds is nil when c, as Verify read it, has the Service ports and
// endpoints of want (from Expected), else an error saying what differs:
// the check every caller makes before measuring.
func (c Counts) Holds(want Counts) error {
	if c.Services != want.Services || c.Endpoints != want.Endpoints {
		return fmt.Errorf("kernel holds %d Services / %d endpoints, want %d / %d",
			c.Services, c.Endpoints, want.Services, want.Endpoints)
	}
	return nil
}

// Judge is how a Verify ends once the kernel is read back: missing is
// the first piece of the last Program's spec not found (nil: none), else
// the counts read (got) must equal want, spelt by format. The error is
// prefixed with the datapath's name.
func Judge(name string, missing error, got, want Counts, format func(Counts) string) error {
	if missing != nil {
		return fmt.Errorf("%s: %w", name, missing)
	}
	if got != want {
		return fmt.Errorf("%s: kernel holds %s, want %s", name, format(got), format(want))
	}
	return nil
}

// Memory is what the datapath's state costs, as the kernel reports it.
type Memory struct {
	// BPFMapBytes: sum of the memlock of our BPF maps (fdinfo).
	BPFMapBytes int64 `json:"bpf_map_bytes,omitempty"`
	// RulesetBytes: size of the ruleset as dumped (iptables-save / nft list).
	RulesetBytes int64 `json:"ruleset_bytes,omitempty"`
}

// ProgramStats describes one Program call.
type ProgramStats struct {
	Generate time.Duration `json:"generate"`        // building the batch in Go (our own cost)
	Apply    time.Duration `json:"apply"`           // kernel / restore tool time
	Bytes    int           `json:"bytes,omitempty"` // size of the batch sent (rules text, netlink bytes)
}

// Datapath is one live Service datapath in one network namespace.
//
// Implementations run their kernel calls inside the namespace given at
// construction (a path like /run/netns/cnb-x-node0, or a cgroup for
// socket-level eBPF), never in the caller's namespace.
type Datapath interface {
	// Name is the datapath's name as used on the command line, e.g.
	// "iptables", "nftables-flat", "ebpf".
	Name() string
	// Program makes the kernel hold exactly spec (a full sync, in as few
	// batches as the mechanism allows, as kube-proxy does on a full resync).
	Program(ctx context.Context, spec Spec) (ProgramStats, error)
	// Verify reads the kernel back and returns what is there; it returns an
	// error naming the first missing piece when the kernel does not hold
	// what the last Program asked for.
	Verify(ctx context.Context) (Counts, error)
	// Expected is what Verify should find for spec.
	Expected(spec Spec) Counts
	// Memory reports the datapath's current memory use.
	Memory(ctx context.Context) (Memory, error)
	// Close removes everything the datapath created (idempotent).
	Close() error
}

// PartialSyncer is implemented by datapaths whose Program can write only
// what changed since the last Program, as kube-proxy's partial syncs
// (iptables' MinimizeIPTablesRestore; nftables always) and Cilium's
// per-change map updates do. The churn schedule turns it on; the
// Service-scale sweep leaves it off, so a step times a full sync.
//
// SetPartialSyncs returns whether Program now syncs partially: a datapath
// that always does (kube-proxy's nftables layout) says so whatever on is,
// one that never does returns false.
type PartialSyncer interface {
	SetPartialSyncs(on bool) bool
}

// Async is implemented by datapaths whose Program hands the spec to
// someone else and returns before the nodes hold it (a cluster's API
// server, its kube-proxies and agents). Await, called right after a
// Program, returns a wait for what that Program changed alone: it blocks
// until every node holds it and returns when the last node was seen to,
// so a churn writes each change as it comes and times each by its own
// Program while earlier ones are still being synced. Every lab datapath's
// Program returns once every node's kernel committed the spec.
type Async interface {
	Await() func(context.Context) (time.Time, error)
}
