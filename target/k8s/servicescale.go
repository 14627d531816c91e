package k8starget

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/sweep"
)

// Defaults of the cluster Service-scale sweep.
const (
	DefaultScaleQPS     = 50
	DefaultScaleBurst   = 100
	DefaultScaleWorkers = 16
	dummyNamespace      = "scale"             // datapath.DummyServices puts its Services there
	sliceManager        = "scale.cnibench.io" // a label value: no "/" allowed
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
	QPS       float64 // API writes per second (default 50)
	Burst     int     // default 100
	Workers   int     // parallel writers (default 16)
	Progress  io.Writer
	// Limiter paces every API write; nil = a token bucket of QPS and Burst.
	Limiter flowcontrol.RateLimiter
	// Datapath names the cluster's Service proxy in results ("cilium",
	// "kube-proxy-iptables"); "" = "cluster".
	Datapath string
	// Sync, when set, makes Verify wait for the nodes; nil = API only.
	Sync *SyncVerifier

	once       sync.Once
	writesDone time.Time       // end of the last Program's API writes
	want       datapath.Counts // the last Program's dummies
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
	}
	start := time.Now()
	want := dummies(spec)
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
		err = c.parallel(ctx, "deleting", remove, c.remove)
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

func (c *ClusterServices) labels() map[string]string {
	l := baseLabels(c.RunID, NameScale)
	l[LabelRole] = "scale"
	return l
}

// create makes one dummy Service and its EndpointSlices (one per target
// port), each write paced by the limiter.
func (c *ClusterServices) create(ctx context.Context, name string, s datapath.Service) error {
	proto := corev1.Protocol(s.Protocol)
	byPort := map[uint16][]string{}
	for _, ep := range s.Endpoints {
		byPort[ep.Port] = append(byPort[ep.Port], ep.IP.String())
	}
	var ports []uint16
	for p := range byPort {
		ports = append(ports, p)
	}
	sort.Slice(ports, func(i, j int) bool { return ports[i] < ports[j] })
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: c.labels()},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP,
			// No selector: the EndpointSlices below are ours, and the
			// EndpointSlice controller leaves Services without one alone.
			Ports: []corev1.ServicePort{{Name: s.PortName, Port: int32(s.Port), Protocol: proto, TargetPort: intstr.FromInt32(int32(ports[0]))}},
		},
	}
	if err := c.Limiter.Wait(ctx); err != nil {
		return err
	}
	if _, err := c.Clientset.CoreV1().Services(c.Namespace).Create(ctx, svc, metav1.CreateOptions{FieldManager: ManagedBy}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Service %s: %w", name, err)
	}
	for _, port := range ports {
		lbl := c.labels()
		lbl[discoveryv1.LabelServiceName] = name
		lbl[discoveryv1.LabelManagedBy] = sliceManager
		ready := true
		p, pname := int32(port), s.PortName
		slice := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: name + "-" + strconv.Itoa(int(port)), Namespace: c.Namespace, Labels: lbl},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &pname, Port: &p, Protocol: &proto}},
		}
		for _, ip := range byPort[port] {
			slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
		}
		if err := c.Limiter.Wait(ctx); err != nil {
			return err
		}
		if _, err := c.Clientset.DiscoveryV1().EndpointSlices(c.Namespace).Create(ctx, slice, metav1.CreateOptions{FieldManager: ManagedBy}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create EndpointSlice %s: %w", slice.Name, err)
		}
	}
	return nil
}

// remove deletes a dummy Service and its EndpointSlices.
func (c *ClusterServices) remove(ctx context.Context, name string) error {
	slices, err := c.Clientset.DiscoveryV1().EndpointSlices(c.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: c.selector() + "," + discoveryv1.LabelServiceName + "=" + name})
	if err != nil {
		return fmt.Errorf("list EndpointSlices of %s: %w", name, err)
	}
	for _, s := range slices.Items {
		if err := c.Limiter.Wait(ctx); err != nil {
			return err
		}
		if err := c.Clientset.DiscoveryV1().EndpointSlices(c.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete EndpointSlice %s: %w", s.Name, err)
		}
	}
	if err := c.Limiter.Wait(ctx); err != nil {
		return err
	}
	if err := c.Clientset.CoreV1().Services(c.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Service %s: %w", name, err)
	}
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
	bar := newProgressBar(c.Progress, what+" dummy Services", len(names))
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

// Verify implements datapath.Datapath: it counts the dummy Services and
// their EndpointSlice endpoints as the API server holds them; when they are
// all there and a Sync verifier is set, it then waits until every node
// holds them (an error names the node that did not in time).
func (c *ClusterServices) Verify(ctx context.Context) (datapath.Counts, error) {
	n, err := c.apiCounts(ctx)
	if err != nil || c.Sync == nil || n != c.want {
		return n, err
	}
	_, err = c.Sync.wait(ctx, c.writesDone, c.want)
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
	opts := metav1.ListOptions{LabelSelector: c.selector(), Limit: 500}
	for {
		l, err := c.Clientset.DiscoveryV1().EndpointSlices(c.Namespace).List(ctx, opts)
		if err != nil {
			return n, fmt.Errorf("list dummy EndpointSlices: %w", err)
		}
		for _, s := range l.Items {
			n.Endpoints += len(s.Endpoints)
		}
		if opts.Continue = l.Continue; opts.Continue == "" {
			return n, nil
		}
	}
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

// Close implements datapath.Datapath: every dummy goes.
func (c *ClusterServices) Close() error {
	c.init()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	have, err := c.existing(ctx)
	cancel()
	if err != nil {
		return err
	}
	var names []string
	for n := range have {
		names = append(names, n)
	}
	sort.Strings(names)
	// Its own context (Close also runs after Ctrl-C), long enough for two
	// paced writes per Service, plus slack.
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Minute+time.Duration(float64(2*len(names))/c.QPS*1.5*float64(time.Second)))
	defer cancel()
	return c.parallel(ctx, "deleting", names, c.remove)
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
