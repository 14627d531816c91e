package k8starget

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/sweep"
)

// Defaults of the cluster Service-scale sweep's API writes (each Service
// and each EndpointSlice is one write; reads are not paced by us): 300 writes/s
// keeps a real API server busy (a step of 10,000 Services × 1
// EndpointSlice is about 20,000 writes, 67 s), and at most 32 writes in
// flight stay below the seats API Priority and Fairness gives a normal
// user's priority level (global-default: about 49 of the default 600), so
// they are paced by us, not queued or rejected with 429 by the server.
// kube-burner's jobs default to 20 QPS/20 burst, which would make such a
// step 17 minutes.
const (
	DefaultScaleQPS     = 300
	DefaultScaleBurst   = 300
	DefaultScaleWorkers = 32
	MaxScaleQPS         = 5000
	dummyNamespace      = "scale" // datapath.DummyServices puts its Services there
	// sliceManager is our EndpointSlices' managed-by label value: a label
	// value (no "/"), and not the EndpointSlice controller's
	// "endpointslice-controller.k8s.io", so it never adopts them.
	sliceManager = "scale.cnibench.io"
)

// ClusterServices is the Service-scale sweep's datapath on a real cluster
// (it implements datapath.Datapath, so the sweep package drives it as it
// drives the lab's): Program makes the spec's dummy Services exist as real
// ClusterIP Services in the run's namespace, each with EndpointSlices
// (never v1 Endpoints), created and deleted in parallel under a
// client-side rate limit, with a progress bar. The spec's test Services are
// the target's own Services and are left alone.
//
// Verify checks what the API server holds and then, with a Sync verifier,
// waits until every node's kube-proxy or Cilium holds it too, as the
// node probes read it (servicescale_sync.go).
type ClusterServices struct {
	Clientset kubernetes.Interface
	Namespace string
	RunID     string
	QPS       float64 // API writes per second (default DefaultScaleQPS)
	Burst     int     // default DefaultScaleBurst
	Workers   int     // parallel writers (default DefaultScaleWorkers)
	// RemovalStall: Close gives up after this long without a delete sent
	// (default DefaultRemovalStall).
	RemovalStall time.Duration
	Progress     io.Writer
	// Limiter paces every API write; nil = a token bucket of QPS and Burst.
	Limiter flowcontrol.RateLimiter
	// Datapath names the cluster's Service proxy in results ("cilium",
	// "kube-proxy-iptables"); "" = "cluster".
	Datapath string
	// Sync, when set, makes Verify wait for the nodes; nil = API only.
	Sync *SyncVerifier
	// PerChange is the churn's mode (servicescale_changes.go): Program
	// writes what changed since the last one (endpoints too) without a
	// progress bar for a few writes, and Verify waits until every node
	// holds each change, by the probes' keys.
	PerChange bool

	once        sync.Once
	writesStart time.Time       // start of the last Program's API writes
	writesDone  time.Time       // and their end
	writes      atomic.Int64    // API write requests of the last Program
	want        datapath.Counts // the last Program's dummies
	deleted     *Deleted        // what Close removed

	mu         sync.Mutex
	written    map[string]datapath.Service // PerChange: each dummy as the API server holds it
	clusterIPs map[string]netip.Addr       // dummies created, their ClusterIPs
	checks     map[string]*serviceCheck    // PerChange: the current Program's changes, by Service
	latest     map[string]*serviceCheck    // PerChange: each Service's last check not yet held
	waits      []*heldWait                 // PerChange: Programs not yet held by every node
	lastWait   *heldWait                   // the last Program's (Await)
	polling    bool                        // the poller runs
	stopPoll   context.CancelFunc          // ends it (Close)
	pollCtx    context.Context
}

// ScaleName is the Service name of dummy i ("svc-17" → "cnb-scale-svc-17").
func ScaleName(dummy string) string { return "cnb-scale-" + dummy }

func (c *ClusterServices) init() {
	c.once.Do(func() {
		if c.QPS <= 0 {
			c.QPS = DefaultScaleQPS
		}
		if c.Burst <= 0 {
			c.Burst = DefaultScaleBurst
		}
		if c.Workers <= 0 {
			c.Workers = DefaultScaleWorkers
		}
		if c.Limiter == nil {
			c.Limiter = flowcontrol.NewTokenBucketRateLimiter(float32(c.QPS), c.Burst)
		}
	})
}

// Name implements datapath.Datapath.
func (c *ClusterServices) Name() string { return or(c.Datapath, "cluster") }

func (c *ClusterServices) selector() string {
	return RunSelector(c.RunID) + "," + LabelRole + "=scale"
}

