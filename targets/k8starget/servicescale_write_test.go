package k8starget

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/cnibench/cnibench/agent/nodeprobe"
	"github.com/cnibench/cnibench/datapath"
)

// The worker pool writes with exactly Workers requests in flight at most
// (and reaches it). The fake clientset neither rate-limits nor runs two
// requests at once (its reactors hold one lock), so each write is held
// in the limiter, just before it is sent, and counted there.
func TestClusterServicesWorkersBound(t *testing.T) {
	cs := newFakeCluster()
	lim := &peakLimiter{RateLimiter: flowcontrol.NewFakeAlwaysRateLimiter()}
	c := &ClusterServices{Clientset: cs, Namespace: testNS, RunID: "w1", Workers: 4, Limiter: lim}
	if _, err := c.Program(context.Background(), datapath.Spec{Services: datapath.DummyServices(40, 2)}); err != nil {
		t.Fatal(err)
	}
	if p := lim.peak.Load(); p != 4 {
		t.Errorf("peak %d writes in flight, want the 4 workers", p)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// A write the API server refuses stops the step with an error naming the
// object, the workers stop taking new Services, and Close still removes
// every object the step created.
func TestClusterServicesWriteErrorCleansUp(t *testing.T) {
	cs := newFakeCluster()
	var created atomic.Int32
	cs.PrependReactor("create", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.CreateAction).GetObject().(*corev1.Service)
		if s.Name == ScaleName("svc-30") {
			return true, nil, apierrors.NewForbidden(corev1.Resource("services"), s.Name, errors.New("quota exceeded"))
		}
		created.Add(1)
		time.Sleep(time.Millisecond)
		return false, nil, nil
	})
	c := &ClusterServices{Clientset: cs, Namespace: testNS, RunID: "w2", QPS: 5000, Burst: 5000, Workers: 4}
	ctx := context.Background()
	_, err := c.Program(ctx, datapath.Spec{Services: datapath.DummyServices(500, 2)})
	if err == nil || !strings.Contains(err.Error(), "create Service "+ScaleName("svc-30")) || !strings.Contains(err.Error(), "quota exceeded") {
		t.Fatalf("Program: %v, want the refused Service named", err)
	}
	if n := created.Load(); n == 0 || n >= 499 {
		t.Errorf("%d Services created after the error: the workers did not stop", n)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	assertNoDummies(t, cs)
}

// Close deletes the EndpointSlices by one DeleteCollection per shard on the
// run's selector (and the Services too, where the client has a REST
// client: TestDeleteCollectionsByShard); what the collection deletes leave
// behind (the fake serves none for Services, and with collection false
// none for slices) goes one by one. Nothing is listed after either way.
func TestClusterServicesCloseByCollection(t *testing.T) {
	for _, collection := range []bool{true, false} {
		cs := newFakeCluster()
		if collection {
			cs.PrependReactor("delete-collection", "endpointslices", deleteCollection(cs))
		}
		c := &ClusterServices{Clientset: cs, Namespace: testNS, RunID: "w3", QPS: 5000, Burst: 5000}
		ctx := context.Background()
		if _, err := c.Program(ctx, datapath.Spec{Services: datapath.DummyServices(50, 4)}); err != nil {
			t.Fatal(err)
		}
		cs.ClearActions()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		for _, a := range cs.Actions() {
			count[a.GetVerb()+" "+a.GetResource().Resource]++
			if dc, ok := a.(k8stesting.DeleteCollectionAction); ok {
				if sel := dc.GetListRestrictions().Labels.String(); !strings.Contains(sel, LabelRunID+"=w3") || !strings.Contains(sel, LabelRole+"=scale") {
					t.Errorf("DeleteCollection selector %q is not the run's dummies", sel)
				}
			}
		}
		wantSliceDeletes := 0
		if !collection {
			wantSliceDeletes = 50 // the leftover pass deletes each slice
		}
		wantLeft, wantServiceDeletes := 50, 50
		if count["delete-collection endpointslices"] != scaleShards || count["delete endpointslices"] != wantSliceDeletes || count["delete services"] != wantServiceDeletes {
			t.Errorf("collection %v: calls %v", collection, count)
		}
		if d := c.Deleted(); d == nil || d.Services != 50 || d.Leftovers != wantLeft || d.Time <= 0 {
			t.Errorf("collection %v: deleted %+v", collection, d)
		}
		assertNoDummies(t, cs)
	}
}

// deleteCollection makes the fake delete what a DeleteCollection selects,
// as an API server does.
func deleteCollection(cs *fake.Clientset) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		dc := a.(k8stesting.DeleteCollectionAction)
		gvr := a.GetResource()
		l, err := cs.Tracker().List(gvr, discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		for _, s := range l.(*discoveryv1.EndpointSliceList).Items {
			if dc.GetListRestrictions().Labels.Matches(labels.Set(s.Labels)) {
				if err := cs.Tracker().Delete(gvr, s.Namespace, s.Name); err != nil {
					return true, nil, err
				}
			}
		}
		return true, nil, nil
	}
}

