package k8starget

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/cnibench/cnibench/agent/nodeprobe"
	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/churn"
)

// A churn on a cluster: the churn's changes (endpoints scaled and
// replaced, Services added and removed) are written to the API server,
// and a change is reported held only once the node's probe shows it,
// though a probe shows the API server's state only lag after: for each
// change, when it is reported held, the node holds the changed Service
// exactly as the churn wrote it (a replaced endpoint included, which the
// counts cannot see), and its latency is at least lag.
func TestClusterChurnHeldOnlyOnceTheNodeHoldsIt(t *testing.T) {
	for _, dp := range []string{nodeprobe.KubeProxyNFTables, nodeprobe.Cilium} {
		t.Run(dp, func(t *testing.T) { testChurnHeldOnlyOnceHeld(t, dp) })
	}
}

func testChurnHeldOnlyOnceHeld(t *testing.T, dp string) {
	cs := newFakeCluster()
	const lag = 80 * time.Millisecond
	p := &lagProbe{cs: cs, lag: lag, datapath: dp}
	v := &SyncVerifier{Mode: SyncNode, Probes: []NodeProbe{{Node: "n1", Client: p}}, Timeout: 20 * time.Second, Interval: 5 * time.Millisecond}
	c := &ClusterServices{Clientset: cs, Namespace: testNS, RunID: "ch1", QPS: 2000, Burst: 100, Workers: 4, Sync: v, PerChange: true}
	// 8 changes/s: a sync (about lag) mostly carries one change, so a
	// replacement is not held by the counts of a scale-up beside it.
	ch, err := churn.New(c, nil, churn.Options{Services: 12, Endpoints: 4, Rate: 8})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var bad []string
	kinds := map[churn.Kind]int{}
	ch.OnHeld = func(change churn.Change, spec datapath.Spec) {
		mu.Lock()
		defer mu.Unlock()
		kinds[change.Kind]++
		have := p.visible()
		for _, s := range spec.Services {
			if s.Key() != change.Service {
				continue
			}
			got, ok := have[ScaleName(s.Name)]
			if !ok || !sameEndpoints(got, s.Endpoints) {
				bad = append(bad, fmt.Sprintf("change %d (%s %s) held, node has %v", change.Seq, change.Kind, s.Name, got))
			}
			return
		}
		// Not in the spec: removed, so the node must not have it.
		for name := range have {
			if strings.Contains(change.Service, strings.TrimPrefix(name, "cnb-scale-")+":") {
				bad = append(bad, fmt.Sprintf("change %d (%s) held, node still has %s", change.Seq, change.Kind, name))
			}
		}
	}
	ctx := context.Background()
	if _, err := ch.Program(ctx); err != nil {
		t.Fatal(err)
	}
	ch.Start(ctx)
	time.Sleep(1600 * time.Millisecond)
	res := ch.Stop()
	if res.Failures != 0 || !res.Confirmed || res.Pending != 0 {
		t.Fatalf("churn failures %d (%s), confirmed %v, pending %d", res.Failures, res.FirstError, res.Confirmed, res.Pending)
	}
	if res.Held < 10 {
		t.Fatalf("%d changes held in 1.6 s at 8/s", res.Held)
	}
	for _, k := range churn.Kinds() {
		if kinds[k] == 0 {
			t.Errorf("no %s change held (%v)", k, kinds)
		}
	}
	for _, l := range res.LatenciesMs {
		if l < float64(lag/time.Millisecond) {
			t.Errorf("a change held %.1f ms after it was made: the probe shows it only %s after", l, lag)
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d changes reported held before the node held them, e.g. %s", len(bad), strings.Join(first(bad, 3), "; "))
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	assertNoDummies(t, cs)
}

// An endpoint replaced leaves the counts as they were: the wait for it
// fails on a node that never shows it (here, the probe stopped at the
// state before), naming the endpoint, on kube-proxy and on Cilium alike.
func TestClusterChurnReplacementNotHeldFails(t *testing.T) {
	for _, dp := range []string{nodeprobe.KubeProxyNFTables, nodeprobe.Cilium} {
		t.Run(dp, func(t *testing.T) { testChurnReplacementNotHeld(t, dp) })
	}
}

func testChurnReplacementNotHeld(t *testing.T, dp string) {
	cs := newFakeCluster()
	p := &lagProbe{cs: cs, datapath: dp}
	v := &SyncVerifier{Mode: SyncNode, Probes: []NodeProbe{{Node: "n1", Client: p}}, Timeout: 300 * time.Millisecond, Interval: 5 * time.Millisecond}
	c := &ClusterServices{Clientset: cs, Namespace: testNS, RunID: "ch2", QPS: 2000, Burst: 100, Workers: 4, Sync: v, PerChange: true}
	ctx := context.Background()
	programThenReplace(t, ctx, c, p)
	_, err := c.Verify(ctx)
	if err == nil || !strings.Contains(err.Error(), "endpoint 198.18.250.1:") || !strings.Contains(err.Error(), "not there") {
		t.Fatalf("Verify with a replacement the node never shows: %v", err)
	}
	t.Log(err)
	p.thaw()
	if _, err := c.Verify(ctx); err != nil {
		t.Fatalf("once the node shows it: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// lagProbe is a node probe of kube-proxy's nftables mode (or of datapath,
// when set) that shows the API server's dummy Services and their
// endpoints as they were lag ago (each read records the API state; a read
// answers with the newest state at least lag old), with keys and endpoint
// keys as the real probe's: kube-proxy's for the Service ports asked by
// name, Cilium's for those asked by frontend (none for an old probe,
// which knows no frontends).
type lagProbe struct {
	cs       *fake.Clientset
	lag      time.Duration
	datapath string
	old      bool

	mu     sync.Mutex
	states []apiState
	frozen *apiState
}

type apiState struct {
	at       time.Time
	services map[string]corev1.Service
	eps      map[string][]datapath.Endpoint
}

func (p *lagProbe) snapshot() (apiState, error) {
	st := apiState{at: time.Now(), services: map[string]corev1.Service{}, eps: map[string][]datapath.Endpoint{}}
	l, err := p.cs.Tracker().List(corev1.SchemeGroupVersion.WithResource("services"), corev1.SchemeGroupVersion.WithKind("Service"), testNS)
	if err != nil {
		return st, err
	}
	sl, err := p.cs.Tracker().List(discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), testNS)
	if err != nil {
		return st, err
	}
	for _, s := range l.(*corev1.ServiceList).Items {
		if s.Labels[LabelRole] == "scale" {
			st.services[s.Name] = s
		}
	}
	for _, s := range sl.(*discoveryv1.EndpointSliceList).Items {
		name := s.Labels[discoveryv1.LabelServiceName]
		for _, ep := range s.Endpoints {
			st.eps[name] = append(st.eps[name], datapath.Endpoint{IP: netip.MustParseAddr(ep.Addresses[0]), Port: uint16(*s.Ports[0].Port)})
		}
	}
	return st, nil
}

// shown is the state a read shows now.
func (p *lagProbe) shown() (apiState, error) {
	st, err := p.snapshot()
	if err != nil {
		return st, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen != nil {
		return *p.frozen, nil
	}
	p.states = append(p.states, st)
	var out apiState
	for _, s := range p.states {
		if time.Since(s.at) >= p.lag {
			out = s
		}
	}
	return out, nil
}

func (p *lagProbe) freeze() {
	st, _ := p.shown()
	p.mu.Lock()
	p.frozen = &st
	p.mu.Unlock()
}

func (p *lagProbe) thaw() {
	p.mu.Lock()
	p.frozen = nil
	p.mu.Unlock()
}

// visible is what the node holds now: Service → endpoints (Services with
// endpoints only, as kube-proxy programs them).
func (p *lagProbe) visible() map[string][]datapath.Endpoint {
	st, _ := p.shown()
	out := map[string][]datapath.Endpoint{}
	for name := range st.services {
		if eps := st.eps[name]; len(eps) > 0 {
			out[name] = eps
		}
	}
	return out
}

func (p *lagProbe) NodeServices(_ context.Context, q nodeprobe.Query) (*nodeprobe.Report, error) {
	st, err := p.shown()
	if err != nil {
		return nil, err
	}
	rep := &nodeprobe.Report{Node: "n1", Datapath: or(p.datapath, nodeprobe.KubeProxyNFTables)}
	asked := func(sp nodeprobe.ServicePort) bool { return slices.Contains(q.EndpointsOf, nodeprobe.PortRef(sp)) }
	rep.EndpointKeysRead = len(q.EndpointsOf) > 0
	if rep.Datapath == nodeprobe.Cilium {
		asked = func(sp nodeprobe.ServicePort) bool {
			return slices.Contains(q.Frontends, nodeprobe.Key(nodeprobe.Cilium, sp))
		}
		rep.EndpointKeysRead = len(q.Frontends) > 0 && !p.old
		if len(q.EndpointsOf) > 0 && !rep.EndpointKeysRead {
			rep.Errors = append(rep.Errors, "endpoint keys: not read for cilium")
		}
	}
	for name, s := range st.services {
		eps := st.eps[name]
		if len(eps) == 0 {
			continue
		}
		ip, _ := netip.ParseAddr(s.Spec.ClusterIP)
		pt := s.Spec.Ports[0]
		sp := nodeprobe.ServicePort{Namespace: s.Namespace, Name: s.Name, PortName: pt.Name, Protocol: string(pt.Protocol), ClusterIP: ip, Port: uint16(pt.Port)}
		rep.Keys = append(rep.Keys, nodeprobe.Key(rep.Datapath, sp))
		rep.Services++
		rep.Endpoints += len(eps)
		if rep.EndpointKeysRead && asked(sp) {
			for _, ep := range eps {
				rep.EndpointKeys = append(rep.EndpointKeys, nodeprobe.EndpointKey(rep.Datapath, sp, netip.AddrPortFrom(ep.IP, ep.Port)))
			}
		}
	}
	return rep, nil
}

// Closing the datapath ends the waits still open with an error (a churn
// cut short by Ctrl-C), and a wait that ended leaves the next Program's
// poller alone.
func TestClusterChurnCloseEndsOpenWaits(t *testing.T) {
	cs := newFakeCluster()
	p := &lagProbe{cs: cs}
	v := &SyncVerifier{Mode: SyncNode, Probes: []NodeProbe{{Node: "n1", Client: p}}, Timeout: time.Minute, Interval: 5 * time.Millisecond}
	c := &ClusterServices{Clientset: cs, Namespace: testNS, RunID: "ch3", QPS: 2000, Burst: 100, Workers: 4, Sync: v, PerChange: true}
	ctx := context.Background()
	spec := datapath.Spec{Services: datapath.DummyServices(3, 2)}
	if _, err := c.Program(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Await()(ctx); err != nil {
		t.Fatalf("first Program: %v", err)
	}
	p.freeze()
	spec.Services[0].Endpoints = spec.Services[0].Endpoints[:1]
	if _, err := c.Program(ctx, spec); err != nil {
		t.Fatal(err)
	}
	wait := c.Await()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := wait(wctx); err == nil || !strings.Contains(err.Error(), "closed before every node held") {
		t.Fatalf("a wait open at Close: %v", err)
	}
}

// A Cilium probe that names no endpoints (one older than frontends in
// the query): a replaced endpoint is checked by the Service's key only,
// and the progress says so once, with the probe's reason.
func TestClusterChurnOldCiliumProbeChecksKeysOnly(t *testing.T) {
	cs := newFakeCluster()
	p := &lagProbe{cs: cs, datapath: nodeprobe.Cilium, old: true}
	var progress bytes.Buffer
	v := &SyncVerifier{Mode: SyncNode, Probes: []NodeProbe{{Node: "n1", Client: p}}, Timeout: 5 * time.Second, Interval: 5 * time.Millisecond, Progress: &syncWriter{w: &progress}}
	c := &ClusterServices{Clientset: cs, Namespace: testNS, RunID: "ch4", QPS: 2000, Burst: 100, Workers: 4, Sync: v, PerChange: true}
	ctx := context.Background()
	programThenReplace(t, ctx, c, p)
	if _, err := c.Verify(ctx); err != nil {
		t.Fatalf("Verify by key only: %v", err)
	}
	if want := "node n1: its cilium names no endpoints (endpoint keys: not read for cilium): a change of a Service's endpoints is checked by its key only"; strings.Count(progress.String(), want) != 1 {
		t.Errorf("progress %q: want once %q", progress.String(), want)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// ciliumRecorded is what nodeprobe.Read answered (real kernel maps, laid
// out as Cilium 1.20 writes them: nodeprobe's TestReadCiliumEndpointKeys)
// asked for the endpoints of dns 10.96.0.10:53/udp (3 active backends,
// one terminating, one in maintenance, one unhealthy), web
// 10.96.0.20:80/tcp (2 active), draining 10.96.0.30:80/tcp (only a
// terminating backend) and empty 10.96.0.40:80/tcp (none); dns also has
// 10.96.0.10:53/tcp.
const ciliumRecorded = `{"node":"node-t","datapath":"cilium","services":4,"endpoints":11,"bpf_map_bytes":755792,"maps":[{"name":"cilium_lb4_services_v2","type":"Hash","max_entries":4096,"entries":17,"memlock_bytes":394288},{"name":"cilium_lb4_back","type":"Hash","max_entries":4096,"memlock_bytes":361504}],"keys":["10.96.0.30:80/tcp","10.96.0.10:53/udp","10.96.0.10:53/tcp","10.96.0.20:80/tcp"],"endpoint_keys":["10.96.0.10:53/udp→198.19.1.5:53","10.96.0.10:53/udp→198.19.1.6:53","10.96.0.10:53/udp→198.19.2.5:53","10.96.0.20:80/tcp→198.19.1.7:8080","10.96.0.20:80/tcp→198.19.2.9:8080"],"endpoint_keys_read":true,"read_time":0}`

// The churn's checks against a recorded Cilium read go the exact way, as
// for kube-proxy: a Service by its frontend (protocol included), its
// endpoints by the active backends the read names.
func TestHeldOnRecordedCiliumRead(t *testing.T) {
	var rep nodeprobe.Report
	if err := json.Unmarshal([]byte(ciliumRecorded), &rep); err != nil {
		t.Fatal(err)
	}
	h := newHeldIndex(&rep)
	port := func(name, frontend, proto string) nodeprobe.ServicePort {
		ap := netip.MustParseAddrPort(frontend)
		return nodeprobe.ServicePort{Namespace: "scale", Name: name, PortName: "p", Protocol: proto, ClusterIP: ap.Addr(), Port: ap.Port()}
	}
	eps := func(s ...string) []netip.AddrPort {
		var out []netip.AddrPort
		for _, e := range s {
			out = append(out, netip.MustParseAddrPort(e))
		}
		return out
	}
	for _, c := range []struct {
		ck   serviceCheck
		want string // why, "" when held
	}{
		{serviceCheck{port: port("dns", "10.96.0.10:53", "UDP"), present: true, want: eps("198.19.1.5:53", "198.19.1.6:53", "198.19.2.5:53"), gone: eps("198.19.2.6:53")}, ""},
		{serviceCheck{port: port("dns", "10.96.0.10:53", "UDP"), present: true, want: eps("198.19.2.8:53")}, "dns endpoint 198.19.2.8:53 not there"},
		{serviceCheck{port: port("web", "10.96.0.20:80", "TCP"), present: true, want: eps("198.19.1.7:8080", "198.19.2.10:8080"), gone: eps("198.19.2.9:8080")},
			"web endpoint 198.19.2.10:8080 not there, web endpoint 198.19.2.9:8080 still there"},
		{serviceCheck{port: port("web", "10.96.0.20:80", "UDP"), present: true}, "web not there"},
		{serviceCheck{port: port("draining", "10.96.0.30:80", "TCP"), present: true, want: eps("198.19.1.8:8080")}, "draining endpoint 198.19.1.8:8080 not there"},
		{serviceCheck{port: port("empty", "10.96.0.40:80", "TCP"), present: true}, "empty not there"},
		{serviceCheck{port: port("empty", "10.96.0.40:80", "TCP")}, ""},
		{serviceCheck{port: port("dns", "10.96.0.10:53", "TCP")}, "dns still there"},
	} {
		if got := h.why(c.ck); got != c.want {
			t.Errorf("%s %s:%d/%s present %v want %v gone %v: %q, want %q", c.ck.port.Name, c.ck.port.ClusterIP, c.ck.port.Port, c.ck.port.Protocol, c.ck.present, c.ck.want, c.ck.gone, got, c.want)
		}
	}
}

// programThenReplace programs 3 dummy Services of 2 endpoints, verifies
// them, freezes the probe's view and programs a replacement (198.18.250.1)
// of Service 1's first endpoint, which the frozen node does not show.
func programThenReplace(t *testing.T, ctx context.Context, c *ClusterServices, p *lagProbe) {
	t.Helper()
	spec := datapath.Spec{Services: datapath.DummyServices(3, 2)}
	if _, err := c.Program(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	p.freeze()
	eps := slices.Clone(spec.Services[1].Endpoints)
	eps[0].IP = netip.MustParseAddr("198.18.250.1")
	spec.Services[1].Endpoints = eps
	if _, err := c.Program(ctx, spec); err != nil {
		t.Fatal(err)
	}
}
