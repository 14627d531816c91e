package ebpf

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/bpfmap"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab/policy"
)

// Name is the enforcer's registered name.
const Name = "ebpf"

// Map sizes. The ipcache holds every scale peer (policy.MaxScalePeers)
// and the pods; the policy map 10,000 rules on each of 100 pods; entries
// are not preallocated, so memory follows what is written. Program
// refuses a Spec larger than a map with a CapacityError.
const (
	IPCacheMax  = 1 << 16
	EndpointMax = 1 << 12
	PolicyMax   = 1 << 20
	CTMax       = 1 << 16 // LRU: the oldest flows are recycled first
)

// CapacityError says a Spec needs more entries than a map holds.
type CapacityError struct {
	Node  string
	Map   string
	Holds int
	Needs int
}

func (e *CapacityError) Error() string {
	return fmt.Sprintf("ebpf policy on %s: the %s holds %d entries, the spec needs %d", e.Node, e.Map, e.Holds, e.Needs)
}

// Enforcer is the eBPF policy of one node: maps and programs loaded once,
// the programs attached to the host veth of every pod the Spec selects.
type Enforcer struct {
	mu     sync.Mutex
	site   policy.Site
	h      *netlink.Handle // netlink socket inside the node namespace
	coll   *cebpf.Collection
	spare  *cebpf.Collection // a second copy of the programs on the same maps (fixOrder)
	maps   maps
	ids    identities
	cur    *state           // what the last Program wrote (nil: nothing)
	hooks  map[string]*pair // by host interface
	how    string           // attachTCX or attachNetlink, once a hook is attached
	closed bool
}

// maps are the collection's maps, by role.
type maps struct{ ipc, ep, pol, ct, cnt *cebpf.Map }

var _ policy.Enforcer = (*Enforcer)(nil)

// Open loads the programs and empty maps for site's node; nothing is
// attached until Program selects a pod. It needs root (CAP_BPF,
// CAP_NET_ADMIN) and returns a kfeature.Unsupported error (wrapping
// ErrUnsupported) when the kernel lacks a map or program type it needs.
func Open(site policy.Site) (*Enforcer, error) {
	if site.Netns == "" || site.Node == "" {
		return nil, errors.New("ebpf policy: site needs a node name and its namespace")
	}
	if err := probe(); err != nil {
		return nil, err
	}
	spec, err := loadPolicy()
	if err != nil {
		return nil, err
	}
	for name, n := range map[string]uint32{mapIPCache: IPCacheMax, mapEndpoint: EndpointMax, mapPolicy: PolicyMax, mapCT: CTMax} {
		spec.Maps[name].MaxEntries = n
	}
	coll, err := cebpf.NewCollection(spec)
	if err != nil {
		return nil, loadError(err)
	}
	// The spare copy lets fixOrder attach before it detaches: tcx refuses
	// the same program twice on one hook.
	spare, err := cebpf.NewCollectionWithOptions(spec, cebpf.CollectionOptions{MapReplacements: coll.Maps})
	if err != nil {
		coll.Close()
		return nil, loadError(err)
	}
	h, err := netnsx.NewHandle(site.Netns)
	if err != nil {
		coll.Close()
		spare.Close()
		return nil, fmt.Errorf("ebpf policy: %w", err)
	}
	return &Enforcer{site: site, h: h, coll: coll, spare: spare, hooks: map[string]*pair{},
		maps: maps{ipc: coll.Maps[mapIPCache], ep: coll.Maps[mapEndpoint], pol: coll.Maps[mapPolicy], ct: coll.Maps[mapCT], cnt: coll.Maps[mapCounters]}}, nil
}

// loadError words a failed load: the verifier's full log, or unsupported.
func loadError(err error) error {
	var ve *cebpf.VerifierError
	if errors.As(err, &ve) && len(ve.Log) > 0 {
		return fmt.Errorf("ebpf policy: load programs: %+v", ve)
	}
	return loadUnsupported("ebpf policy programs and maps", err)
}

// probe checks the kernel features the enforcer needs.
func probe() error {
	if err := features.HaveProgramType(cebpf.SchedCLS); err != nil {
		return unsupported("tc (sched_cls) BPF programs", err)
	}
	for _, mt := range []cebpf.MapType{cebpf.LPMTrie, cebpf.LRUHash, cebpf.PerCPUArray} {
		if err := features.HaveMapType(mt); err != nil {
			return unsupported(fmt.Sprintf("BPF %s maps", mt), err)
		}
	}
	return nil
}

// Name is "ebpf".
func (e *Enforcer) Name() string { return Name }

// errClosed is returned by every method after Close.
var errClosed = errors.New("ebpf policy: enforcer is closed")

// Program makes the maps hold exactly spec.OnNode(node): the entries that
// differ from what the kernel holds (read back first) are written in
// batches, policy before ipcache before endpoints, so a pod is selected
// only once its rules are in place; then stale entries are deleted, in
// the reverse order. Hooks are attached to newly selected pods before
// their endpoint entry appears and detached from pods no longer selected.
// Flows already in conntrack keep passing: a change applies to new flows.
func (e *Enforcer) Program(ctx context.Context, spec policy.Spec) (datapath.ProgramStats, error) {
	var st datapath.ProgramStats
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return st, errClosed
	}
	start := time.Now()
	if err := spec.Validate(); err != nil {
		return st, err
	}
	pods := spec.OnNode(e.site.Node).Pods
	ifaces, idx, err := e.resolve(pods)
	if err != nil {
		return st, err
	}
	want, err := build(pods, ifaces, idx, &e.ids)
	if err != nil {
		return st, err
	}
	if err := e.fits(want); err != nil {
		return st, err
	}
	st.Generate = time.Since(start)
	applied := time.Now()
	n, err := e.apply(ctx, want)
	st.Apply, st.Bytes = time.Since(applied), n
	if err != nil {
		e.cur = nil // unknown: Verify fails until a Program succeeds
		return st, fmt.Errorf("ebpf policy on %s: %w", e.site.Node, err)
	}
	e.cur = want
	return st, nil
}

