package k8starget

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cnibench/cnibench/agent/nodeprobe"
	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/sweep"
)

// Sync verification modes of a cluster sweep (--sync-verify).
const (
	SyncNode = "node" // read every node's datapath through its probe
	SyncAPI  = "api"  // the API server's objects only
)

// Defaults of the sync verification.
const (
	DefaultSyncTimeout  = 5 * time.Minute
	DefaultSyncInterval = time.Second
)

// ProbeClient is a node probe's control API (agent.Client implements it).
type ProbeClient interface {
	// NodeServices reads the node's datapath, and what q asks beyond the
	// counts.
	NodeServices(ctx context.Context, q nodeprobe.Query) (*nodeprobe.Report, error)
}

// NodeProbe is the probe of one node.
type NodeProbe struct {
	Node   string
	Client ProbeClient
}

// SyncVerifier makes a cluster sweep's Verify wait until every node's
// Service proxy holds the step's Services: a step is measured only once
// kube-proxy or Cilium has really programmed it, never after a sleep. It
// reads a baseline (the cluster's other Services) before the first step,
// then after each step's API writes polls every probe until the node holds
// baseline + the step's dummies. A node whose probe cannot read its
// datapath (kube-proxy on iptables-legacy, IPVS) falls back to the API
// check, with a note.
type SyncVerifier struct {
	Mode     string // SyncNode or SyncAPI
	Probes   []NodeProbe
	Timeout  time.Duration // per step, from the end of the API writes
	Interval time.Duration // between reads of one probe
	// ClientNode's BPF map memory is the step's Memory (the node whose
	// datapath the test traffic takes).
	ClientNode string
	// Require are the ports of the run's test Service: the baseline is
	// taken only once every node's datapath holds them (by Report.Keys),
	// so no step is measured through a Service a node has not programmed.
	Require  []nodeprobe.ServicePort
	Progress io.Writer
	// Live: every read names only the Services in use (nodeprobe.Query),
	// the baseline too, so counts compare like with like (the churn's).
	Live bool

	mu       sync.Mutex
	baseline map[string]*nodeprobe.Report // nil until read
	apiOnly  map[string]string            // node → why only the API server is checked
	last     *sweep.Sync
	reports  map[string]*nodeprobe.Report // the matching reads of the last step
	lat      *latencyTracker              // the step's per-Service latency (node mode)
	readCost map[string]time.Duration     // node → how long its last probe read took
	noted    map[string]bool              // nodes a note was written about (noteOnce)
}

// readCostFactor: a probe waits at least this many times its last read's
// duration before the next read, so polling takes at most a fifth of a core
// per node. At 10,000 Services an iptables-save takes over a second; read
// every second, the probes took a core from the kube-proxies and the API
// server being measured, and the API writes of a 10,000-Service step slowed
// to 38/s.
const readCostFactor = 4

// gapAfter is the pause before a probe's next read: the interval, or
// readCostFactor × its last read's duration when that is longer.
func (v *SyncVerifier) gapAfter(node string) time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	return max(v.Interval, readCostFactor*v.readCost[node])
}

// beginStep starts tracking a step's per-Service latency: until the
// returned stop is called (the API writes ended) every probe is polled,
// then the sync wait's reads go on feeding the tracker.
func (v *SyncVerifier) beginStep(ctx context.Context) (stop func()) {
	v.defaults()
	l := newLatencyTracker()
	v.mu.Lock()
	v.lat = l
	poll := v.Mode == SyncNode && v.baseline != nil
	v.mu.Unlock()
	if !poll {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); v.poll(ctx, l) }()
	return func() { cancel(); <-done }
}

// expect registers a Service of the step whose last write returned at
// created (latencyTracker).
func (v *SyncVerifier) expect(name string, sp nodeprobe.ServicePort, created time.Time) {
	v.mu.Lock()
	l := v.lat
	v.mu.Unlock()
	if l != nil {
		l.expect(name, sp, created)
	}
}

