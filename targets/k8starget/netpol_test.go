package k8starget

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cnibench/cnibench/engine"
)

func init() { netPolWait, netPolInterval = 300*time.Millisecond, 5*time.Millisecond }

// netPolLayout is a layout with every placement (two pod servers, two
// host agents) and the check on.
func netPolLayout() Layout {
	l := Layout{Namespace: testNS, RunID: "np1", Image: "x:y", PullPolicy: corev1.PullIfNotPresent,
		Nodes: [2]string{"worker-a", "worker-b"}, Resources: DefaultResources, NetPolCheck: true}
	l.Endpoints, l.Services = endpointsFor(allPlacements, 1)
	return l
}

// The policy selects exactly the pod-network servers (not the client, not
// the hostNetwork agents, not the denied prober), allows them every port
// from the client pod only and the control port from anywhere; the denied
// prober is a pod-network agent on node0 with a role no rule allows; the
// API server would accept both; without the check neither exists.
func TestNetPolManifests(t *testing.T) {
	l := netPolLayout()
	m, err := Build(l)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.NetworkPolicies) != 1 {
		t.Fatalf("%d policies, want 1", len(m.NetworkPolicies))
	}
	np := m.NetworkPolicies[0]
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	var selected []string
	var denied *corev1.Pod
	for _, p := range m.Pods {
		if sel.Matches(labels.Set(p.Labels)) {
			selected = append(selected, p.Labels[LabelEndpoint])
		}
		if p.Labels[LabelEndpoint] == NetPolDeniedEndpoint {
			denied = p
		}
	}
	if want := []string{"node0-pod1", "node1-pod0"}; !slices.Equal(selected, want) {
		t.Errorf("policy selects %v, want %v", selected, want)
	}
	if denied == nil || denied.Spec.HostNetwork || affinityNode(denied) != "worker-a" || denied.Labels[LabelRole] != RoleNetPolDenied {
		t.Fatalf("denied prober: %+v", denied)
	}
	// Who may connect to a server's data port: evaluate the rules.
	may := func(p *corev1.Pod, port int32) bool {
		for _, r := range np.Spec.Ingress {
			portOK := len(r.Ports) == 0
			for _, pp := range r.Ports {
				portOK = portOK || pp.Port.IntVal == port
			}
			fromOK := len(r.From) == 0
			for _, f := range r.From {
				s, err := metav1.LabelSelectorAsSelector(f.PodSelector)
				if err != nil {
					t.Fatal(err)
				}
				fromOK = fromOK || s.Matches(labels.Set(p.Labels))
			}
			if portOK && fromOK {
				return true
			}
		}
		return false
	}
	data := int32(engine.DefaultPort[engine.TCPRR])
	for _, p := range m.Pods {
		ep := p.Labels[LabelEndpoint]
		if got, want := may(p, data), ep == netPolClient; got != want {
			t.Errorf("%s may reach the data port: %v, want %v", ep, got, want)
		}
		if !may(p, ControlPort) {
			t.Errorf("%s cut off from the control port", ep)
		}
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(np.Spec.Egress) > 0 {
		t.Errorf("policy types %v, egress %v: the check restricts ingress only", np.Spec.PolicyTypes, np.Spec.Egress)
	}
	for _, o := range []metav1.Object{np, denied} {
		if o.GetLabels()[LabelManagedBy] != ManagedBy || o.GetLabels()[LabelRunID] != l.RunID || o.GetNamespace() != testNS {
			t.Errorf("%s is not labelled as the run's, in its namespace: %v", o.GetName(), o.GetLabels())
		}
	}
	for _, o := range m.Objects() {
		if errs := validateObject(o, testNS); len(errs) > 0 {
			t.Errorf("%T: the API server would refuse it: %v", o, errs.ToAggregate())
		}
	}
	bad := np.DeepCopy()
	bad.Spec.Ingress[0].From = []networkingv1.NetworkPolicyPeer{{}}
	if errs := validateObject(bad, testNS); len(errs) == 0 {
		t.Error("the validation accepts a peer without a selector")
	}
	l.NetPolCheck = false
	off, err := Build(l)
	if err != nil {
		t.Fatal(err)
	}
	if len(off.NetworkPolicies) > 0 || len(off.Pods) != len(m.Pods)-1 {
		t.Errorf("without the check: %d policies, %d pods (with: %d)", len(off.NetworkPolicies), len(off.Pods), len(m.Pods))
	}
}

