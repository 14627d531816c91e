package ebpf

import (
	"context"
	"fmt"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/bpfmap"
)

// update is what one Program writes and deletes.
type update struct {
	t        *table
	all      bool    // write every Service of t
	write    []int32 // else: indices in t.svcs of the Services to write
	delSvc   []svcKey
	delSlots []uint32
	freed    []span // slots to give back to the allocator once applied
}

// Program makes the maps hold exactly spec: every Service entry and
// endpoint slot written in batches (only the changed ones with
// Options.Incremental), then the entries of Services no longer in spec
// deleted. A Service whose endpoints change gets new slots before its
// entry is switched to them, so a connection never lands on a half-written
// Service. A spec larger than the maps is refused with a CapacityError
// (or the maps grown, with Options.AutoSize).
func (c *core) Program(ctx context.Context, spec datapath.Spec) (datapath.ProgramStats, error) {
	var st datapath.ProgramStats
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return st, errClosed
	}
	start := time.Now()
	t, err := buildTableReusing(spec, c.spare)
	c.spare = nil // its memory is t's now (or garbage after an error)
	if err != nil {
		return st, err
	}
	st.Generate = time.Since(start)
	grown := time.Now()
	if err := c.fit(ctx, t); err != nil {
		return st, err
	}
	st.Apply = time.Since(grown)

	planned := time.Now()
	u, err := c.plan(t)
	if err != nil {
		c.dirty = true // the allocator may be half-planned: lay out afresh next time
		return st, err
	}
	st.Generate += time.Since(planned)

	applied := time.Now()
	n, gen, err := c.apply(ctx, u)
	st.Apply += time.Since(applied) - gen
	st.Generate += gen
	st.Bytes = n
	if err != nil {
		c.dirty = true
		return st, fmt.Errorf("%s: program: %w", c.m.name, err)
	}
	for _, f := range u.freed {
		c.alloc.release(f.base, f.n)
	}
	c.spare, c.cur, c.dirty, c.fresh = c.cur, t, false, false
	return st, nil
}

// plan assigns slots to t's Services and lists what to write and delete.
// A Service is matched with the old one at the position the previous match
// suggests first (the common cases: an unchanged Spec, or one with
// Services inserted or removed here and there), by key otherwise.
func (c *core) plan(t *table) (*update, error) {
	u := &update{t: t, all: !c.opts.Incremental}
	old := c.cur
	if old == nil || c.dirty {
		return c.relayout(t, u, nil)
	}
	gone := func(o *service) {
		u.freed = append(u.freed, span{o.base, o.n})
		for j := range o.n {
			u.delSlots = append(u.delSlots, o.base+j)
		}
	}
	seen := make([]bool, len(old.svcs))
	shift := 0 // where the last match was found, relative to i
	for i := range t.svcs {
		s := &t.svcs[i]
		oi := -1
		if j := i + shift; j >= 0 && j < len(old.svcs) && old.svcs[j].key == s.key {
			oi = j
		} else if j, ok := old.byKey[s.key]; ok {
			oi = int(j)
			shift = oi - i
		}
		if oi >= 0 {
			o := &old.svcs[oi]
			seen[oi] = true
			if sameEnds(t, s, old, o) {
				s.base = o.base
				continue
			}
			gone(o) // endpoints changed: new slots, then free the old ones
		}
		base, ok := c.alloc.alloc(s.n)
		if !ok {
			// Fragmented, or no room for make-before-break: lay out again.
			return c.relayout(t, u, old)
		}
		s.base = base
		if !u.all {
			u.write = append(u.write, int32(i))
		}
	}
	for oi := range old.svcs {
		if !seen[oi] {
			o := &old.svcs[oi]
			u.delSvc = append(u.delSvc, o.key)
			gone(o)
		}
	}
	return u, nil
}

