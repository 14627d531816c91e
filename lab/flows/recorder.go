package flows

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Mechanisms Open accepts.
const (
	EBPF  = "ebpf"  // tc programs on the pod veths, events in a BPF ring buffer
	NFLOG = "nflog" // an nft table on the forward hook logging to an NFLOG group
)

// Site is the node a Recorder observes.
type Site struct {
	// Netns is the node's network namespace, e.g. /run/netns/cnb-x-node0.
	Netns string
	// Node is the node's name ("node0"), for messages.
	Node string
	// Prefix is the lab's object prefix ("cnb-x-"): the NFLOG table is
	// named <Prefix>flows.
	Prefix string
}

// Options tune a Recorder; zero values take the defaults.
type Options struct {
	// RingBytes is the BPF ring buffer size (a power of two, at least a
	// page); default 1 MiB (32,768 events of 32 bytes).
	RingBytes uint32
	// Group is the NFLOG group (per network namespace); default 7731.
	Group uint16
	// SampleSize is how many recent events Sample can return; default 256.
	SampleSize int
	// TCAttach is how EBPF attaches, as datapath/ebpf's option of that
	// name: "auto" (default: tcx, cls_bpf on kernels without it), "tcx"
	// or "netlink" (clsact qdisc + cls_bpf filter).
	TCAttach string
}

// Options.TCAttach values.
const (
	AttachAuto    = "auto"
	AttachTCX     = "tcx"
	AttachNetlink = "netlink"
)

const (
	defaultRingBytes  = 1 << 20
	defaultGroup      = 7731
	defaultSampleSize = 256
)

// Counts is what a Recorder has seen since Open. Events arrive in
// batches, so they lag the datapath by up to 20 ms.
type Counts struct {
	Events uint64            `json:"events"`  // events read by the consumer
	Lost   uint64            `json:"lost"`    // events the kernel could not hand over (ring or socket full)
	ByKind map[string]uint64 `json:"by_kind"` // Events by Event.Kind
	At     time.Time         `json:"at"`      // when the counts were taken
}

// RatePerSec is the event rate between prev and c.
func (c Counts) RatePerSec(prev Counts) float64 {
	d := c.At.Sub(prev.At).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(c.Events-prev.Events) / d
}

// source is one mechanism's kernel side.
type source interface {
	// run reads events until stop, handing each to emit; lost adds to
	// the in-process loss count (nflog's sequence gaps).
	run(emit func(Event), lost func(uint64)) error
	// kernelLost is the loss count kept by the kernel (eBPF's reserve
	// failures); 0 for mechanisms without one.
	kernelLost() (uint64, error)
	// stop makes run return.
	stop()
	// remove takes everything out of the kernel (after run returned).
	remove() error
	// installed reads back from the kernel how many of our hooks / rules
	// are in place.
	installed() (int, error)
}

// Recorder is one live flow-event pipeline on one node: kernel hooks
// emitting events and a consumer goroutine counting them. Open enables
// it; Close removes it (no Recorder = observability off).
type Recorder struct {
	site  Site
	mech  string
	src   source
	done  chan struct{}
	runEr error

	mu      sync.Mutex
	events  uint64
	ulost   uint64
	byKind  map[string]uint64
	sample  []Event
	next    int
	started bool
	closed  bool
	closeEr error
	final   uint64 // kernel loss count read at Close

	// The consumer's OS thread, its CPU clock at Start, and its CPU time
	// when it stopped (the thread exits with it).
	tid              int
	cpuBase, cpuLast time.Duration
	cpuDone          bool
}

// Open starts recording flow events on site's node with mechanism mech
// (EBPF or NFLOG). ifaces are the node sides of the pod veths (EBPF: the
// hooks; NFLOG: packets in or out of them); none means every cnbp* link.
// Needs root (CAP_BPF/CAP_NET_ADMIN) in the node namespace; NFLOG needs the
// nft binary.
func Open(site Site, mech string, ifaces []string, opts Options) (*Recorder, error) {
	return open(site, mech, ifaces, opts, true)
}

// open is Open; without start the consumer is not started (tests fill the
// ring to see losses counted).
func open(site Site, mech string, ifaces []string, opts Options, start bool) (*Recorder, error) {
	if site.Netns == "" {
		return nil, errors.New("flows: Site.Netns is empty")
	}
	if opts.SampleSize <= 0 {
		opts.SampleSize = defaultSampleSize
	}
	var src source
	var err error
	switch opts.TCAttach {
	case "":
		opts.TCAttach = AttachAuto
	case AttachAuto, AttachTCX, AttachNetlink:
	default:
		return nil, fmt.Errorf("flows: TCAttach must be %s, %s or %s, got %q", AttachAuto, AttachTCX, AttachNetlink, opts.TCAttach)
	}
	switch mech {
	case EBPF:
		src, err = openEBPF(site, ifaces, opts)
	case NFLOG:
		src, err = openNFLOG(site, ifaces, opts)
	default:
		return nil, fmt.Errorf("flows: unknown mechanism %q (want %s or %s)", mech, EBPF, NFLOG)
	}
	if err != nil {
		return nil, err
	}
	r := &Recorder{site: site, mech: mech, src: src, done: make(chan struct{}),
		byKind: map[string]uint64{}, sample: make([]Event, 0, opts.SampleSize)}
	if start {
		r.Start()
	}
	return r, nil
}