func TestDecideNetPol(t *testing.T) {
	allowed := func(ok bool) NetPolProbe { return NetPolProbe{Allowed: true, Connected: ok} }
	denied := func(ok bool) NetPolProbe { return NetPolProbe{Allowed: false, Connected: ok} }
	for _, c := range []struct {
		probes []NetPolProbe
		want   string
	}{
		{[]NetPolProbe{allowed(true), denied(false)}, NetPolEnforced},
		{[]NetPolProbe{allowed(true), denied(true)}, NetPolNotEnforced},
		{[]NetPolProbe{allowed(false), denied(false)}, NetPolBroken},
		{[]NetPolProbe{allowed(false), denied(true)}, NetPolBroken},
		// two servers: one unenforced pair is enough to say so
		{[]NetPolProbe{allowed(true), denied(false), allowed(true), denied(true)}, NetPolNotEnforced},
		{[]NetPolProbe{allowed(true), denied(false), allowed(false), denied(false)}, NetPolBroken},
	} {
		if got := decideNetPol(c.probes); got != c.want {
			t.Errorf("%+v: %s, want %s", c.probes, got, c.want)
		}
	}
}

// fakeCNI plays a CNI for the check's probers: whether a probe connects
// depends on whether the run's policy exists in the fake API server, and
// for how many attempts it has (programming lag).
type fakeCNI struct {
	cs       *fake.Clientset
	enforces bool // denied probes fail once the policy is programmed
	breaks   bool // allowed probes fail once the policy exists
	lag      int  // probes of the denied prober that still pass after the policy exists
	mu       sync.Mutex
	seen     int
}

type fakeProber struct {
	cni  *fakeCNI
	from string
}

func (p fakeProber) RunKind(ctx context.Context, _ string, _ any) (any, error) {
	c := p.cni
	_, err := c.cs.NetworkingV1().NetworkPolicies(testNS).Get(ctx, NetPolName, metav1.GetOptions{})
	policy := err == nil
	c.mu.Lock()
	defer c.mu.Unlock()
	drop := false
	switch {
	case policy && p.from == netPolClient:
		drop = c.breaks
	case policy && c.enforces:
		c.seen++
		drop = c.seen > c.lag
	}
	if drop {
		return &engine.Result{Errors: 1, ErrorsByCause: map[string]int64{"ETIMEDOUT": 1}}, nil
	}
	return &engine.Result{Transactions: 900}, nil
}

func newNetPolRun(cni *fakeCNI) *netPolRun {
	return &netPolRun{cs: cni.cs, layout: netPolLayout(), baseline: time.Second,
		ips: map[string]string{"node0-pod1": "10.244.1.11", "node1-pod0": "10.244.2.10"},
		probers: map[string]prober{netPolClient: fakeProber{cni, netPolClient},
			NetPolDeniedEndpoint: fakeProber{cni, NetPolDeniedEndpoint}}}
}

// The three outcomes from what the probes see, with the policy created in
// the (validating) fake API server: enforcement seen after a programming
// lag is reported with the time it took; an unenforcing CNI is "not
// enforced" only once the bounded wait is over; an allowed probe failing
// is "broken".
func TestNetPolRunOutcomes(t *testing.T) {
	for _, c := range []struct {
		name     string
		cni      func() *fakeCNI
		want     string
		verdict  string
		attempts int // at least
	}{
		{"enforcing", func() *fakeCNI { return &fakeCNI{enforces: true, lag: 6} }, NetPolEnforced, "NetworkPolicy enforced", 4},
		{"bridge", func() *fakeCNI { return &fakeCNI{} }, NetPolNotEnforced, "this CNI does not enforce NetworkPolicy: the denied probe from netpol-denied to node0-pod1 (10.244.1.11:", 2},
		{"breaking", func() *fakeCNI { return &fakeCNI{enforces: true, breaks: true} }, NetPolBroken, "NetworkPolicy blocks the run's own traffic: the allowed probe from node0-pod0", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			cni := c.cni()
			cni.cs = newFakeCluster()
			start := time.Now()
			res, err := newNetPolRun(cni).run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != c.want || !strings.HasPrefix(res.Verdict, c.verdict) || res.Attempts < c.attempts {
				t.Errorf("outcome %q after %d attempts: %s", res.Outcome, res.Attempts, res.Verdict)
			}
			if len(res.Baseline) != 4 || len(res.Probes) != 4 || !res.PolicyInPlace || !slices.Equal(res.Policies, []string{NetPolName}) {
				t.Errorf("baseline %v, probes %v, policies %v", res.Baseline, res.Probes, res.Policies)
			}
			switch waited := time.Since(start); {
			case c.want == NetPolEnforced && (res.EnforcedAfterS == nil || *res.EnforcedAfterS <= 0 || waited >= netPolWait):
				t.Errorf("enforced after %v, the check took %s (bound %s)", res.EnforcedAfterS, waited, netPolWait)
			case c.want != NetPolEnforced && (res.EnforcedAfterS != nil || res.WaitedS < netPolWait.Seconds()):
				t.Errorf("%s decided after %.2fs, before the wait of %s was over", c.want, res.WaitedS, netPolWait)
			}
			if _, err := cni.cs.NetworkingV1().NetworkPolicies(testNS).Get(context.Background(), NetPolName, metav1.GetOptions{}); err != nil {
				t.Errorf("the policy is not in place: %v", err)
			}
		})
	}
}