// A removal that stops making progress (every delete hangs) is given up
// after RemovalStall with an error that says so; a slow one that keeps
// going is not, however long it takes in all.
func TestCloseGivesUpOnlyWhenStalled(t *testing.T) {
	for _, hang := range []bool{false, true} {
		cs := newFakeCluster()
		c := &ClusterServices{Clientset: cs, Namespace: testNS, RunID: "w7", QPS: 5000, Burst: 5000, Workers: 2,
			RemovalStall: 300 * time.Millisecond}
		ctx := context.Background()
		if _, err := c.Program(ctx, datapath.Spec{Services: datapath.DummyServices(20, 1)}); err != nil {
			t.Fatal(err)
		}
		// 20 Services and 20 slices, 2 at a time, 50 ms each: about 0.5 s
		// in all, longer than the stall but never stalled.
		delay := 50 * time.Millisecond
		if hang {
			delay = 2 * time.Second
		}
		cs.PrependReactor("delete", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
			time.Sleep(delay)
			return false, nil, nil
		})
		start := time.Now()
		err := c.Close()
		took := time.Since(start)
		switch {
		case !hang && err != nil:
			t.Errorf("a slow removal that kept going failed after %s: %v", took, err)
		case !hang:
			assertNoDummies(t, cs)
		case err == nil || !strings.Contains(err.Error(), "made no progress for 300ms"):
			t.Errorf("a hung removal: error %v after %s, want one saying it made no progress", err, took)
		}
	}
}

func assertNoDummies(t *testing.T, cs *fake.Clientset) {
	t.Helper()
	left, err := Find(context.Background(), cs, testNS, ManagedSelector())
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("left behind: %s", Describe(left))
	}
}

