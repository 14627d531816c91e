package k8starget

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/cnibench/cnibench/agent/nodeprobe"
	"github.com/cnibench/cnibench/datapath/sweep"
)

// latencyTracker learns when each Service a step creates is first held by
// each node's datapath: every probe read (the tracker's own polls while
// the API writes run, then the sync wait's) is matched against the keys
// (nodeprobe.Key) of the Services created so far. A Service's latency is
// from its last API write to the first read that found it on the last
// node: late by up to the longest gap between two reads of a node (the
// poll interval, or longer where reads are slow: SyncVerifier.gapAfter).
type latencyTracker struct {
	mu      sync.Mutex
	last    map[string]time.Time             // node → its last read
	maxGap  time.Duration                    // the longest time between two reads of one node
	created map[string]time.Time             // Service → its last write returned
	ports   map[string]nodeprobe.ServicePort // Service → what the probes key it by
	keys    map[string]map[string]string     // datapath kind → key → Service
	seen    map[string]map[string]time.Time  // node → Service → first read holding it
}

func newLatencyTracker() *latencyTracker {
	return &latencyTracker{created: map[string]time.Time{}, ports: map[string]nodeprobe.ServicePort{},
		keys: map[string]map[string]string{}, seen: map[string]map[string]time.Time{}, last: map[string]time.Time{}}
}

// expect registers a Service whose last write returned at created.
func (l *latencyTracker) expect(name string, sp nodeprobe.ServicePort, created time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.created[name], l.ports[name] = created, sp
	for kind, m := range l.keys {
		m[nodeprobe.Key(kind, sp)] = name
	}
}

// observe records which expected Services a read of node found, at the
// time the read returned.
func (l *latencyTracker) observe(node string, rep *nodeprobe.Report, at time.Time) {
	if rep == nil || rep.Datapath == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev, ok := l.last[node]; ok {
		l.maxGap = max(l.maxGap, at.Sub(prev))
	}
	l.last[node] = at
	m, ok := l.keys[rep.Datapath]
	if !ok {
		m = make(map[string]string, len(l.ports))
		for name, sp := range l.ports {
			m[nodeprobe.Key(rep.Datapath, sp)] = name
		}
		l.keys[rep.Datapath] = m
	}
	seen := l.seen[node]
	if seen == nil {
		seen = map[string]time.Time{}
		l.seen[node] = seen
	}
	for _, k := range rep.Keys {
		if name, ok := m[k]; ok {
			if _, done := seen[name]; !done {
				seen[name] = at
			}
		}
	}
}

// result is the latency over the expected Services on nodes (those read
// on the node); nil when nothing was expected. Its resolution is the poll
// interval or the longest gap between two reads of a node, if longer.
func (l *latencyTracker) result(nodes []string, interval time.Duration) *sweep.Latency {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.created) == 0 || len(nodes) == 0 {
		return nil
	}
	res := &sweep.Latency{Resolution: max(interval, l.maxGap.Round(time.Millisecond))}
	lats := make([]time.Duration, 0, len(l.created))
	for name, created := range l.created {
		var last time.Time
		ok := true
		for _, n := range nodes {
			at, found := l.seen[n][name]
			if !found {
				ok = false
				break
			}
			if at.After(last) {
				last = at
			}
		}
		if !ok {
			res.Unresolved++
			continue
		}
		lats = append(lats, max(last.Sub(created), 0))
	}
	if len(lats) == 0 {
		return res
	}
	slices.Sort(lats)
	res.Services = len(lats)
	res.P50, res.P99, res.Max = rank(lats, 0.50), rank(lats, 0.99), lats[len(lats)-1]
	return res
}

// rank is the nearest-rank percentile q of sorted values.
func rank(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// poll reads every probe, each at its own pace (gapAfter), and feeds the
// tracker until ctx is done (the API writes ended): the reads the sync wait
// makes afterwards feed it too.
func (v *SyncVerifier) poll(ctx context.Context, l *latencyTracker) {
	_ = v.eachProbe(func(p NodeProbe) error {
		if _, apiOnly := v.apiOnlyNode(p.Node); apiOnly {
			return nil
		}
		for {
			rep, err := v.read(ctx, p, time.Now().Add(30*time.Second))
			if err == nil {
				l.observe(p.Node, rep, time.Now())
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(v.gapAfter(p.Node)):
			}
		}
	})
}