// Start runs the consumer (Open does; for tests that open paused).
func (r *Recorder) Start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started || r.closed {
		return
	}
	r.started = true
	ready := make(chan struct{})
	go func() {
		defer close(r.done)
		// The consumer keeps an OS thread of its own, so that thread's
		// CPU clock is its cost. Never unlocked: the thread exits with
		// the goroutine and no other goroutine runs on it.
		runtime.LockOSThread()
		r.tid, r.cpuBase = unix.Gettid(), ownThreadCPU()
		close(ready)
		defer func() {
			used := ownThreadCPU() - r.cpuBase
			r.mu.Lock()
			r.cpuLast, r.cpuDone = used, true
			r.mu.Unlock()
		}()
		r.runEr = r.src.run(r.add, func(n uint64) {
			r.mu.Lock()
			r.ulost += n
			r.mu.Unlock()
		})
	}()
	<-ready // tid and cpuBase are set before ConsumerCPU can read them
}

// ConsumerCPU is the CPU time the consumer's thread has used since Start:
// reading the kernel's events, decoding and counting them. It runs in the
// calling process, outside any lab cgroup, so no other reading has it.
// 0 before Start; after Close, what it used until it stopped.
func (r *Recorder) ConsumerCPU() (time.Duration, error) {
	r.mu.Lock()
	started, done, tid, base, last := r.started, r.cpuDone, r.tid, r.cpuBase, r.cpuLast
	r.mu.Unlock()
	if !started || done {
		return last, nil
	}
	c, err := threadCPU(tid)
	if err != nil {
		// The thread may have exited since: its last reading stands.
		r.mu.Lock()
		done, last = r.cpuDone, r.cpuLast
		r.mu.Unlock()
		if done {
			return last, nil
		}
		return 0, err
	}
	return c - base, nil
}

// add counts e and keeps it in the sample ring.
func (r *Recorder) add(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events++
	r.byKind[e.Kind()]++
	if len(r.sample) < cap(r.sample) {
		r.sample = append(r.sample, e)
		return
	}
	r.sample[r.next] = e
	r.next = (r.next + 1) % len(r.sample)
}

// Mechanism is EBPF or NFLOG.
func (r *Recorder) Mechanism() string { return r.mech }

// Counts is the number of events read and lost so far. Lost comes from
// the kernel (eBPF) or from gaps in NFLOG's sequence numbers.
func (r *Recorder) Counts() (Counts, error) {
	r.mu.Lock()
	closed, final := r.closed, r.final
	r.mu.Unlock()
	kl := final
	var err error
	if !closed {
		kl, err = r.src.kernelLost()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := Counts{Events: r.events, Lost: r.ulost + kl, ByKind: make(map[string]uint64, len(r.byKind)), At: time.Now()}
	for k, v := range r.byKind {
		c.ByKind[k] = v
	}
	return c, err
}

// Sample is up to n of the most recent events, oldest first.
func (r *Recorder) Sample(n int) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	all := make([]Event, 0, len(r.sample))
	all = append(all, r.sample[r.next:]...)
	all = append(all, r.sample[:r.next]...)
	if n >= 0 && n < len(all) {
		all = all[len(all)-n:]
	}
	return all
}

// Installed reads back from the kernel how many hooks (EBPF: attached
// programs) or rules (NFLOG: log rules) of this recorder are in place:
// the "on" check before measuring.
func (r *Recorder) Installed() (int, error) { return r.src.installed() }

// Close stops the consumer and removes every program, map and rule the
// recorder made. Idempotent; Counts still answers afterwards.
func (r *Recorder) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return r.closeEr
	}
	started := r.started
	r.mu.Unlock()
	kl, lerr := r.src.kernelLost()
	r.src.stop()
	if !started {
		close(r.done)
	}
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		lerr = errors.Join(lerr, errors.New("flows: consumer did not stop within 5 s"))
	}
	err := errors.Join(lerr, r.src.remove())
	if r.runEr != nil && !errors.Is(r.runEr, errStopped) {
		err = errors.Join(fmt.Errorf("flows: consumer on %s: %w", r.site.Node, r.runEr), err)
	}
	r.mu.Lock()
	r.closed, r.closeEr, r.final = true, err, kl
	r.mu.Unlock()
	return err
}

// Err is the consumer's error if it stopped on its own (nil while it runs).
func (r *Recorder) Err() error {
	select {
	case <-r.done:
		if errors.Is(r.runEr, errStopped) {
			return nil
		}
		return r.runEr
	default:
		return nil
	}
}

// errStopped is what run returns after stop.
var errStopped = errors.New("flows: stopped")
