package k8starget

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cnibench/cnibench/agent/nodeprobe"
	"github.com/cnibench/cnibench/datapath"
)

// heldWait is one PerChange Program's changes until every node holds
// them. A later Program that changes a Service again replaces its check
// here too: the nodes may sync both at once and never show the older
// state, which then counts as held with the newer.
type heldWait struct {
	checks  map[string]*serviceCheck // by Service name
	written time.Time                // the Program's writes returned
	passed  map[string]time.Time     // node → the first read that held every check
	at      time.Time                // the last node's: when the changes were held
	err     error
	why     []string // what the last reads did not hold yet (c.mu)
	done    chan struct{}
}

// Await implements datapath.Async: a wait for the last Program's changes
// alone, which returns when the first probe reads that held them on the
// last node returned, while later Programs go on being written. A churn
// times each change by it, not by a wait for everything written so far:
// that would add the sync of every later change to the earlier ones'.
func (c *ClusterServices) Await() func(context.Context) (time.Time, error) {
	c.mu.Lock()
	w := c.lastWait
	c.mu.Unlock()
	return func(ctx context.Context) (time.Time, error) {
		if w == nil {
			return time.Now(), nil
		}
		select {
		case <-w.done:
			return w.at, w.err
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

// register makes the current Program's checks a wait and starts the poller
// if it is not running. Without node probes (API-only sync) the changes
// are held when the writes returned.
func (c *ClusterServices) register(written time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := &heldWait{checks: c.checks, written: written, passed: map[string]time.Time{}, done: make(chan struct{})}
	c.checks = nil
	c.lastWait = w
	if c.latest == nil {
		c.latest = map[string]*serviceCheck{}
	}
	for _, old := range c.waits {
		for name, ck := range w.checks {
			if _, ok := old.checks[name]; ok {
				old.checks[name] = ck
			}
		}
	}
	for name, ck := range w.checks {
		c.latest[name] = ck
	}
	if len(w.checks) == 0 || c.Sync == nil || c.Sync.Mode != SyncNode {
		w.at = written
		c.resolve(w)
		return
	}
	c.waits = append(c.waits, w)
	if !c.polling {
		if c.pollCtx == nil {
			c.pollCtx, c.stopPoll = context.WithCancel(context.Background())
		}
		c.polling = true
		go c.poll(c.pollCtx)
	}
}

// resolve ends a wait; c.mu is held.
func (c *ClusterServices) resolve(w *heldWait) {
	close(w.done)
	for name, ck := range w.checks {
		if c.latest[name] == ck {
			delete(c.latest, name)
		}
	}
	for i, o := range c.waits {
		if o == w {
			c.waits = append(c.waits[:i], c.waits[i+1:]...)
			break
		}
	}
}

// awaitAll waits for every Program's changes; the checks of waits that
// failed (not held in time) are checked again from now, so Verify says
// what the nodes hold now, and their errors are returned if that fails.
func (c *ClusterServices) awaitAll(ctx context.Context) error {
	waits := c.openWaits()
	retry := map[string]*serviceCheck{}
	for _, w := range waits {
		select {
		case <-w.done:
		case <-ctx.Done():
			c.mu.Lock()
			why := first(w.why, 3)
			c.mu.Unlock()
			return fmt.Errorf("%w: still waiting for %s", ctx.Err(), strings.Join(why, "; "))
		}
		if w.err != nil {
			c.mu.Lock()
			for name, ck := range w.checks {
				retry[name] = ck
			}
			c.mu.Unlock()
		}
	}
	if len(retry) == 0 {
		return nil
	}
	c.mu.Lock()
	c.checks = map[string]*serviceCheck{}
	for name, old := range retry {
		// What the API server holds now: a later Program may have
		// changed the Service again.
		s, ok := c.written[name]
		switch ip, known := c.clusterIPs[name]; {
		case !ok:
			c.checks[name] = &serviceCheck{port: old.port}
		case known:
			var gone []datapath.Endpoint
			for _, ap := range old.gone {
				gone = append(gone, datapath.Endpoint{IP: ap.Addr(), Port: ap.Port()})
			}
			c.addCheck(name, ip, s, gone)
		}
	}
	c.mu.Unlock()
	c.register(time.Now())
	_, err := c.Await()(ctx)
	return err
}

// openWaits are the waits not yet resolved and the last one.
func (c *ClusterServices) openWaits() []*heldWait {
	c.mu.Lock()
	defer c.mu.Unlock()
	waits := append([]*heldWait(nil), c.waits...)
	if c.lastWait != nil && !contains(waits, c.lastWait) {
		waits = append(waits, c.lastWait)
	}
	return waits
}

func contains(ws []*heldWait, w *heldWait) bool {
	for _, o := range ws {
		if o == w {
			return true
		}
	}
	return false
}

// endPoll stops the poller; waits still open fail.
func (c *ClusterServices) endPoll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopPoll != nil {
		c.stopPoll()
	}
}

// poll reads every node while changes are open, each read asking for the
// endpoint keys of the changed Services, and resolves each wait once
// every node has held all its checks (at the return of the first read
// that did) or fails it after the sync timeout from its writes.
func (c *ClusterServices) poll(ctx context.Context) {
	v := c.Sync
	v.defaults()
	for ctx.Err() == nil {
		open, asked, more := c.openChecks()
		if !more {
			return
		}
		failing, readAt, errs := c.readFailing(ctx, open, asked)
		now := time.Now()
		c.mu.Lock()
		for _, w := range append([]*heldWait(nil), c.waits...) {
			switch all := w.record(open, failing, readAt, errs); {
			case all:
				w.at = w.written // no node read (all checked in the API server only)
				for _, t := range w.passed {
					w.at = maxTime(w.at, t)
				}
				c.resolve(w)
			case now.Sub(w.written) > v.Timeout:
				w.err = fmt.Errorf("node sync: a change was not held %s after its API writes: %s", v.Timeout, strings.Join(first(w.why, 3), "; "))
				c.resolve(w)
			}
		}
		c.mu.Unlock()
		gap := v.Interval
		for node := range failing {
			gap = max(gap, v.gapAfter(node))
		}
		select {
		case <-ctx.Done():
		case <-time.After(gap):
		}
	}
	// Cancelled (Close): the waits still open fail. (Not on the return
	// above: a Program may have started a new poller since.)
	c.mu.Lock()
	c.polling = false
	for _, w := range append([]*heldWait(nil), c.waits...) {
		w.err = errors.New("node sync: the datapath was closed before every node held the change")
		c.resolve(w)
	}
	c.mu.Unlock()
}

// openChecks are the checks of every open wait by Service name and the
// Service ports whose endpoint keys the reads must ask for; more is false,
// and the poller marked stopped, when no wait is open.
func (c *ClusterServices) openChecks() (open map[string]*serviceCheck, asked []nodeprobe.ServicePort, more bool) {
	c.mu.Lock()
	if len(c.waits) == 0 {
		c.polling = false
		c.mu.Unlock()
		return nil, nil, false
	}
	open = map[string]*serviceCheck{}
	for _, w := range c.waits {
		for name, ck := range w.checks {
			open[name] = ck
		}
	}
	c.mu.Unlock()
	for _, ck := range open {
		if len(ck.want)+len(ck.gone) > 0 {
			asked = append(asked, ck.port)
		}
	}
	return open, asked, true
}

// record takes one round of reads into w (under c.mu): the nodes that now
// held every check of w pass at their read's time, and w.why says what
// the others did not hold. It reports whether every node has passed.
func (w *heldWait) record(open map[string]*serviceCheck, failing map[string]map[string]string, readAt map[string]time.Time, errs map[string]error) bool {
	all := true
	var why []string
	for node, fails := range failing {
		if _, ok := w.passed[node]; ok {
			continue
		}
		held := fails != nil
		for name, ck := range w.checks {
			if open[name] != ck || fails == nil || fails[name] != "" {
				held = false
				if fails != nil && fails[name] != "" {
					why = append(why, "node "+node+": "+fails[name])
				}
			}
		}
		if held {
			w.passed[node] = readAt[node]
		} else {
			all = false
			if fails == nil && errs[node] != nil {
				why = append(why, "node "+node+": "+oneLine(errs[node].Error()))
			}
		}
	}
	w.why = why
	return all
}

// readFailing reads every node (those checked in the API server only are
// left out) and says, per node, why each open check fails ("" or absent:
// held); a node whose read failed has nil.
func (c *ClusterServices) readFailing(ctx context.Context, open map[string]*serviceCheck, asked []nodeprobe.ServicePort) (map[string]map[string]string, map[string]time.Time, map[string]error) {
	v := c.Sync
	var mu sync.Mutex
	failing, readAt, errs := map[string]map[string]string{}, map[string]time.Time{}, map[string]error{}
	v.eachProbe(func(p NodeProbe) error {
		if _, ok := v.apiOnlyNode(p.Node); ok {
			return nil
		}
		rep, err := v.read(ctx, p, time.Now().Add(30*time.Second), asked...)
		at := time.Now()
		var fails map[string]string
		if err == nil {
			fails = map[string]string{}
			h := newHeldIndex(rep)
			for name, ck := range open {
				if why := h.why(*ck); why != "" {
					fails[name] = why
				}
			}
			if len(asked) > 0 && !rep.EndpointKeysRead {
				why := "not read"
				for _, e := range rep.Errors {
					if strings.HasPrefix(e, "endpoint keys: ") {
						why = e
					}
				}
				v.noteOnce(p.Node, fmt.Sprintf("\n  node %s: its %s names no endpoints (%s): a change of a Service's endpoints is checked by its key only\n", p.Node, rep.Datapath, why))
			}
		}
		mu.Lock()
		failing[p.Node], readAt[p.Node], errs[p.Node] = fails, at, err
		mu.Unlock()
		return nil
	})
	return failing, readAt, errs
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
