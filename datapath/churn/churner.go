package churn

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/datapath"
)

// Churner keeps one Service datapath (every node's, as the lab and the
// sweep give it) programmed with the test Services and Options' dummies,
// and while started changes the dummies at the requested rate and syncs
// them as the datapath's Service proxy would.
type Churner struct {
	// OnHeld, if set, is called for each change once the sync that
	// carried it is held, with the spec that sync carried: by the sync
	// loop before the next sync when Program returned it held; for an
	// asynchronous datapath by that sync's wait, when it returns (syncs
	// may be in flight then). Tests read the kernel there.
	OnHeld func(Change, datapath.Spec)

	opts    Options
	dp      datapath.Datapath
	partial bool
	minSync time.Duration
	drain   time.Duration  // how long Stop waits for the last changes to be held
	async   datapath.Async // nil: Program returns once the nodes hold the spec

	mu       sync.Mutex
	st       *state
	pending  []made        // made, not yet held, in order
	lastSpec datapath.Spec // the last spec a sync made the datapath hold
	res      Result        // the window in progress

	wake     chan struct{}
	cancel   context.CancelFunc
	genEnd   chan struct{} // closed by Stop
	genDone  chan struct{} // closed by the generator when it returns
	loopStop chan struct{} // closed by Stop once the changes are held: the loop ends between syncs
	loopEnd  chan struct{}
	awaits   sync.WaitGroup // Async: the waits for syncs written, not yet held
	awaiting int            // changes in those waits
	unheld   int            // changes whose wait failed in this window
	window   int            // counts Starts
	maxLate  time.Duration  // the generator's largest lateness in the window
	start    time.Time
}

type made struct {
	Change
	at     time.Time
	window int // the window it was made in
}

// New lays out the Services (test Services kept as they are, among
// o.Services dummies) for dp; nothing is programmed until Program.
func New(dp datapath.Datapath, test []datapath.Service, o Options) (*Churner, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	st, err := newState(test, o.Services, o.Endpoints)
	if err != nil {
		return nil, err
	}
	async, _ := dp.(datapath.Async)
	ms := o.minSync(dp.Name())
	if async != nil && o.MinSync == nil {
		// A cluster: the loop writes each change to the API server as
		// it comes; the nodes' kube-proxy or Cilium keep their own
		// minimum interval, which the latency then includes.
		ms = 0
	}
	return &Churner{opts: o, dp: dp, st: st, minSync: ms, drain: 2*ms + 30*time.Second, async: async}, nil
}

// Options are the churn's options with defaults filled in.
func (c *Churner) Options() Options { return c.opts }

// Program makes the datapath hold the whole state with a full sync and
// reads it back, then turns partial syncs on where the datapath has them:
// the steady state every churn window starts from.
func (c *Churner) Program(ctx context.Context) (datapath.ProgramStats, error) {
	c.mu.Lock()
	spec := c.st.spec()
	c.mu.Unlock()
	ps, canPartial := c.dp.(datapath.PartialSyncer)
	if canPartial {
		ps.SetPartialSyncs(false) // a full sync first, as kube-proxy's first
	}
	st, err := c.dp.Program(ctx, spec)
	if err != nil {
		return st, err
	}
	got, err := c.dp.Verify(ctx)
	if err != nil {
		return st, err
	}
	if err := got.Holds(c.dp.Expected(spec)); err != nil {
		return st, fmt.Errorf("%s: %w", c.dp.Name(), err)
	}
	c.partial = canPartial && ps.SetPartialSyncs(true)
	return st, nil
}