// dummies are the spec's Services the sweep added (not the test ones).
func dummies(spec datapath.Spec) map[string]datapath.Service {
	out := map[string]datapath.Service{}
	for _, s := range spec.Services {
		if s.Namespace == dummyNamespace {
			out[ScaleName(s.Name)] = s
		}
	}
	return out
}

// Program implements datapath.Datapath: it creates the dummies that are
// missing and deletes the ones the spec no longer has.
func (c *ClusterServices) Program(ctx context.Context, spec datapath.Spec) (datapath.ProgramStats, error) {
	c.init()
	if c.Sync != nil {
		// Before the first step writes anything: what the nodes hold
		// without our dummies (not counted as programming time).
		if err := c.Sync.readBaseline(ctx); err != nil {
			return datapath.ProgramStats{}, fmt.Errorf("node sync baseline: %w", err)
		}
		c.Sync.setLast(nil, nil) // a step that fails before its sync has none
		if !c.PerChange {
			// The probes are polled while the writes run, so each Service's
			// programming latency is measured from its own write.
			stop := c.Sync.beginStep(ctx)
			defer stop()
		}
	}
	c.writes.Store(0)
	start := time.Now()
	c.writesStart = start
	want := dummies(spec)
	if c.PerChange {
		c.mu.Lock()
		c.checks = map[string]*serviceCheck{}
		c.mu.Unlock()
		err := c.programChanges(ctx, want)
		c.writesDone, c.want = time.Now(), c.Expected(spec)
		c.register(c.writesDone)
		return datapath.ProgramStats{Apply: c.writesDone.Sub(start)}, err
	}
	have, err := c.existing(ctx)
	if err != nil {
		return datapath.ProgramStats{}, err
	}
	var create, remove []string
	for name := range want {
		if !have[name] {
			create = append(create, name)
		}
	}
	for name := range have {
		if _, ok := want[name]; !ok {
			remove = append(remove, name)
		}
	}
	sort.Strings(create)
	sort.Strings(remove)
	gen := time.Since(start)
	err = c.parallel(ctx, "creating", create, func(ctx context.Context, name string) error {
		return c.create(ctx, name, want[name])
	})
	if err == nil {
		err = c.removeSome(ctx, remove)
	}
	c.writesDone, c.want = time.Now(), c.Expected(spec)
	return datapath.ProgramStats{Generate: gen, Apply: c.writesDone.Sub(start) - gen}, err
}

// existing lists the dummy Services there are now.
func (c *ClusterServices) existing(ctx context.Context) (map[string]bool, error) {
	have := map[string]bool{}
	opts := metav1.ListOptions{LabelSelector: c.selector(), Limit: 500}
	for {
		l, err := c.Clientset.CoreV1().Services(c.Namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list dummy Services: %w", err)
		}
		for _, s := range l.Items {
			have[s.Name] = true
		}
		if opts.Continue = l.Continue; opts.Continue == "" {
			return have, nil
		}
	}
}

// create makes one dummy Service and its EndpointSlices (one per target
// port), each write paced by the limiter.
func (c *ClusterServices) create(ctx context.Context, name string, s datapath.Service) error {
	svc, slices := dummyObjects(c.Namespace, c.RunID, name, s)
	if err := c.write(ctx); err != nil {
		return err
	}
	made, err := c.Clientset.CoreV1().Services(c.Namespace).Create(ctx, svc, metav1.CreateOptions{FieldManager: ManagedBy})
	if apierrors.IsAlreadyExists(err) && c.PerChange {
		// Its ClusterIP is what the probes key it by.
		if made, err = c.Clientset.CoreV1().Services(c.Namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("get Service %s: %w", name, err)
		}
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Service %s: %w", name, err)
	}
	for _, slice := range slices {
		if err := c.write(ctx); err != nil {
			return err
		}
		if _, err := c.Clientset.DiscoveryV1().EndpointSlices(c.Namespace).Create(ctx, slice, metav1.CreateOptions{FieldManager: ManagedBy}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create EndpointSlice %s: %w", slice.Name, err)
		}
	}
	// Its objects are all in the API server now: the start of its
	// programming latency. (One that existed already has no ClusterIP
	// here and is not timed.)
	if made != nil {
		if ip, err := netip.ParseAddr(made.Spec.ClusterIP); err == nil {
			c.created(name, ip, s)
			if c.Sync != nil && !c.PerChange {
				c.Sync.expect(name, c.port(name, ip, s), time.Now())
			}
		}
	}
	return nil
}

// write waits for the limiter before one API write and counts it.
func (c *ClusterServices) write(ctx context.Context) error {
	if err := c.Limiter.Wait(ctx); err != nil {
		return err
	}
	c.writes.Add(1)
	return nil
}