// A step's timing: the API writes (every Service and EndpointSlice one
// write), then the node sync; each Service's programming latency runs
// from its own last write to the first probe read that holds it, which
// a probe shows only after lag: so every latency is at least about lag,
// and none is longer than the writes and the sync together.
func TestClusterServicesTimingAndLatency(t *testing.T) {
	cs := newFakeCluster()
	const n, lag = 40, 60 * time.Millisecond
	p := &keyProbe{cs: cs, lag: lag, first: map[string]time.Time{}}
	v := &SyncVerifier{Mode: SyncNode, Probes: []NodeProbe{{Node: "n1", Client: p}}, Timeout: 20 * time.Second, Interval: 10 * time.Millisecond}
	c := &ClusterServices{Clientset: cs, Namespace: testNS, RunID: "w4", QPS: 400, Burst: 1, Workers: 8, Sync: v}
	ctx := context.Background()
	spec := datapath.Spec{Services: datapath.DummyServices(n, 2)}
	if _, err := c.Program(ctx, spec); err != nil {
		t.Fatal(err)
	}
	got, err := c.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Holds(c.Expected(spec)); err != nil {
		t.Fatal(err)
	}
	s := c.SyncStats()
	if s == nil || s.Writes != 2*n || s.APIWrites < time.Duration(2*n-1)*time.Second/400 {
		t.Fatalf("sync %+v: want %d writes taking at least %s at 400/s", s, 2*n, time.Duration(2*n-1)*time.Second/400)
	}
	if s.NodeSync <= 0 || s.NodeSync != s.Nodes[0].Time {
		t.Errorf("node sync %s, node n1 %s", s.NodeSync, s.Nodes[0].Time)
	}
	l := s.Latency
	if l == nil || l.Services != n || l.Unresolved != 0 || l.Resolution < v.Interval || l.Resolution > s.APIWrites+s.NodeSync {
		t.Fatalf("latency %+v: want %d Services at a resolution of at least %s", l, n, v.Interval)
	}
	if !(l.P50 <= l.P99 && l.P99 <= l.Max) || l.P50 < lag/2 || l.Max > s.APIWrites+s.NodeSync+lag {
		t.Errorf("latency p50 %s p99 %s max %s: want ordered, at least ~%s, at most writes %s + sync %s", l.P50, l.P99, l.Max, lag, s.APIWrites, s.NodeSync)
	}
	if p.reads.Load() < 3 {
		t.Errorf("%d probe reads: the probes were not polled during the writes", p.reads.Load())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// keyProbe is a node probe of kube-proxy's nftables mode that shows each
// dummy Service (its key, 2 endpoints) lag after it first saw it in the
// API server with its EndpointSlice.
type keyProbe struct {
	cs    *fake.Clientset
	lag   time.Duration
	reads atomic.Int32
	mu    sync.Mutex
	first map[string]time.Time
}

func (p *keyProbe) NodeServices(context.Context, nodeprobe.Query) (*nodeprobe.Report, error) {
	p.reads.Add(1)
	rep := &nodeprobe.Report{Node: "n1", Datapath: nodeprobe.KubeProxyNFTables}
	l, err := p.cs.Tracker().List(corev1.SchemeGroupVersion.WithResource("services"), corev1.SchemeGroupVersion.WithKind("Service"), testNS)
	if err != nil {
		return nil, err
	}
	sl, err := p.cs.Tracker().List(discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), testNS)
	if err != nil {
		return nil, err
	}
	sliced := map[string]bool{}
	for _, s := range sl.(*discoveryv1.EndpointSliceList).Items {
		sliced[s.Labels[discoveryv1.LabelServiceName]] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for _, s := range l.(*corev1.ServiceList).Items {
		if s.Labels[LabelRole] != "scale" || !sliced[s.Name] {
			continue // a proxy programs a Service once it has endpoints
		}
		first, ok := p.first[s.Name]
		if !ok {
			p.first[s.Name], first = now, now
		}
		if now.Sub(first) < p.lag {
			continue
		}
		ip, _ := netip.ParseAddr(s.Spec.ClusterIP)
		pt := s.Spec.Ports[0]
		rep.Keys = append(rep.Keys, nodeprobe.Key(rep.Datapath, nodeprobe.ServicePort{ClusterIP: ip, Port: uint16(pt.Port), Protocol: string(pt.Protocol)}))
		rep.Services++
		rep.Endpoints += 2
	}
	return rep, nil
}

// The Services' DeleteCollection goes through the REST client (client-go's
// typed Service client has none): one DELETE on the collection with the
// dummies' selector; a server without it (405), or one that gives up on
// it (504: the API server's request timeout at 10,000 Services), means one
// by one, not an error; a refusal is an error naming what failed.
func TestDeleteServiceCollection(t *testing.T) {
	for _, c := range []struct {
		status int
		ok     bool
		err    string
	}{{http.StatusOK, true, ""}, {http.StatusMethodNotAllowed, false, ""}, {http.StatusGatewayTimeout, false, ""}, {http.StatusForbidden, false, "delete the dummy Services"}} {
		var got []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got = append(got, r.Method+" "+r.URL.Path+"?"+r.URL.Query().Get("labelSelector"))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(c.status)
			if c.status == http.StatusOK {
				fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
				return
			}
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":%d,"reason":"%s"}`, c.status,
				map[int]string{405: "MethodNotAllowed", 504: "Timeout", 403: "Forbidden"}[c.status])
		}))
		cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		d := &ClusterServices{Clientset: cs, Namespace: testNS, RunID: "w5"}
		d.init()
		ok, err := d.deleteServiceCollection(context.Background(), d.selector())
		srv.Close()
		if ok != c.ok || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("status %d: ok %v, error %v; want %v, %q", c.status, ok, err, c.ok, c.err)
		}
		want := "DELETE /api/v1/namespaces/" + testNS + "/services?" + d.selector()
		if len(got) != 1 || got[0] != want {
			t.Errorf("status %d: requests %q, want %q", c.status, got, want)
		}
	}
}

