package ebpf

import (
	"context"
	"errors"
	"fmt"
	"math/bits"

	"github.com/cnibench/cnibench/datapath"
)

// Capacity is the size of each map, in entries.
type Capacity struct {
	ServiceMap int `json:"service_map"` // Service ports
	BackendMap int `json:"backend_map"` // endpoint slots
	FlowMap    int `json:"flow_map"`    // conntrack (ebpf-tc) or UDP reverse-NAT (ebpf) entries
}

// CapacityError says a map is too small for what was asked. It is returned
// by Preflight and Program, never hidden behind a map that overflows.
type CapacityError struct {
	Datapath string `json:"datapath"`
	Map      string `json:"map"`   // "service map", "backend map", "conntrack map", ...
	Holds    int    `json:"holds"` // entries the map has room for
	Needs    int    `json:"needs"` // entries needed
	For      string `json:"for"`   // what needs them
	Hint     string `json:"hint"`  // how to fix it
}

func (e *CapacityError) Error() string {
	return fmt.Sprintf("%s: %s holds %d entries, %s needs %d; %s", e.Datapath, e.Map, e.Holds, e.For, e.Needs, e.Hint)
}

// Fix hints, naming the command-line flags (cnibench lab up / run).
const (
	hintLB   = "use --auto-size or a larger --bpf-map-max"
	hintFlow = "use --auto-size or a larger --bpf-ct-max"
)

// need is the capacity spec (already converted into t) requires.
func (c *core) need(t *table) Capacity {
	return Capacity{ServiceMap: len(t.svcs), BackendMap: len(t.ends), FlowMap: c.opts.ExpectedFlows * c.m.entriesPer}
}

// check returns a CapacityError for the first map smaller than need.
func (c *core) check(need Capacity, services int) error {
	switch {
	case need.ServiceMap > c.size.ServiceMap:
		return &CapacityError{c.m.name, "service map", c.size.ServiceMap, need.ServiceMap, "spec", hintLB}
	case need.BackendMap > c.size.BackendMap:
		return &CapacityError{c.m.name, "backend map", c.size.BackendMap, need.BackendMap,
			fmt.Sprintf("spec (endpoints of %d services)", services), hintLB}
	case need.FlowMap > c.size.FlowMap:
		return &CapacityError{c.m.name, c.m.flowWhat, c.size.FlowMap, need.FlowMap,
			fmt.Sprintf("%d expected flows", c.opts.ExpectedFlows), hintFlow}
	}
	return nil
}

// Preflight checks that the maps can hold spec (and Options.ExpectedFlows
// flows). With Options.AutoSize it grows the maps instead of failing.
// Call it with the largest Spec a run will program, before starting.
func (c *core) Preflight(spec datapath.Spec) error {
	t, err := buildTable(spec)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errClosed
	}
	return c.fit(context.Background(), t)
}

// fit makes sure the maps can hold t, growing them if allowed. Locked.
func (c *core) fit(ctx context.Context, t *table) error {
	need := c.need(t)
	err := c.check(need, len(t.svcs))
	if err == nil || !c.opts.AutoSize {
		return err
	}
	return c.grow(ctx, need)
}

// autoSize is the size AutoSize gives a map that must hold need entries:
// the next power of two (hash maps have that many buckets anyway), never
// less than it has.
func autoSize(have, need int) int {
	if need <= have {
		return have
	}
	n := 1 << bits.Len(uint(need-1))
	return min(max(n, need), maxMapEntries)
}

// grow replaces the maps with larger ones: the new maps are filled with
// what the old ones hold (Services, endpoints and live flows), then every
// attachment is switched to the new programs at once, then the old objects
// are freed. Locked.
func (c *core) grow(ctx context.Context, need Capacity) error {
	size := Capacity{
		ServiceMap: autoSize(c.size.ServiceMap, need.ServiceMap),
		BackendMap: autoSize(c.size.BackendMap, need.BackendMap),
		FlowMap:    autoSize(c.size.FlowMap, need.FlowMap),
	}
	if need.ServiceMap > size.ServiceMap || need.BackendMap > size.BackendMap || need.FlowMap > size.FlowMap {
		return fmt.Errorf("%s: auto-size: spec needs %+v entries, more than the %d a map may have", c.m.name, need, maxMapEntries)
	}
	next, err := c.load(size)
	if err != nil {
		return fmt.Errorf("auto-size: %w", err)
	}
	if err := c.copyInto(ctx, next); err != nil {
		next.close()
		return fmt.Errorf("%s: auto-size: %w", c.m.name, err)
	}
	if err := c.m.swap(next); err != nil {
		if rerr := c.m.swap(c.objs); rerr != nil {
			err = fmt.Errorf("%w (switching back also failed: %v)", err, rerr)
		}
		next.close()
		return fmt.Errorf("%s: auto-size: switch programs: %w", c.m.name, err)
	}
	c.objs.close()
	c.objs = next
	c.size = size
	c.alloc.size = uint32(size.BackendMap)
	return c.pinMaps(next) // on error the programs run on next anyway; only the pins are stale
}

// copyInto fills next's maps with what the current ones hold.
func (c *core) copyInto(ctx context.Context, next *objects) error {
	if c.cur != nil && !c.dirty {
		if _, _, err := c.writeEntries(ctx, next, c.cur, nil, true); err != nil {
			return err
		}
	}
	var k, v []byte
	it := c.objs.flow.Iterate()
	for it.Next(&k, &v) {
		if err := next.flow.Put(k, v); err != nil {
			return fmt.Errorf("copy %s: %w", c.m.flowMap, err)
		}
	}
	if err := it.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("copy %s: %w", c.m.flowMap, err)
	}
	return nil
}