// parallel runs fn on every name with c.Workers workers, showing progress;
// the first error stops the rest.
func (c *ClusterServices) parallel(ctx context.Context, what string, names []string, fn func(context.Context, string) error) error {
	if len(names) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan string)
	var done atomic.Int64
	var once sync.Once
	var firstErr error
	var wg sync.WaitGroup
	for range min(c.Workers, len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range jobs {
				if err := fn(ctx, name); err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
				done.Add(1)
			}
		}()
	}
	var out io.Writer = c.Progress
	if c.PerChange && len(names) < perChangeBarMin {
		out = nil // a churn's sync: a few writes, many times a second
	}
	bar := newProgressBar(out, what+" dummy Services", len(names))
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(250 * time.Millisecond):
				bar.update(int(done.Load()))
			}
		}
	}()
feed:
	for _, n := range names {
		select {
		case jobs <- n:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	close(stop)
	bar.finish(int(done.Load()))
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// perChangeBarMin: a PerChange Program shows a progress bar from this many
// writes of a kind (its first, steady-state Program).
const perChangeBarMin = 100

// Verify implements datapath.Datapath: it counts the dummy Services and
// their EndpointSlice endpoints as the API server holds them; when they are
// all there and a Sync verifier is set, it then waits until every node
// holds them (an error names the node that did not in time). PerChange,
// it first waits until every node holds every Program's changes, then
// counts the API server's objects and the nodes' (at least those).
func (c *ClusterServices) Verify(ctx context.Context) (datapath.Counts, error) {
	if c.PerChange && c.Sync != nil {
		if err := c.awaitAll(ctx); err != nil {
			return datapath.Counts{}, err
		}
		if n, err := c.apiCounts(ctx); err != nil || n != c.want {
			return n, err
		}
		return c.want, c.Sync.waitCounts(ctx, c.writesDone, c.want)
	}
	n, err := c.apiCounts(ctx)
	if err != nil || c.Sync == nil || n != c.want {
		return n, err
	}
	res, err := c.Sync.wait(ctx, c.writesDone, c.want)
	if res != nil {
		res.APIWrites, res.Writes = c.writesDone.Sub(c.writesStart), int(c.writes.Load())
	}
	return n, err
}

// SyncStats implements sweep.SyncReporter: the last Verify's node sync.
func (c *ClusterServices) SyncStats() *sweep.Sync {
	if c.Sync == nil {
		return nil
	}
	return c.Sync.Last()
}

// apiCounts counts the dummies and their endpoints in the API server.
func (c *ClusterServices) apiCounts(ctx context.Context) (datapath.Counts, error) {
	var n datapath.Counts
	have, err := c.existing(ctx)
	if err != nil {
		return n, err
	}
	n.Services = len(have)
	err = c.eachSlice(ctx, func(s *discoveryv1.EndpointSlice) { n.Endpoints += len(s.Endpoints) })
	return n, err
}

// Expected implements datapath.Datapath: the spec's dummies.
func (c *ClusterServices) Expected(spec datapath.Spec) datapath.Counts {
	var n datapath.Counts
	for _, s := range dummies(spec) {
		n.Services++
		n.Endpoints += len(s.Endpoints)
	}
	return n
}

// Memory implements datapath.Datapath: the client node's Cilium BPF map
// memory as its probe read it at the last sync; other datapaths (and API
// only sync) report none.
func (c *ClusterServices) Memory(context.Context) (datapath.Memory, error) {
	if c.Sync != nil {
		if m, ok := c.Sync.memory(); ok {
			return m, nil
		}
	}
	return datapath.Memory{}, fmt.Errorf("datapath memory: only Cilium's BPF maps are read, by the node probes: %w", datapath.ErrUnsupported)
}

// progressBar draws "label [#####.....] 340/1000 34% 45/s" on one line.
type progressBar struct {
	w     io.Writer
	label string
	total int
	start time.Time
}

func newProgressBar(w io.Writer, label string, total int) *progressBar {
	return &progressBar{w: w, label: label, total: total, start: time.Now()}
}

func (b *progressBar) line(done int) string {
	const width = 30
	fill := width * done / max(b.total, 1)
	rate := float64(done) / max(time.Since(b.start).Seconds(), 1e-3)
	return fmt.Sprintf("%s [%s%s] %d/%d %3d%% %.0f/s", b.label, strings.Repeat("#", fill), strings.Repeat(".", width-fill),
		done, b.total, 100*done/max(b.total, 1), rate)
}

func (b *progressBar) update(done int) {
	if b.w != nil {
		fmt.Fprintf(b.w, "\r%s", b.line(done))
	}
}

func (b *progressBar) finish(done int) {
	if b.w != nil {
		fmt.Fprintf(b.w, "\r%s in %s\n", b.line(done), time.Since(b.start).Round(time.Millisecond))
	}
}