// tracker is the current step's latency tracker (nil before the first).
func (v *SyncVerifier) tracker() *latencyTracker {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.lat
}

// apiOnlyNode says why a node is checked in the API server only, if it is.
func (v *SyncVerifier) apiOnlyNode(node string) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	why, ok := v.apiOnly[node]
	return why, ok
}

func (v *SyncVerifier) defaults() {
	if v.Mode == "" {
		v.Mode = SyncNode
	}
	if v.Timeout <= 0 {
		v.Timeout = DefaultSyncTimeout
	}
	if v.Interval <= 0 {
		v.Interval = DefaultSyncInterval
	}
}

// probeUnsupported says why a probe cannot read its node's datapath, when
// that is a lasting condition rather than a failed read. The probe's
// errors.ErrUnsupported arrives as text over the control API.
func probeUnsupported(rep *nodeprobe.Report, err error) (string, bool) {
	if err != nil {
		if errors.Is(err, errors.ErrUnsupported) || strings.Contains(err.Error(), errors.ErrUnsupported.Error()) {
			return oneLine(err.Error()), true
		}
		return "", false
	}
	if rep.Datapath == "" {
		return "no Service datapath the probe can read (" + strings.Join(rep.Errors, "; ") + ")", true
	}
	return "", false
}

// readBaseline reads what every node holds before the sweep adds anything:
// two equal reads in a row, so Services created just before (the run's
// own test Service) are in it.
func (v *SyncVerifier) readBaseline(ctx context.Context) error {
	v.defaults()
	v.mu.Lock()
	done := v.baseline != nil || v.Mode != SyncNode
	v.mu.Unlock()
	if done {
		return nil
	}
	base := map[string]*nodeprobe.Report{}
	api := map[string]string{}
	err := v.eachProbe(func(p NodeProbe) error {
		deadline := time.Now().Add(v.Timeout)
		var prev *nodeprobe.Report
		var lastErr error
		for {
			rep, err := v.read(ctx, p, deadline)
			if why, ok := probeUnsupported(rep, err); ok {
				v.note("\n  node %s: %s: falling back to the API server check for it\n", p.Node, why)
				v.mu.Lock()
				api[p.Node] = why
				v.mu.Unlock()
				return nil
			}
			missing := v.missing(rep)
			switch {
			case err != nil:
				lastErr = err
			case len(missing) > 0:
				lastErr = fmt.Errorf("its %s does not hold the test Service's %s yet", rep.Datapath, strings.Join(missing, ", "))
				prev = nil
			case prev != nil && rep.Services == prev.Services && rep.Endpoints == prev.Endpoints:
				v.mu.Lock()
				base[p.Node] = rep
				v.mu.Unlock()
				return nil
			default:
				prev = rep
			}
			if err := v.pause(ctx, deadline, p.Node); err != nil {
				if lastErr == nil && prev != nil {
					lastErr = fmt.Errorf("its counts did not settle (last %d Services / %d endpoints)", prev.Services, prev.Endpoints)
				}
				return fmt.Errorf("node %s: no baseline read within %s: %w", p.Node, v.Timeout, lastErr)
			}
		}
	})
	if err != nil {
		return err
	}
	v.mu.Lock()
	v.baseline, v.apiOnly = base, api
	v.mu.Unlock()
	return nil
}

// missing names the required test Service ports a read lacks (by their
// key for the read's datapath).
func (v *SyncVerifier) missing(rep *nodeprobe.Report) []string {
	if rep == nil || len(v.Require) == 0 {
		return nil
	}
	have := make(map[string]bool, len(rep.Keys))
	for _, k := range rep.Keys {
		have[k] = true
	}
	var out []string
	for _, sp := range v.Require {
		if k := nodeprobe.Key(rep.Datapath, sp); !have[k] {
			out = append(out, fmt.Sprintf("%s:%d/%s (%s)", sp.ClusterIP, sp.Port, strings.ToLower(sp.Protocol), sp.PortName))
		}
	}
	return out
}

