package ebpf

import (
	"context"
	"fmt"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/bpfmap"
)

// Expected is what Verify should find once spec is programmed: one service
// map entry per Service port and one backend map entry per endpoint.
func (c *core) Expected(spec datapath.Spec) datapath.Counts {
	var n datapath.Counts
	n.Services = len(spec.Services)
	for _, s := range spec.Services {
		n.Endpoints += len(s.Endpoints)
	}
	n.MapEntries = n.Services + n.Endpoints
	return n
}

// Verify reads both maps back from the kernel and compares them, entry by
// entry, with what the last Program wrote. The error names the first
// Service (in Spec order) whose entry or endpoint slot is missing or
// different, or an entry no Service asked for. The per-flow map is not
// compared: its entries are made by traffic.
//
// When Verify finds a difference the next Program rewrites everything and
// deletes whatever it finds in the maps that the Spec does not ask for.
func (c *core) Verify(ctx context.Context) (datapath.Counts, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return datapath.Counts{}, errClosed
	}
	n, err := c.verify(ctx)
	if err != nil && ctx.Err() == nil {
		c.dirty = true
	}
	return n, err
}

func (c *core) verify(ctx context.Context) (datapath.Counts, error) {
	var n datapath.Counts
	want := c.cur
	if want == nil {
		want = &table{}
	}
	svcs, err := bpfmap.Dump[svcKey, svcVal](c.objs.svc, len(want.svcs))
	if err != nil {
		return n, fmt.Errorf("%s: verify: %w", c.m.name, err)
	}
	if err := ctx.Err(); err != nil {
		return n, err
	}
	bes, err := bpfmap.Dump[uint32, backendVal](c.objs.be, len(want.ends))
	if err != nil {
		return n, fmt.Errorf("%s: verify: %w", c.m.name, err)
	}
	n.Services, n.Endpoints = len(svcs), len(bes)
	n.MapEntries = n.Services + n.Endpoints
	if c.dirty {
		return n, fmt.Errorf("%s: verify: nothing to compare with: no Program since this process took over the pinned maps, or the last Program failed midway, or an earlier Verify found a difference; Program again", c.m.name)
	}
	for i := range want.svcs {
		s := &want.svcs[i]
		got, ok := svcs[s.key]
		if !ok {
			return n, fmt.Errorf("%s: verify: %s missing from %s", c.m.name, want.label(i), mapSvc)
		}
		if got != s.val() {
			return n, fmt.Errorf("%s: verify: %s in %s is %s, want %s", c.m.name, want.label(i), mapSvc, fmtSvcVal(got), fmtSvcVal(s.val()))
		}
		for j, e := range want.endsOf(s) {
			slot := s.base + uint32(j)
			got, ok := bes[slot]
			if !ok {
				return n, fmt.Errorf("%s: verify: endpoint %d (%s) of %s missing from %s (slot %d)", c.m.name, j, e, want.label(i), mapBe, slot)
			}
			if got != e {
				return n, fmt.Errorf("%s: verify: endpoint %d of %s in %s (slot %d) is %s, want %s", c.m.name, j, want.label(i), mapBe, slot, got, e)
			}
		}
	}
	if len(svcs) != len(want.svcs) {
		for k := range svcs {
			if want.lookup(k) == nil {
				return n, fmt.Errorf("%s: verify: %s holds %d entries, want %d (one no Service asked for: %s)", c.m.name, mapSvc, len(svcs), len(want.svcs), k)
			}
		}
	}
	if len(bes) != len(want.ends) {
		return n, fmt.Errorf("%s: verify: %s holds %d entries, want %d (slots no Service uses)", c.m.name, mapBe, len(bes), len(want.ends))
	}
	return n, nil
}

func fmtSvcVal(v svcVal) string {
	return fmt.Sprintf("{base %d, count %d, rev %#x}", v.Base, v.Count, v.Rev)
}

// Memory reports the memory the kernel charges for our maps (the memlock
// of each map in fdinfo, which on 6.4+ kernels follows the entries of a
// non-preallocated map; the LRU flow map is preallocated, so it costs its
// full size from the start). Programs are not counted.
func (c *core) Memory(ctx context.Context) (datapath.Memory, error) {
	per, err := c.MapMemory()
	var m datapath.Memory
	for _, b := range per {
		m.BPFMapBytes += b
	}
	return m, err
}

// MapMemory returns the memlock bytes of each map, by map name.
func (c *core) MapMemory() (map[string]int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed
	}
	out := map[string]int64{}
	for name, mp := range c.objs.coll.Maps {
		info, err := mp.Info()
		if err != nil {
			return out, fmt.Errorf("%s: memory of %s: %w", c.m.name, name, err)
		}
		if b, ok := info.Memlock(); ok {
			out[name] = int64(b)
		}
	}
	return out, nil
}

// FlowEntries returns the entries in the per-flow map: conntrack entries
// (two per flow) for ebpf-tc, UDP reverse-NAT entries for ebpf.
func (c *core) FlowEntries(ctx context.Context) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, errClosed
	}
	return c.m.countFlows(c.objs.flow)
}