// A denied prober that cannot connect before any policy exists makes the
// check fail (a drop afterwards would prove nothing), and no policy is
// created.
func TestNetPolBaselineFails(t *testing.T) {
	cni := &fakeCNI{cs: newFakeCluster()}
	r := newNetPolRun(cni)
	r.baseline = 50 * time.Millisecond
	r.probers[NetPolDeniedEndpoint] = failingProber{}
	_, err := r.run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "before any policy was applied, netpol-denied to node0-pod1") {
		t.Fatalf("err = %v", err)
	}
	if l, _ := cni.cs.NetworkingV1().NetworkPolicies(testNS).List(context.Background(), metav1.ListOptions{}); len(l.Items) > 0 {
		t.Errorf("a policy was created: %v", l.Items[0].Name)
	}
}

type failingProber struct{}

func (failingProber) RunKind(context.Context, string, any) (any, error) {
	return &engine.Result{Errors: 1, ErrorsByCause: map[string]int64{"EHOSTUNREACH": 1}}, nil
}

// A whole run with the check on a fake cluster whose "CNI" (one health
// server answering for every agent) lets everything through: the denied
// prober is created and reached, the outcome is "not enforced" in the
// provenance and the notes, the policy stays for the run and Close
// removes it with everything else.
func TestOpenNetPolCheck(t *testing.T) {
	cs := twoNodeCluster()
	startKubelet(t, cs, testNS, healthy)
	h := startHealthAgent(t, cs, testNS)
	cfg := testConfig("np2")
	cfg.NetworkPolicyCheck = true
	tgt, err := Open(context.Background(), cfg, cs, &staticAccess{addr: h.srv.URL}, "")
	if err != nil {
		t.Fatal(err)
	}
	np := tgt.prov.NetworkPolicy
	if np == nil || np.Outcome != NetPolNotEnforced || np.Hubble != "true" || !np.PolicyInPlace {
		t.Fatalf("network_policy: %+v", np)
	}
	if !slices.ContainsFunc(tgt.Notes(), func(n string) bool {
		return strings.HasPrefix(n, "NetworkPolicy check: not enforced: this CNI does not enforce NetworkPolicy")
	}) {
		t.Errorf("notes %v", tgt.Notes())
	}
	if d := tgt.Details()["network_policy"].(map[string]any); d["outcome"] != NetPolNotEnforced {
		t.Errorf("details: %v", d)
	}
	if _, err := cs.NetworkingV1().NetworkPolicies(testNS).Get(context.Background(), NetPolName, metav1.GetOptions{}); err != nil {
		t.Errorf("policy not in place during the run: %v", err)
	}
	if err := tgt.Close(); err != nil {
		t.Fatal(err)
	}
	assertClean(t, cs)
}

// After a crash the run's policy is a leftover like its pods: the
// preflight finds it and `k8s cleanup` (Cleanup) removes it; a Role
// without rights on NetworkPolicies (from before the check) still cleans
// up the rest.
func TestCleanupNetworkPolicy(t *testing.T) {
	l := netPolLayout()
	np := networkPolicies(l)[0]
	other := np.DeepCopy()
	other.Name, other.Labels = "someone-elses", map[string]string{"app": "x"}
	cs := newFakeCluster(np, other)
	left, err := Find(context.Background(), cs, testNS, ManagedSelector())
	if err != nil || len(left) != 1 || left[0].String() != "NetworkPolicy/"+testNS+"/"+NetPolName || left[0].RunID != l.RunID {
		t.Fatalf("Find: %v %v", left, err)
	}
	if _, err := Cleanup(cs, testNS, ManagedSelector(), 5*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	assertClean(t, cs)
	if _, err := cs.NetworkingV1().NetworkPolicies(testNS).Get(context.Background(), other.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("a policy not of ours was removed: %v", err)
	}
	old := newFakeCluster()
	old.PrependReactor("list", "networkpolicies", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(networkingv1.Resource("networkpolicies"), "", errors.New("no rule"))
	})
	if _, err := Find(context.Background(), old, testNS, ManagedSelector()); err != nil {
		t.Errorf("Find with an older Role: %v", err)
	}
}

