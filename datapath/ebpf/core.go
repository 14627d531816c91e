package ebpf

import (
	"errors"
	"fmt"
	"sync"

	cebpf "github.com/cilium/ebpf"
)

// Map names, as in bpf/*.c.
const (
	mapSvc = "cnb_lb4_svc"
	mapBe  = "cnb_lb4_be"
	mapRsk = "cnb_lb4_rsk" // ebpf: UDP reverse translation
	mapCT  = "cnb_ct4"     // ebpf-tc: conntrack
)

// objects is one loaded collection and its maps.
type objects struct {
	coll *cebpf.Collection
	svc  *cebpf.Map
	be   *cebpf.Map
	flow *cebpf.Map
}

func (o *objects) close() {
	if o != nil && o.coll != nil {
		o.coll.Close()
	}
}

// program returns the loaded program called name.
func (o *objects) program(name string) (*cebpf.Program, error) {
	p := o.coll.Programs[name]
	if p == nil {
		return nil, fmt.Errorf("ebpf: object has no program %s", name)
	}
	return p, nil
}

// mode is what differs between ebpf and ebpf-tc.
type mode struct {
	name         string                                // NameSocket or NameTC
	spec         func() (*cebpf.CollectionSpec, error) // bpf2go's loadSock / loadTc
	flowMap      string                                // mapRsk or mapCT
	flowWhat     string                                // "UDP reverse-NAT map", "conntrack map"
	entriesPer   int                                   // flow map entries per flow
	defaultFlows int                                   // flow map size when Options.FlowMapMax is 0
	countFlows   func(*cebpf.Map) (int, error)
	swap         func(next *objects) error // point every attachment at next's programs
	detach       func(unpin bool) error    // remove every attachment (unpin: also pinned ones)
}

// core is the state both datapaths share: the loaded maps and programs,
// what the last Program wrote, and the slot allocator.
type core struct {
	mu     sync.Mutex
	m      mode
	opts   Options
	size   Capacity // current map sizes
	objs   *objects
	cur    *table // what the maps hold (nil before the first Program)
	dirty  bool   // a Program failed midway: the next one rewrites everything
	fresh  bool   // the maps were never written (nothing to read back and delete)
	alloc  allocator
	closed bool

	// Memory kept between Programs: the table replaced by the last one,
	// and batch buffers.
	spare   *table
	iotaBuf []uint32
	keyBuf  []svcKey
	valBuf  []svcVal
}

// newCore creates the maps and loads the programs, or, when PinDir holds
// maps pinned by an earlier process, loads the programs on those maps
// (adopted is then true and the caller takes over the attachments).
func newCore(m mode, opts Options) (c *core, adopted bool, err error) {
	if opts.FlowMapMax == 0 {
		opts.FlowMapMax = m.defaultFlows
	}
	if opts, err = opts.withDefaults(); err != nil {
		return nil, false, err
	}
	c = &core{m: m, opts: opts, size: Capacity{ServiceMap: opts.LBMapMax, BackendMap: opts.LBMapMax, FlowMap: opts.FlowMapMax}}
	var pinned map[string]*cebpf.Map
	if opts.PinDir != "" {
		var mounted bool
		if mounted, err = EnsureBPFFS(opts.PinDir); err != nil {
			return nil, false, err
		}
		defer func() {
			if err != nil && mounted {
				RemovePinned(opts.PinDir) // our fresh mount: leave nothing
			}
		}()
		if pinned, err = c.pinnedMaps(); err != nil {
			return nil, false, err
		}
	}
	if pinned != nil {
		// The maps keep their sizes and contents; what they hold is not
		// known here, so the first Program reads them back (dirty).
		c.size = Capacity{ServiceMap: int(pinned[mapSvc].MaxEntries()), BackendMap: int(pinned[mapBe].MaxEntries()), FlowMap: int(pinned[m.flowMap].MaxEntries())}
		c.objs, err = c.loadOn(c.size, pinned)
		for _, m := range pinned {
			m.Close() // the collection holds its own references
		}
		if err != nil {
			return nil, false, err
		}
		c.alloc.reset(uint32(c.size.BackendMap))
		c.dirty = true
		return c, true, nil
	}
	if c.objs, err = c.load(c.size); err != nil {
		return nil, false, err
	}
	if err := c.pinMaps(c.objs); err != nil {
		c.objs.close()
		return nil, false, err
	}
	c.alloc.reset(uint32(c.size.BackendMap))
	c.fresh = true
	return c, false, nil
}

// load creates the maps (with the sizes in cp) and loads the programs.
func (c *core) load(cp Capacity) (*objects, error) { return c.loadOn(cp, nil) }

// loadOn loads the programs; maps in existing are used as they are, the
// others created with the sizes in cp.
func (c *core) loadOn(cp Capacity, existing map[string]*cebpf.Map) (*objects, error) {
	spec, err := c.m.spec()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.m.name, err)
	}
	for name, n := range map[string]int{mapSvc: cp.ServiceMap, mapBe: cp.BackendMap, c.m.flowMap: cp.FlowMap} {
		ms := spec.Maps[name]
		if ms == nil {
			return nil, fmt.Errorf("%s: object has no map %s", c.m.name, name)
		}
		ms.MaxEntries = uint32(n)
	}
	coll, err := cebpf.NewCollectionWithOptions(spec, cebpf.CollectionOptions{MapReplacements: existing})
	if err != nil {
		var ve *cebpf.VerifierError
		if errors.As(err, &ve) && len(ve.Log) > 0 {
			// The full log says which instruction a kernel refused.
			return nil, fmt.Errorf("%s: load programs: %+v", c.m.name, ve)
		}
		return nil, loadUnsupported(c.m.name+" BPF programs and maps", err)
	}
	return &objects{coll: coll, svc: coll.Maps[mapSvc], be: coll.Maps[mapBe], flow: coll.Maps[c.m.flowMap]}, nil
}

// errClosed is returned by every method after Close.
var errClosed = errors.New("ebpf: datapath is closed")

// closeCore detaches (through the mode), unpins and frees everything; with
// keep (Release), pinned links and maps stay and only this process's
// handles are closed. Idempotent.
func (c *core) closeCore(keep bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	keep = keep && c.opts.PinDir != ""
	var errs []error
	if c.m.detach != nil {
		errs = append(errs, c.m.detach(!keep))
	}
	if !keep {
		errs = append(errs, c.unpinAll())
	}
	c.objs.close()
	c.objs, c.cur, c.spare = nil, nil, nil
	return errors.Join(errs...)
}

// Name is the datapath's command-line name.
func (c *core) Name() string { return c.m.name }

// Capacity returns the current map sizes.
func (c *core) Capacity() Capacity {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

// Options returns the options in force, defaults filled in.
func (c *core) Options() Options { return c.opts }