// Start begins a churn window: changes at the requested rate and the
// sync loop. Stop ends it.
func (c *Churner) Start(ctx context.Context) {
	ctx, c.cancel = context.WithCancel(ctx)
	c.mu.Lock()
	c.res = Result{Datapath: c.dp.Name(), Partial: c.partial, MinSync: c.minSync, Requested: c.opts.Rate, Kinds: map[Kind]int{}}
	c.lastSpec = datapath.Spec{}
	c.window++
	c.maxLate = 0
	c.unheld = 0
	carried := len(c.pending) > 0
	c.mu.Unlock()
	c.wake = make(chan struct{}, 1)
	c.genEnd, c.genDone, c.loopStop, c.loopEnd = make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	if carried {
		c.wake <- struct{}{} // changes a previous window left: synced first, not counted here
	}
	c.start = time.Now()
	c.mu.Lock()
	c.res.Start = c.start
	c.mu.Unlock()
	go c.generate(ctx)
	go c.syncLoop(ctx)
}

// Stop ends the window: no more changes, then the sync loop carries those
// still pending (their latencies count: they were made in the window)
// and stops. It returns the window's Result.
func (c *Churner) Stop() Result {
	c.mu.Lock()
	c.res.Elapsed = time.Since(c.start)
	c.mu.Unlock()
	close(c.genEnd)
	<-c.genDone // a change it was making is in pending now
	deadline := time.Now().Add(c.drain)
	for time.Now().Before(deadline) {
		select {
		case <-c.loopEnd: // the run was cancelled
			deadline = time.Now()
			continue
		default:
		}
		c.mu.Lock()
		done := len(c.pending) == 0 && c.awaiting == 0
		c.mu.Unlock()
		if done {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Between syncs, so no sync is cut short (a cancelled Program leaves
	// the datapath to a full resync); the context only if one hangs.
	close(c.loopStop)
	select {
	case <-c.loopEnd:
	case <-time.After(c.drain):
		c.cancel()
		<-c.loopEnd
	}
	awaited := make(chan struct{})
	go func() { c.awaits.Wait(); close(awaited) }()
	select {
	case <-awaited:
	case <-time.After(time.Until(deadline)):
		c.cancel() // the waits give up: their changes are not held
		<-awaited
	}
	c.cancel()
	c.mu.Lock()
	c.res.Span = time.Since(c.start)
	c.mu.Unlock()
	c.confirm()
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.res
	r.MaxLate = c.maxLate
	r.Pending = len(c.pending) + c.unheld
	r.summarise()
	return r
}

// generate makes change k at start + k/rate. A change made late is made
// late, not skipped, so a machine too busy for the rate shows as an
// achieved rate below the requested one.
func (c *Churner) generate(ctx context.Context) {
	defer close(c.genDone)
	interval := time.Duration(float64(time.Second) / c.opts.Rate)
	t := time.NewTimer(0)
	defer t.Stop()
	for k := 1; ; k++ {
		next := c.start.Add(time.Duration(k) * interval)
		t.Reset(time.Until(next))
		select {
		case <-c.genEnd:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.mu.Lock()
		ch := c.st.change()
		now := time.Now()
		c.maxLate = max(c.maxLate, now.Sub(next))
		c.pending = append(c.pending, made{Change: ch, at: now, window: c.window})
		c.res.Made++
		c.res.Kinds[ch.Kind]++
		c.mu.Unlock()
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// retryAfter spaces syncs after a failed one when the interval is 0.
const retryAfter = 100 * time.Millisecond

// syncLoop syncs whenever changes are pending, at most once per minSync
// (measured from the start of the previous sync, as kube-proxy's
// BoundedFrequencyRunner does).
func (c *Churner) syncLoop(ctx context.Context) {
	defer close(c.loopEnd)
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.loopStop:
			return
		case <-c.wake:
		}
		if wait := c.minSync - time.Since(last); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-c.loopStop:
				return
			case <-time.After(wait):
			}
		}
		c.mu.Lock()
		idle := len(c.pending) == 0 // a wake whose changes an earlier sync carried
		c.mu.Unlock()
		if idle {
			continue
		}
		last = time.Now()
		if err := c.sync(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			c.mu.Lock()
			c.res.Failures++
			if c.res.FirstError == "" {
				c.res.FirstError = err.Error()
			}
			c.mu.Unlock()
			if c.minSync < retryAfter {
				last = time.Now().Add(retryAfter - c.minSync)
			}
			select { // try again: the changes are still pending
			case c.wake <- struct{}{}:
			default:
			}
		}
	}
}

// confirm reads the whole datapath back once the window's syncs are over
// (after the traffic, so the read costs the sample nothing): the kernel of
// every node must hold exactly the last spec synced, which every held
// change of the window built. A difference marks the window unconfirmed.
func (c *Churner) confirm() {
	c.mu.Lock()
	spec, synced := c.lastSpec, c.lastSpec.Services != nil
	c.mu.Unlock()
	if !synced {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.drain)
	defer cancel()
	t0 := time.Now()
	got, err := c.dp.Verify(ctx)
	if err == nil {
		err = got.Holds(c.dp.Expected(spec))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.res.VerifyTime += time.Since(t0)
	c.res.Confirmed = err == nil
	if err != nil {
		c.res.Failures++
		if c.res.FirstError == "" {
			c.res.FirstError = fmt.Sprintf("%s: read back after the window: %v", c.dp.Name(), err)
		}
	}
}

// sync programs a snapshot of the desired state and marks every change
// the snapshot carried as held: at once where Program returns only once
// the nodes hold it, else when the datapath's wait for this Program says
// so (in the background: the next changes are written meanwhile).
func (c *Churner) sync(ctx context.Context) error {
	c.mu.Lock()
	spec, upto := c.st.spec(), c.st.seq
	c.mu.Unlock()
	cpu0 := cpuTime()
	t0 := time.Now()
	_, err := c.dp.Program(ctx, spec)
	t1 := time.Now()
	cpu := cpuTime() - cpu0
	var wait func(context.Context) (time.Time, error)
	if err == nil && c.async != nil {
		wait = c.async.Await()
	}
	c.mu.Lock()
	c.res.Syncs++
	c.res.SyncTime += t1.Sub(t0)
	c.res.SyncCPU += cpu
	if err != nil {
		c.mu.Unlock()
		return fmt.Errorf("%s: sync of %d Services: %w", c.dp.Name(), len(spec.Services), err)
	}
	c.lastSpec = spec
	n := 0
	for n < len(c.pending) && c.pending[n].Seq <= upto {
		n++
	}
	carried := append([]made(nil), c.pending[:n]...)
	c.pending = c.pending[n:]
	if wait == nil {
		held := c.held(carried, t1)
		c.mu.Unlock()
		c.onHeld(held, spec)
		return nil
	}
	c.awaiting += len(carried)
	c.awaits.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.awaits.Done()
		at, err := wait(ctx)
		c.mu.Lock()
		c.awaiting -= len(carried)
		c.res.VerifyTime += time.Since(t1)
		if err != nil {
			if ctx.Err() == nil {
				c.res.Failures++
				if c.res.FirstError == "" {
					c.res.FirstError = fmt.Sprintf("%s: %v", c.dp.Name(), err)
				}
			}
			c.unheld += len(carried)
			c.mu.Unlock()
			return
		}
		held := c.held(carried, at)
		c.mu.Unlock()
		c.onHeld(held, spec)
	}()
	return nil
}

// held records the changes ms as held at done (c.mu is held): their
// latencies, but not of changes an earlier window made (theirs would
// include the time between the samples).
func (c *Churner) held(ms []made, done time.Time) []Change {
	var out []Change
	for _, m := range ms {
		if m.window != c.window {
			c.res.Carried++
			continue
		}
		c.res.LatenciesMs = append(c.res.LatenciesMs, float64(done.Sub(m.at))/float64(time.Millisecond))
		c.res.ChangesAtMs = append(c.res.ChangesAtMs, float64(m.at.Sub(c.res.Start))/float64(time.Millisecond))
		out = append(out, m.Change)
		c.res.Held++
	}
	return out
}

func (c *Churner) onHeld(chs []Change, spec datapath.Spec) {
	if c.OnHeld != nil {
		for _, ch := range chs {
			c.OnHeld(ch, spec)
		}
	}
}

// cpuTime is this process's CPU time and that of its children waited
// for: the restore tools a sync runs are such children.
func cpuTime() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err != nil {
			continue
		}
		total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return total
}