// resolve finds each pod's host veth in the node namespace.
func (e *Enforcer) resolve(pods []policy.PodPolicy) ([]string, []uint32, error) {
	ifaces, idx := make([]string, len(pods)), make([]uint32, len(pods))
	for i, p := range pods {
		l, err := e.h.LinkByName(p.HostIface)
		if err != nil {
			return nil, nil, fmt.Errorf("ebpf policy: pod %s: interface %s in %s: %w", p.Pod, p.HostIface, e.site.Netns, err)
		}
		ifaces[i], idx[i] = p.HostIface, uint32(l.Attrs().Index)
	}
	return ifaces, idx, nil
}

// fits returns a CapacityError for the first map want does not fit in.
func (e *Enforcer) fits(want *state) error {
	for _, c := range []struct {
		m     string
		holds int
		needs int
	}{{"ipcache", IPCacheMax, len(want.ipc)}, {"endpoint map", EndpointMax, len(want.eps)}, {"policy map", PolicyMax, len(want.pol)}} {
		if c.needs > c.holds {
			return &CapacityError{Node: e.site.Node, Map: c.m, Holds: c.holds, Needs: c.needs}
		}
	}
	return nil
}

// apply moves the kernel from what it holds to want; it returns the bytes
// of keys and values sent.
func (e *Enforcer) apply(ctx context.Context, want *state) (int, error) {
	ipc, err := bpfmap.Dump[ipcKey, uint32](e.maps.ipc, len(want.ipc))
	if err != nil {
		return 0, err
	}
	eps, err := bpfmap.Dump[uint32, epVal](e.maps.ep, len(want.eps))
	if err != nil {
		return 0, err
	}
	pol, err := bpfmap.Dump[polKey, polVal](e.maps.pol, len(want.pol))
	if err != nil {
		return 0, err
	}
	for _, p := range want.pods {
		if err := e.attach(p.iface, int(p.ifindex)); err != nil {
			return 0, err
		}
	}
	polK, polV, polDel := diff(pol, want.pol)
	ipcK, ipcV, ipcDel := diff(ipc, want.ipc)
	epK, epV, epDel := diff(eps, want.eps)
	n := len(polK)*16 + len(ipcK)*12 + len(epK)*12 + len(polDel)*12 + len(ipcDel)*8 + len(epDel)*4
	for _, w := range []func() error{
		func() error { return bpfmap.PutAll(ctx, e.maps.pol, polK, polV) },
		func() error { return bpfmap.PutAll(ctx, e.maps.ipc, ipcK, ipcV) },
		func() error { return bpfmap.PutAll(ctx, e.maps.ep, epK, epV) },
		func() error { return bpfmap.DeleteAll(ctx, e.maps.ep, epDel) },
		func() error { return bpfmap.DeleteAll(ctx, e.maps.ipc, ipcDel) },
		func() error { return bpfmap.DeleteAll(ctx, e.maps.pol, polDel) },
	} {
		if err := w(); err != nil {
			return n, err
		}
	}
	keep := map[string]bool{}
	for _, p := range want.pods {
		keep[p.iface] = true
	}
	for iface := range e.hooks {
		if !keep[iface] {
			if err := e.detach(iface); err != nil {
				return n, err
			}
		}
	}
	return n, e.fixOrder()
}

// diff lists the entries of want that differ from have or are missing (to
// write) and the keys of have not in want (to delete).
func diff[K comparable, V comparable](have, want map[K]V) (keys []K, vals []V, del []K) {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			keys, vals = append(keys, k), append(vals, v)
		}
	}
	for k := range have {
		if _, ok := want[k]; !ok {
			del = append(del, k)
		}
	}
	return keys, vals, del
}

// Expected is what Verify finds once spec is programmed: a pod for each
// pod of this node, every rule with all its peers, and the map entries
// (ipcache, endpoint and policy entries).
func (e *Enforcer) Expected(spec policy.Spec) policy.Counts {
	pods := spec.OnNode(e.site.Node).Pods
	ifaces, idx := make([]string, len(pods)), make([]uint32, len(pods))
	for i, p := range pods {
		ifaces[i], idx[i] = p.HostIface, uint32(i+1) // the counts do not depend on the ifindex
	}
	s, err := build(pods, ifaces, idx, &identities{})
	if err != nil {
		return policy.Counts{}
	}
	return s.counts()
}

// Drops is the packets dropped by policy on this node since Open, the sum
// over CPUs of the drop counter in cnb_pol_cnt.
func (e *Enforcer) Drops(ctx context.Context) (uint64, error) { return e.counter(cntDrop) }

// Allowed is the new flows evaluated and allowed since Open.
func (e *Enforcer) Allowed(ctx context.Context) (uint64, error) { return e.counter(cntAllow) }

func (e *Enforcer) counter(slot uint32) (uint64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return 0, errClosed
	}
	var per []uint64
	if err := e.maps.cnt.Lookup(slot, &per); err != nil {
		return 0, fmt.Errorf("ebpf policy: read %s: %w", mapCounters, err)
	}
	var n uint64
	for _, c := range per {
		n += c
	}
	return n, nil
}

// Close detaches every program, removes the clsact qdiscs it added and
// frees the maps. Idempotent.
func (e *Enforcer) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	var errs []error
	for iface := range e.hooks {
		errs = append(errs, e.detach(iface))
	}
	e.coll.Close()
	e.spare.Close()
	e.h.Close()
	e.cur = nil
	return errors.Join(errs...)
}
