package ebpf

import (
	"context"
	"fmt"

	"github.com/cnibench/cnibench/internal/bpfmap"
	"github.com/cnibench/cnibench/lab/policy"
)

// Verify reads the ipcache, endpoint and policy maps back and the hooks
// of every selected pod, and compares them with what the last Program
// wrote. Counts are what the kernel holds: a pod counts when its endpoint
// entry is right and both programs are attached (in place), a rule when
// every policy entry it needs and its peers' ipcache entries are there,
// and a peer when its ipcache entry is. The error names the first
// difference (in Spec order), or an entry no rule asked for.
func (e *Enforcer) Verify(ctx context.Context) (policy.Counts, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var n policy.Counts
	if e.closed {
		return n, errClosed
	}
	want := e.cur
	if want == nil {
		want = &state{}
	}
	ipc, err := bpfmap.Dump[ipcKey, uint32](e.maps.ipc, len(want.ipc))
	if err != nil {
		return n, fmt.Errorf("ebpf policy: verify: %w", err)
	}
	eps, err := bpfmap.Dump[uint32, epVal](e.maps.ep, len(want.eps))
	if err != nil {
		return n, fmt.Errorf("ebpf policy: verify: %w", err)
	}
	pol, err := bpfmap.Dump[polKey, polVal](e.maps.pol, len(want.pol))
	if err != nil {
		return n, fmt.Errorf("ebpf policy: verify: %w", err)
	}
	n.MapEntries = len(ipc) + len(eps) + len(pol)
	var first error
	note := func(format string, a ...any) {
		if first == nil {
			first = fmt.Errorf("ebpf policy on %s: verify: "+format, append([]any{e.site.Node}, a...)...)
		}
	}
	if e.cur == nil {
		note("no successful Program to compare with")
	}
	for _, p := range want.pods {
		if got, ok := eps[p.ifindex]; !ok || got != want.eps[p.ifindex] {
			note("pod %s: endpoint entry for %s (ifindex %d) is %+v (present: %v), want %+v", p.name, p.iface, p.ifindex, got, ok, want.eps[p.ifindex])
			continue
		}
		if err := e.hooksOK(p.iface); err != nil {
			note("pod %s: %v", p.name, err)
			continue
		}
		n.Pods++
	}
	for _, r := range want.rules {
		ok := true
		for _, k := range r.keys {
			if got, present := pol[k]; !present || got != want.pol[k] {
				note("%s: policy entry %s is %+v (present: %v), want %+v", r.String(want), k, got, present, want.pol[k])
				ok = false
				break
			}
		}
		for _, p := range r.peers {
			k := ipcKeyOf(p)
			if got, present := ipc[k]; !present || got != want.ipc[k] {
				note("%s: ipcache entry of peer %s is identity %d (present: %v), want %d", r.String(want), p, got, present, want.ipc[k])
				ok = false
				continue
			}
			n.Peers++
		}
		if ok {
			n.Rules++
		}
	}
	extra(note, "ipcache", ipc, want.ipc)
	extra(note, "endpoint map", eps, want.eps)
	extra(note, "policy map", pol, want.pol)
	return n, first
}

// extra notes an entry of have that want does not have.
func extra[K comparable, V any](note func(string, ...any), name string, have map[K]V, want map[K]V) {
	if len(have) <= len(want) {
		return
	}
	for k := range have {
		if _, ok := want[k]; !ok {
			note("%s holds %d entries, want %d (one no rule asked for: %v)", name, len(have), len(want), k)
			return
		}
	}
}

// hooksOK says whether both programs are on iface, in their places.
func (e *Enforcer) hooksOK(iface string) error {
	p := e.hooks[iface]
	if p == nil || p[0] == nil || p[1] == nil {
		return fmt.Errorf("no programs attached to %s", iface)
	}
	for _, h := range p {
		present, inPlace, err := e.placed(h)
		switch {
		case err != nil:
			return err
		case !present:
			return fmt.Errorf("%s is not attached", h)
		case !inPlace:
			return fmt.Errorf("%s is not in its place (last from the pod, first to the pod): Program again", h)
		}
	}
	return nil
}