// read asks one probe, bounded by the deadline (and 30 s a read), with the
// endpoint keys of the Service ports asked (by name and by frontend:
// the probe answers for whichever datapath the node has); live reads
// (Live) name only the Services in use.
func (v *SyncVerifier) read(ctx context.Context, p NodeProbe, deadline time.Time, asked ...nodeprobe.ServicePort) (*nodeprobe.Report, error) {
	rctx, cancel := context.WithTimeout(ctx, max(min(30*time.Second, time.Until(deadline)), 100*time.Millisecond))
	defer cancel()
	q := nodeprobe.Query{Live: v.Live}
	for _, sp := range asked {
		q.AskEndpoints(sp)
	}
	start := time.Now()
	rep, err := p.Client.NodeServices(rctx, q)
	if err == nil {
		v.mu.Lock()
		if v.readCost == nil {
			v.readCost = map[string]time.Duration{}
		}
		v.readCost[p.Node] = time.Since(start)
		v.mu.Unlock()
	}
	return rep, err
}

// pause waits before node's next read (gapAfter); it fails once the
// deadline has passed or ctx is done.
func (v *SyncVerifier) pause(ctx context.Context, deadline time.Time, node string) error {
	if !time.Now().Before(deadline) {
		return errors.New("deadline passed")
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(min(v.gapAfter(node), time.Until(deadline))):
		return nil
	}
}

// eachProbe runs fn on every probe at once and returns the errors joined.
func (v *SyncVerifier) eachProbe(fn func(NodeProbe) error) error {
	errs := make([]error, len(v.Probes))
	var wg sync.WaitGroup
	for i, p := range v.Probes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(p)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// wait polls every probe until its node holds baseline + want, or the
// timeout passes (an error naming the node, what it holds and what was
// expected). writesDone is when the step's API writes ended.
func (v *SyncVerifier) wait(ctx context.Context, writesDone time.Time, want datapath.Counts) (*sweep.Sync, error) {
	v.defaults()
	res := &sweep.Sync{Mode: v.Mode}
	if v.Mode != SyncNode {
		res.Notes = append(res.Notes, "--sync-verify api: only the API server's objects are checked, not what each node programmed")
		v.setLast(res, nil)
		return res, nil
	}
	v.mu.Lock()
	base, api := v.baseline, v.apiOnly
	v.mu.Unlock()
	if base == nil {
		return res, errors.New("node sync: no baseline was read before the first step")
	}
	nodes := make([]sweep.NodeSync, len(v.Probes))
	reports := map[string]*nodeprobe.Report{}
	var mu sync.Mutex
	err := v.eachProbe(func(p NodeProbe) error {
		ns := &nodes[v.index(p.Node)]
		ns.Node, ns.Mode = p.Node, SyncNode
		if why, ok := api[p.Node]; ok {
			ns.Mode, ns.Note = SyncAPI, why
			return nil
		}
		rep, err := v.waitNode(ctx, p, ns, base[p.Node], want, writesDone)
		if rep != nil {
			mu.Lock()
			reports[p.Node] = rep
			mu.Unlock()
		}
		return err
	})
	v.summarize(res, nodes, reports, err)
	return res, err
}

// waitNode polls p until its node holds b + want, filling ns: the report
// that showed it synced, or nil with ns in API mode when the probe stopped
// reading the datapath, or an error naming what the node holds when the
// timeout from writesDone passed.
func (v *SyncVerifier) waitNode(ctx context.Context, p NodeProbe, ns *sweep.NodeSync, b *nodeprobe.Report, want datapath.Counts, writesDone time.Time) (*nodeprobe.Report, error) {
	ns.Datapath = b.Datapath
	ns.WantServices, ns.WantEndpoints = b.Services+want.Services, b.Endpoints+want.Endpoints
	deadline := writesDone.Add(v.Timeout)
	var lastErr error
	for {
		rep, err := v.read(ctx, p, deadline)
		if why, ok := probeUnsupported(rep, err); ok {
			// It could read the datapath before: say so, do not guess.
			ns.Mode, ns.Note = SyncAPI, "probe stopped reading the datapath: "+why
			return nil, nil
		}
		if err != nil {
			lastErr = err
		} else {
			if l := v.tracker(); l != nil {
				l.observe(p.Node, rep, time.Now())
			}
			ns.Services, ns.Endpoints, ns.BPFMapBytes, ns.Datapath = rep.Services, rep.Endpoints, rep.BPFMapBytes, rep.Datapath
			if rep.Services >= ns.WantServices && rep.Endpoints >= ns.WantEndpoints {
				ns.Time = time.Since(writesDone)
				return rep, nil
			}
		}
		if perr := v.pause(ctx, deadline, p.Node); perr != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			msg := fmt.Sprintf("node %s not synced %s after the API writes: its %s holds %d Services / %d endpoints, want at least %d / %d (baseline %d / %d + this step's %d / %d)",
				p.Node, v.Timeout, or(ns.Datapath, "datapath"), ns.Services, ns.Endpoints, ns.WantServices, ns.WantEndpoints,
				b.Services, b.Endpoints, want.Services, want.Endpoints)
			if lastErr != nil {
				msg += "; last probe error: " + oneLine(lastErr.Error())
			}
			return nil, errors.New(msg)
		}
	}
}

