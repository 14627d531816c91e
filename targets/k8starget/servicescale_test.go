package k8starget

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/sweep"
)

// Dummy Services are created with EndpointSlices (never v1 Endpoints), in
// parallel, paced by the client-side limiter, and a smaller step deletes
// the surplus; Verify counts what the API server holds.
func TestClusterServicesProgram(t *testing.T) {
	cs := newFakeCluster()
	lim := &peakLimiter{RateLimiter: flowcontrol.NewFakeAlwaysRateLimiter()}
	var progress bytes.Buffer
	c := &ClusterServices{Clientset: cs, Namespace: testNS, RunID: "scale1", Workers: 8, Limiter: lim, Progress: &syncWriter{w: &progress}}
	ctx := context.Background()
	spec := datapath.Spec{Services: append(datapath.DummyServices(60, 3), datapath.Service{Namespace: testNS, Name: "cnibench-node1-pod0"})}
	if _, err := c.Program(ctx, spec); err != nil {
		t.Fatal(err)
	}
	got, err := c.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := c.Expected(spec); got != want || got.Services != 60 || got.Endpoints != 180 {
		t.Errorf("verify %+v, expected %+v, want 60 Services / 180 endpoints", got, want)
	}
	if lim.peak.Load() < 2 {
		t.Errorf("writes never overlapped (peak %d in flight with 8 workers)", lim.peak.Load())
	}
	for _, a := range cs.Actions() {
		if a.GetResource().Resource == "endpoints" {
			t.Fatalf("v1 Endpoints used: %s", a.GetVerb())
		}
	}
	slices, _ := cs.DiscoveryV1().EndpointSlices(testNS).List(ctx, metav1.ListOptions{})
	for _, s := range slices.Items {
		if s.Labels["kubernetes.io/service-name"] == "" || s.Labels["endpointslice.kubernetes.io/managed-by"] != sliceManager || s.Labels[LabelManagedBy] != ManagedBy {
			t.Fatalf("slice %s labels %v", s.Name, s.Labels)
		}
	}
	if !strings.Contains(progress.String(), "creating dummy Services [") || !strings.Contains(progress.String(), "60/60 100%") {
		t.Errorf("progress: %q", progress.String())
	}
	// Down to 10: 50 Services and their slices go.
	if _, err := c.Program(ctx, datapath.Spec{Services: datapath.DummyServices(10, 3)}); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Verify(ctx); got.Services != 10 || got.Endpoints != 30 {
		t.Errorf("after shrinking: %+v", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	left, _ := Find(ctx, cs, testNS, ManagedSelector())
	if len(left) != 0 {
		t.Errorf("left: %s", Describe(left))
	}
}

// The limiter paces writes: 40 writes at 100/s with a burst of 1 take at
// least ~0.4 s however many workers there are.
func TestClusterServicesRateLimited(t *testing.T) {
	cs := newFakeCluster()
	c := &ClusterServices{Clientset: cs, Namespace: testNS, RunID: "scale2", QPS: 100, Burst: 1, Workers: 16}
	start := time.Now()
	if _, err := c.Program(context.Background(), datapath.Spec{Services: datapath.DummyServices(20, 1)}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 350*time.Millisecond {
		t.Errorf("40 writes at 100/s took %s: not rate limited", took)
	}
}

// The sweep package drives the cluster datapath like a lab one.
func TestSweepOnCluster(t *testing.T) {
	cs := newFakeCluster()
	c := &ClusterServices{Clientset: cs, Namespace: testNS, RunID: "scale3", QPS: 1000, Burst: 1000}
	test := []datapath.Service{{Namespace: testNS, Name: "cnibench-node1-pod0", VIP: datapath.TestVIP(0), Port: 5203, Protocol: datapath.TCP,
		Endpoints: []datapath.Endpoint{{IP: datapath.DummyEndpointCIDR.Addr(), Port: 5203}}}}
	var measured []int
	steps, err := sweep.Run(context.Background(), c, test, sweep.Options{Steps: []int{0, 5, 25}, Endpoints: 2},
		func(_ context.Context, st sweep.Step) error { measured = append(measured, st.Services); return nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 3 || len(measured) != 3 || steps[2].Counts.Services != 25 || steps[2].Counts.Endpoints != 50 {
		t.Errorf("steps %+v measured %v", steps, measured)
	}
	c.Close()
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// peakLimiter records how many writers wait at once: it holds each for a
// moment so that overlapping workers show.
type peakLimiter struct {
	flowcontrol.RateLimiter
	inflight, peak atomic.Int32
}

func (l *peakLimiter) Wait(ctx context.Context) error {
	n := l.inflight.Add(1)
	for {
		p := l.peak.Load()
		if n <= p || l.peak.CompareAndSwap(p, n) {
			break
		}
	}
	time.Sleep(time.Millisecond)
	l.inflight.Add(-1)
	return l.RateLimiter.Wait(ctx)
}