// withCiliumCRD makes the fake API server serve CiliumNetworkPolicies and
// returns a dynamic client for them.
func withCiliumCRD(cs *fake.Clientset) *fakedynamic.FakeDynamicClient {
	cs.Resources = append(cs.Resources, &metav1.APIResourceList{GroupVersion: "cilium.io/v2",
		APIResources: []metav1.APIResource{{Name: "ciliumnetworkpolicies", Namespaced: true, Kind: "CiliumNetworkPolicy"}}})
	return fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{ciliumNPResource: "CiliumNetworkPolicyList"})
}

// Where Cilium runs and its CRD exists, the check applies the L3/L4
// CiliumNetworkPolicy on the denied prober and proves it by the client's
// probe to the prober dropped, then the L7 one (HTTP GET from the client
// to the pod servers' HTTP port) proved by the proxy's 403; it records
// both and Hubble's state, and Close removes them. On a Cilium without
// an L7 proxy (enable-l7-proxy=false, the test cluster's) the L7 rule is
// "not enforced: no L7 proxy on this cluster" after one look; without
// the CRD nothing is applied and the reason is recorded.
func TestNetPolCilium(t *testing.T) {
	// Owned by the run's Secret: after a crash, `k8s cleanup` deleting the
	// Secret lets the garbage collector remove the policies.
	owner := &metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: SecretName, UID: "u1"}
	for _, owned := range []*unstructured.Unstructured{ciliumL4Policy(netPolLayout(), owner), ciliumL7Policy(netPolLayout(), owner)} {
		if refs := owned.GetOwnerReferences(); len(refs) != 1 || refs[0].Kind != "Secret" || refs[0].Name != SecretName || refs[0].UID != "u1" {
			t.Errorf("%s: owner references %v", owned.GetName(), refs)
		}
	}
	for _, tc := range []struct {
		name           string
		crd            bool
		l4, l7, noL7   bool // Cilium enforces the L3/L4 policy, the L7 one; runs without an L7 proxy
		wantL7Attempts int  // 0: several
	}{
		{"enforces both", true, true, true, false, 1},
		{"enforces neither", true, false, false, false, 0},
		{"no L7 proxy", true, true, false, true, 1},
		{"no CRD", false, false, false, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := twoNodeCluster()
			if tc.noL7 {
				gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
				obj, _ := cs.Tracker().Get(gvr, "kube-system", "cilium-config")
				cm := obj.(*corev1.ConfigMap)
				cm.Data["enable-l7-proxy"] = "false"
				if err := cs.Tracker().Update(gvr, cm, "kube-system"); err != nil {
					t.Fatal(err)
				}
			}
			var dyn *fakedynamic.FakeDynamicClient
			if tc.crd {
				dyn = withCiliumCRD(cs)
			} else {
				dyn = fakedynamic.NewSimpleDynamicClient(runtime.NewScheme())
			}
			applied := func(name string) bool {
				_, err := dyn.Tracker().Get(ciliumNPResource, testNS, name)
				return err == nil
			}
			k := startKubelet(t, cs, testNS, healthy)
			h := startHealthAgent(t, cs, testNS)
			// The agents' probes meet "Cilium": the client's TCP_RR to the
			// denied prober (10.244.1.12) is dropped once the L3/L4 policy
			// is applied when it enforces; HTTP gets the proxy's 403 on a
			// path the applied L7 policy does not allow when it enforces,
			// 200 otherwise.
			h.runHook = func(_ context.Context, _ int, o engine.Options) error {
				if tc.l4 && o.Host == "10.244.1.12" && applied(CiliumL4Name) {
					return errors.New("0 transactions, 1 errors map[ETIMEDOUT:1]")
				}
				return nil
			}
			h.httpStatus = func(path string) int {
				if tc.l7 && applied(CiliumL7Name) && path != ciliumL7AllowedPath {
					return 403
				}
				return 200
			}
			cfg := testConfig("np3")
			cfg.NetworkPolicyCheck, cfg.Dynamic = true, dyn
			var progress bytes.Buffer
			cfg.Progress = &syncWriter{w: &progress}
			tgt, err := Open(context.Background(), cfg, cs, &staticAccess{addr: h.srv.URL}, "")
			if err != nil {
				t.Fatal(err)
			}
			np := tgt.prov.NetworkPolicy
			l4, l7 := np.CiliumL4, np.CiliumL7
			if l4 == nil || l7 == nil || l4.Applied != tc.crd || l7.Applied != tc.crd || l7.Verified != tc.l7 {
				t.Fatalf("cilium_l4 %+v, cilium_l7 %+v", l4, l7)
			}
			hasNote := func(prefix string) bool {
				return slices.ContainsFunc(tgt.prov.Notes, func(n string) bool { return strings.HasPrefix(n, prefix) })
			}
			if !tc.crd {
				if !strings.Contains(l4.Reason, "CRD ciliumnetworkpolicies.cilium.io is not installed") || l4.Reason != l7.Reason || l4.Outcome != "" || l7.Outcome != "" {
					t.Errorf("without the CRD: cilium_l4 %+v, cilium_l7 %+v", l4, l7)
				}
			}
			// L3/L4: the baseline connected; then dropped (enforced), or
			// still connecting after the bounded wait.
			if tc.crd {
				want := map[bool]string{true: NetPolEnforced, false: NetPolNotEnforced}[tc.l4]
				if l4.Outcome != want || l4.Baseline == nil || !l4.Baseline.Connected || l4.Probe == nil || l4.Probe.Connected == tc.l4 ||
					l4.Probe.From != netPolClient || l4.Probe.To != NetPolDeniedEndpoint || l4.Probe.Addr != "10.244.1.12:5203" || l4.Probe.Allowed {
					t.Errorf("cilium_l4 %+v, baseline %+v, probe %+v; want %s", l4, l4.Baseline, l4.Probe, want)
				}
				verdict := map[bool]string{true: "CiliumNetworkPolicy L3/L4 enforced ", false: "CiliumNetworkPolicy L3/L4 not enforced: the probe from node0-pod0 to netpol-denied (10.244.1.12:5203) still connected"}[tc.l4]
				if !strings.HasPrefix(l4.Verdict, verdict) || !hasNote(verdict) {
					t.Errorf("verdict %q, notes %q; want %q…", l4.Verdict, tgt.prov.Notes, verdict)
				}
				if !strings.Contains(progress.String(), "; CiliumNetworkPolicy L3/L4: probing netpol-denied from node0-pod0 ... "+want+"; L7 rule: probing / (200) and /cnibench-l7-denied (403) ... ") {
					t.Errorf("progress:\n%s", progress.String())
				}
			}
			// L7: verified, the allowed path got 200 and the denied one 403
			// on both servers; not: the reason names the probe that failed,
			// after the bounded wait, or after one look without a proxy.
			switch {
			case !tc.crd:
			case tc.l7:
				if len(l7.Probes) != 4 || l7.Probes[1].Want != 403 || l7.Probes[1].Status[403] == 0 || l7.Attempts != 1 || l7.Outcome != NetPolEnforced || hasNote("CiliumNetworkPolicy L7 rule") {
					t.Errorf("enforced L7 check: %+v, notes %q", l7, tgt.prov.Notes)
				}
			case tc.noL7:
				const want = "no L7 proxy on this cluster (cilium-config enable-l7-proxy=false: Cilium refuses policies with L7 rules); GET http://10.244.1.11:8080/cnibench-l7-denied got status 100×200, want 403"
				if l7.Reason != want || l7.Outcome != NetPolNotEnforced || l7.Attempts != 1 || !hasNote("CiliumNetworkPolicy L7 rule: not enforced: "+want) ||
					!strings.Contains(progress.String(), "(403) ... not enforced (no L7 proxy on this cluster)\n") {
					t.Errorf("L7 without a proxy: %+v, notes %q, progress:\n%s", l7, tgt.prov.Notes, progress.String())
				}
			default:
				if !strings.Contains(l7.Reason, "/cnibench-l7-denied got status 100×200, want 403") || l7.Attempts < 2 || l7.Outcome != NetPolNotEnforced ||
					!hasNote("CiliumNetworkPolicy L7 rule: not enforced: not verified within") {
					t.Errorf("unverified L7 check: %+v, notes %q", l7, tgt.prov.Notes)
				}
			}
			// Each note one line, the NetworkPolicy check's first.
			for _, n := range tgt.prov.Notes {
				if strings.Contains(n, "\n") {
					t.Errorf("note on several lines: %q", n)
				}
			}
			if i := slices.IndexFunc(tgt.prov.Notes, func(n string) bool { return strings.HasPrefix(n, "NetworkPolicy check:") }); tc.crd && (i < 0 || !strings.HasPrefix(tgt.prov.Notes[i+1], "CiliumNetworkPolicy L3/L4")) {
				t.Errorf("notes %q", tgt.prov.Notes)
			}
			acts := slices.DeleteFunc(dyn.Actions(), func(a k8stesting.Action) bool { return a.GetVerb() == "get" }) // the run's, without the fake proxy's Gets
			if tc.crd {
				l4p, err := dyn.Resource(ciliumNPResource).Namespace(testNS).Get(context.Background(), CiliumL4Name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				sel, _, _ := unstructured.NestedStringMap(l4p.Object, "spec", "endpointSelector", "matchLabels")
				in, _, _ := unstructured.NestedSlice(l4p.Object, "spec", "ingress")
				if sel[LabelEndpoint] != NetPolDeniedEndpoint || sel[LabelRunID] != "np3" || len(in) != 1 ||
					!strings.Contains(l4.Rule, "ingress to netpol-denied only on 5200/TCP (its control port), from anywhere") {
					t.Errorf("L3/L4 policy %v, rule %q", l4p.Object, l4.Rule)
				}
				got, err := dyn.Resource(ciliumNPResource).Namespace(testNS).Get(context.Background(), CiliumL7Name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				rules, _, _ := unstructured.NestedSlice(got.Object, "spec", "ingress")
				http, _, _ := unstructured.NestedSlice(rules[0].(map[string]any)["toPorts"].([]any)[0].(map[string]any), "rules", "http")
				if got.GetLabels()[LabelRunID] != "np3" || len(http) != 1 || http[0].(map[string]any)["method"] != "GET" ||
					http[0].(map[string]any)["path"] != "/" || !strings.Contains(l7.Rule, "GET / on 8080/TCP from node0-pod0 to [node0-pod1 node1-pod0]") {
					t.Errorf("policy %v, rule %q", got.Object, l7.Rule)
				}
			}
			dyn.ClearActions()
			if err := tgt.Close(); err != nil {
				t.Fatal(err)
			}
			acts = append(acts, dyn.Actions()...)
			k.Stop()
			assertClean(t, cs)
			if !tc.crd {
				if len(acts) != 0 {
					t.Errorf("custom resource calls without the CRD: %v", acts)
				}
				return
			}
			// What the run asked of the custom resources, the Role allows.
			for _, a := range acts {
				if r := a.GetResource(); a.GetNamespace() != testNS || !allows(NamespaceRules(), r.Group, r.Resource, a.GetVerb(), "") {
					t.Errorf("not allowed by `cnibench k8s rbac`: %s %s in %q", a.GetVerb(), r.Resource, a.GetNamespace())
				}
			}
			var verbs []string
			for _, a := range acts {
				verbs = append(verbs, a.GetVerb())
			}
			if strings.Join(verbs, ",") != "create,create,delete,delete" {
				t.Errorf("custom resource calls %v, want two creates and two deletes", verbs)
			}
			if l, err := dyn.Resource(ciliumNPResource).Namespace(testNS).List(context.Background(), metav1.ListOptions{}); err != nil || len(l.Items) > 0 {
				t.Errorf("after Close: %v %v", l, err)
			}
		})
	}
}

// A broken policy is removed before the run measures; an enforced or
// unenforced one stays in place for the run.
func TestSettleNetPol(t *testing.T) {
	for _, outcome := range []string{NetPolEnforced, NetPolNotEnforced, NetPolBroken} {
		l := netPolLayout()
		cs := newFakeCluster(networkPolicies(l)[0])
		res := &NetPolCheck{Outcome: outcome, Verdict: "v", PolicyInPlace: true}
		if err := settleNetPol(context.Background(), cs, l, res); err != nil {
			t.Fatal(err)
		}
		list, err := cs.NetworkingV1().NetworkPolicies(testNS).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		broken := outcome == NetPolBroken
		if (len(list.Items) == 0) != broken || res.PolicyInPlace == broken || strings.Contains(res.Verdict, "removed") != broken {
			t.Errorf("%s: %d policies left, in place %v, verdict %q", outcome, len(list.Items), res.PolicyInPlace, res.Verdict)
		}
	}
}