// summarize completes res from the nodes' syncs (err: wait's error): the
// slowest node, notes for the nodes checked through the API only, the
// per-Service latency, and the progress line when every node synced.
func (v *SyncVerifier) summarize(res *sweep.Sync, nodes []sweep.NodeSync, reports map[string]*nodeprobe.Report, err error) {
	res.Nodes = nodes
	var read []string
	for _, n := range nodes {
		if n.Mode == SyncAPI {
			res.Notes = append(res.Notes, fmt.Sprintf("node %s: only the API server is checked: %s", n.Node, n.Note))
			continue
		}
		read = append(read, n.Node)
		res.NodeSync = max(res.NodeSync, n.Time)
	}
	if l := v.tracker(); l != nil && err == nil {
		res.Latency = l.result(read, v.Interval)
	}
	v.setLast(res, reports)
	if err == nil {
		lat := ""
		if l := res.Latency; l != nil && l.Services > 0 {
			lat = fmt.Sprintf(", per-Service latency p50 %s p99 %s (±%s)", l.P50.Round(time.Millisecond), l.P99.Round(time.Millisecond), l.Resolution)
		}
		v.note(" %s%s;", syncLine(nodes), lat)
	}
}

func (v *SyncVerifier) index(node string) int {
	for i, p := range v.Probes {
		if p.Node == node {
			return i
		}
	}
	return 0
}

func (v *SyncVerifier) setLast(s *sweep.Sync, reports map[string]*nodeprobe.Report) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.last, v.reports = s, reports
}

// Last is the sync of the last verified step (nil before the first).
func (v *SyncVerifier) Last() *sweep.Sync {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.last
}

// memory is the client node's BPF map memory from the last matching read,
// where the datapath is Cilium.
func (v *SyncVerifier) memory() (datapath.Memory, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	rep := v.reports[v.ClientNode]
	if rep == nil || rep.Datapath != nodeprobe.Cilium || rep.BPFMapBytes == 0 {
		return datapath.Memory{}, false
	}
	return datapath.Memory{BPFMapBytes: int64(rep.BPFMapBytes)}, true
}

func (v *SyncVerifier) note(format string, a ...any) {
	if v.Progress != nil {
		fmt.Fprintf(v.Progress, format, a...)
	}
}

// syncLine is "node sync worker-a 1.2s, worker-b 1.4s (API only)".
func syncLine(nodes []sweep.NodeSync) string {
	parts := make([]string, 0, len(nodes))
	for _, n := range nodes {
		if n.Mode == SyncAPI {
			parts = append(parts, n.Node+" API only")
			continue
		}
		parts = append(parts, n.Node+" "+n.Time.Round(time.Millisecond).String())
	}
	sort.Strings(parts)
	return "node sync " + strings.Join(parts, ", ")
}