// relayout packs every Service of t from slot 0 and writes all of them.
// Slots of live Services may change under traffic for the duration of the
// write; it only happens when the slot space is fragmented or too full for
// make-before-break, or after a failed Program or Verify. With old == nil
// (first Program, or the maps' contents unknown) the maps are read back to
// find what to delete.
func (c *core) relayout(t *table, u *update, old *table) (*update, error) {
	c.alloc.reset(uint32(c.size.BackendMap))
	u.all, u.write, u.delSvc, u.delSlots, u.freed = true, nil, nil, nil, nil
	for i := range t.svcs {
		s := &t.svcs[i]
		base, ok := c.alloc.alloc(s.n)
		if !ok {
			return nil, &CapacityError{c.m.name, "backend map", c.size.BackendMap, len(t.ends), "spec", hintLB}
		}
		s.base = base
	}
	end := uint32(len(t.ends))
	if old != nil {
		for i := range old.svcs {
			o := &old.svcs[i]
			if t.lookup(o.key) == nil {
				u.delSvc = append(u.delSvc, o.key)
			}
			for j := range o.n {
				if slot := o.base + j; slot >= end {
					u.delSlots = append(u.delSlots, slot)
				}
			}
		}
		return u, nil
	}
	if c.fresh && !c.dirty {
		return u, nil
	}
	svcs, err := bpfmap.Dump[svcKey, svcVal](c.objs.svc, 0)
	if err != nil {
		return nil, err
	}
	for k := range svcs {
		if t.lookup(k) == nil {
			u.delSvc = append(u.delSvc, k)
		}
	}
	bes, err := bpfmap.Dump[uint32, backendVal](c.objs.be, 0)
	if err != nil {
		return nil, err
	}
	for slot := range bes {
		if slot >= end {
			u.delSlots = append(u.delSlots, slot)
		}
	}
	return u, nil
}

// apply writes u into the current maps; it returns the bytes sent and the
// part of its time spent building the batches (ours, not the kernel's).
func (c *core) apply(ctx context.Context, u *update) (int, time.Duration, error) {
	n, gen, err := c.writeEntries(ctx, c.objs, u.t, u.write, u.all)
	if err != nil {
		return n, gen, err
	}
	if err := bpfmap.DeleteAll(ctx, c.objs.svc, u.delSvc); err != nil {
		return n, gen, err
	}
	if err := bpfmap.DeleteAll(ctx, c.objs.be, u.delSlots); err != nil {
		return n, gen, err
	}
	return n + len(u.delSvc)*svcKeySize + len(u.delSlots)*4, gen, nil
}

// Entry sizes in bytes (bpf/lb.h).
const (
	svcKeySize = 8
	svcValSize = 12
	beValSize  = 8
)

// writeEntries writes the endpoint slots, then the Service entries, of
// t's Services (all, or those at the indices idx) into objs' maps: slots
// first, so a Service never points at slots not yet written. It returns
// the bytes sent and the time spent building the batches.
func (c *core) writeEntries(ctx context.Context, objs *objects, t *table, idx []int32, all bool) (int, time.Duration, error) {
	built := time.Now()
	nsvc, nends := len(idx), 0
	if all {
		nsvc, nends = len(t.svcs), len(t.ends)
	} else {
		for _, i := range idx {
			nends += int(t.svcs[i].n)
		}
	}
	var slots []uint32
	var bes []backendVal
	copyEnds := !all || !packed(t)
	if !copyEnds {
		// Slots are the Spec's endpoint order: send t.ends as it is.
		slots, bes = c.iota(len(t.ends)), t.ends
	} else {
		slots = make([]uint32, 0, nends)
		bes = make([]backendVal, 0, nends)
	}
	if cap(c.keyBuf) < nsvc {
		c.keyBuf, c.valBuf = make([]svcKey, 0, nsvc), make([]svcVal, 0, nsvc)
	}
	keys, vals := c.keyBuf[:0], c.valBuf[:0]
	add := func(s *service) {
		if copyEnds {
			for j := range s.n {
				slots = append(slots, s.base+j)
			}
			bes = append(bes, t.endsOf(s)...)
		}
		keys = append(keys, s.key)
		vals = append(vals, s.val())
	}
	if all {
		for i := range t.svcs {
			add(&t.svcs[i])
		}
	} else {
		for _, i := range idx {
			add(&t.svcs[i])
		}
	}
	gen := time.Since(built)
	n := nends*(4+beValSize) + nsvc*(svcKeySize+svcValSize)
	if err := bpfmap.PutAll(ctx, objs.be, slots, bes); err != nil {
		return n, gen, err
	}
	if err := bpfmap.PutAll(ctx, objs.svc, keys, vals); err != nil {
		return n, gen, err
	}
	return n, gen, nil
}

// packed reports whether every Service's slots are its endpoints' positions
// in t.ends (true after a relayout, and while a Spec only grows at its end).
func packed(t *table) bool {
	for i := range t.svcs {
		if t.svcs[i].base != t.svcs[i].first {
			return false
		}
	}
	return true
}

// iota returns [0, 1, ..., n-1] (kept: it never changes).
func (c *core) iota(n int) []uint32 {
	for i := len(c.iotaBuf); i < n; i++ {
		c.iotaBuf = append(c.iotaBuf, uint32(i))
	}
	return c.iotaBuf[:n]
}

// SetPartialSyncs implements datapath.PartialSyncer: Options.Incremental
// from now on, as Cilium updates only the map entries a change touches.
func (c *core) SetPartialSyncs(on bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opts.Incremental = on
	return on
}