// The dummies are deleted by one DeleteCollection per shard and kind, each
// shard's selector once: 16 smaller collections in parallel instead of one
// that outlasts the API server's request timeout at 10,000 Services.
func TestDeleteCollectionsByShard(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.Method+" "+r.URL.Path+"?"+r.URL.Query().Get("labelSelector")]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	d := &ClusterServices{Clientset: cs, Namespace: testNS, RunID: "w6", Workers: 4}
	d.init()
	done, err := d.deleteCollections(context.Background())
	if err != nil || !done {
		t.Fatalf("deleteCollections: done %v, error %v", done, err)
	}
	for i := range scaleShards {
		sel := d.selector() + "," + LabelShard + "=" + strconv.Itoa(i)
		for _, path := range []string{"/api/v1/namespaces/" + testNS + "/services", "/apis/discovery.k8s.io/v1/namespaces/" + testNS + "/endpointslices"} {
			if n := got["DELETE "+path+"?"+sel]; n != 1 {
				t.Errorf("DELETE %s?%s sent %d times, want once", path, sel, n)
			}
		}
	}
	if len(got) != 2*scaleShards {
		t.Errorf("%d distinct requests, want %d: %v", len(got), 2*scaleShards, got)
	}
	// Every dummy's objects carry its shard, the same for the Service and
	// its slices, and the shards spread the names.
	seen := map[string]bool{}
	for i := range 200 {
		name := fmt.Sprintf("cnb-scale-%05d", i)
		svc, slices := dummyObjects(testNS, "w6", name, datapath.DummyServices(1, 2)[0])
		shard := svc.Labels[LabelShard]
		for _, sl := range slices {
			if sl.Labels[LabelShard] != shard {
				t.Fatalf("%s: slice shard %q, Service shard %q", name, sl.Labels[LabelShard], shard)
			}
		}
		seen[shard] = true
	}
	if len(seen) != scaleShards {
		t.Errorf("200 names fell in %d shards, want all %d", len(seen), scaleShards)
	}
}

// A probe whose reads are slow is read less often (readCostFactor × a
// read's duration apart, not every interval), and the latency's resolution
// says how far apart the reads were.
func TestSlowProbeReadLessOften(t *testing.T) {
	const cost = 30 * time.Millisecond
	p := &slowProbe{cost: cost}
	v := &SyncVerifier{Mode: SyncNode, Probes: []NodeProbe{{Node: "n1", Client: p}}, Interval: 5 * time.Millisecond}
	v.defaults()
	l := newLatencyTracker()
	l.expect("s1", nodeprobe.ServicePort{ClusterIP: netip.MustParseAddr("198.18.0.1"), Port: 80, Protocol: "TCP"}, time.Now())
	ctx, cancel := context.WithTimeout(context.Background(), 900*time.Millisecond)
	defer cancel()
	v.poll(ctx, l)
	// A read and a 4 × 30 ms pause: about 6 reads in 0.9 s, where reading
	// every 5 ms interval would make about 26.
	if n := p.reads.Load(); n < 3 || n > 9 {
		t.Errorf("%d reads of a 30 ms probe in 0.9 s, want about 6", n)
	}
	res := l.result([]string{"n1"}, v.Interval)
	if res == nil || res.Resolution < readCostFactor*cost {
		t.Errorf("latency %+v: want a resolution of at least %s", res, readCostFactor*cost)
	}
}

// slowProbe answers after cost with an empty nftables-mode report.
type slowProbe struct {
	cost  time.Duration
	reads atomic.Int32
}

func (p *slowProbe) NodeServices(ctx context.Context, _ nodeprobe.Query) (*nodeprobe.Report, error) {
	p.reads.Add(1)
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(p.cost):
	}
	return &nodeprobe.Report{Node: "n1", Datapath: nodeprobe.KubeProxyNFTables}, nil
}
