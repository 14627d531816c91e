package k8starget

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
)

func init() { hubblePoll, hubbleProbe = 5*time.Millisecond, 100*time.Millisecond }

// fakeCilium plays the Cilium agents behind pods/exec: each restart of
// the DaemonSet makes them run cilium-config's enable-hubble as it is
// then (as real agents read it when they start), and, Hubble on, every
// connection the run's agents made shows up in each agent's seen-flows.
type fakeCilium struct {
	mu      sync.Mutex
	hubble  bool
	flows   func(pod string) int64 // flows an agent has seen from the run's connections; nil: none
	execs   []string               // namespace/pod of every exec
	refused bool                   // exec forbidden
}

func newFakeCilium(t *testing.T, cs *fake.Clientset, flows func(pod string) int64) *fakeCilium {
	f := &fakeCilium{hubble: true, flows: flows}
	cs.PrependReactor("update", "daemonsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, err := cs.Tracker().Get(corev1.SchemeGroupVersion.WithResource("configmaps"), "kube-system", ciliumConfigName)
		if err != nil {
			t.Error(err)
			return false, nil, nil
		}
		f.mu.Lock()
		f.hubble = obj.(*corev1.ConfigMap).Data[hubbleKey] == "true"
		f.mu.Unlock()
		return false, nil, nil
	})
	return f
}

func (f *fakeCilium) Exec(_ context.Context, ns, pod, container string, cmd []string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.execs = append(f.execs, ns+"/"+pod)
	if f.refused {
		return nil, fmt.Errorf(`pods "%s" is forbidden: User "alice" cannot create resource "pods/exec"`, pod)
	}
	if container != ciliumAgentContainer || strings.Join(cmd, " ") != "cilium-dbg status -o json" {
		return nil, fmt.Errorf("exec %v in %s: unexpected", cmd, container)
	}
	if !f.hubble {
		return os.ReadFile("testdata/cilium-dbg-status-off.json")
	}
	var seen int64 = 7
	if f.flows != nil {
		seen += f.flows(pod)
	}
	return fmt.Appendf(nil, `{"hubble":{"observer":{"current-flows":4095,"max-flows":4095,"seen-flows":%d,"uptime":"1m"},"state":"Ok"}}`, seen), nil
}

func (f *fakeCilium) on() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.hubble }

func securityConfig(runID string, exec Execer, allow bool) Config {
	cfg := testConfig(runID)
	cfg.Placements = []string{PodToServiceOtherNode}
	cfg.Security = &SecurityConfig{AllowClusterChanges: allow, Exec: exec}
	return cfg
}

// The security profile's twins on a fake Cilium cluster whose "CNI" (one
// health server for every agent) lets everything through: the policy
// twin is refused with the check's verdict (this CNI does not enforce
// NetworkPolicy) and its policy removed; the flows twin switches Hubble
// once a round through cilium-config and a DaemonSet restart, each switch
// proved by the agents' status (off: Disabled; on: seen-flows rising by
// the probe's connections); the L7 parts are not measured with their
// reason; Close puts enable-hubble back (Hubble was on) with one more
// restart, removes the record and every object of the run; and every API
// call, exec included, is allowed by `k8s rbac --allow-cluster-changes`.
func TestSecurityTwinsOnCilium(t *testing.T) {
	rbac, err := RBAC(testNS, Subject{})
	if err != nil {
		t.Fatal(err)
	}
	cs := twoNodeCluster(rbac[0])
	restarts := rollOut(cs)
	startKubelet(t, cs, testNS, healthy)
	h := startHealthAgent(t, cs, testNS)
	fc := newFakeCilium(t, cs, func(string) int64 { return 1000 * int64(h.Runs()) })
	cs.ClearActions()
	cfg := securityConfig("sec1", fc, true)
	tgt, err := Open(context.Background(), cfg, cs, &staticAccess{addr: h.srv.URL}, "ctx")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tgt.pods[NetPolDeniedEndpoint]; !ok || tgt.prov.NetworkPolicy != nil {
		t.Fatalf("the denied prober is not up, or the whole-run check ran: %+v", tgt.prov.NetworkPolicy)
	}
	twins, twinScs, nm := tgt.SecurityTwins("ctx")
	if len(twins) != 2 || len(nm) != 3 || nm[0].Part != "l7-node" || !strings.Contains(nm[0].Reason, "Envoy") {
		t.Fatalf("twins %v, not measured %v", twins, nm)
	}
	plan, err := suite.Options{Profile: "security", Tests: []string{"TCP_RR"}, Rounds: 3, Duration: 100 * time.Millisecond}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	plan.Warmup, plan.Questions = 0, suite.TwinQuestions("ctx")
	r := &suite.Runner{Scenarios: append([]suite.Scenario{{Name: "ctx", Target: tgt}}, twinScs...), Plan: plan, OutDir: t.TempDir(), RunID: "sec1",
		Schedule: &suite.Twins{Base: "ctx", Twins: twins, NotMeasured: nm}}
	run, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tw := run.Twins
	if tw == nil || len(tw.Parts) != 1 || tw.Parts[0].Part != "flows" || !tw.Parts[0].Original || len(tw.NotMeasured) != 4 {
		t.Fatalf("twins: %+v", tw)
	}
	if pol := tw.NotMeasured[3]; pol.Part != "policy" || !strings.HasPrefix(pol.Reason, "this CNI does not enforce NetworkPolicy: the denied probe from netpol-denied to node1-pod0") {
		t.Errorf("policy twin: %+v", pol)
	}
	var proofs []string
	for _, s := range tw.Parts[0].Switches {
		proofs = append(proofs, fmt.Sprintf("%d %v %s", s.Round, s.On, s.Proof))
		if s.Error != "" {
			t.Errorf("switch %+v failed", s)
		}
	}
	if len(proofs) != 4 || !strings.Contains(proofs[1], "Hubble Disabled on worker-a and worker-b") ||
		!strings.Contains(proofs[2], "TCP_CRR of 1000 connections node0-pod0 → node1-pod0 raised seen-flows +1000 on worker-a, +1000 on worker-b") {
		t.Errorf("flows switches:\n%s", strings.Join(proofs, "\n"))
	}
	if restarts() != 3 || fc.on() {
		t.Errorf("%d restarts during the rounds (want 3: once a round), Hubble on at the end %v (round 3 ends on the base)", restarts(), fc.on())
	}
	// The test's own reads go straight to the tracker: cs.Actions() are the run's (checkRBAC).
	if _, err := cs.Tracker().Get(networkingv1.SchemeGroupVersion.WithResource("networkpolicies"), testNS, NetPolName); err == nil {
		t.Error("the refused policy twin left its policy in place")
	}
	if err := tgt.Close(); err != nil {
		t.Fatal(err)
	}
	tgt.RecordClose(run, "ctx")
	obj, _ := cs.Tracker().Get(corev1.SchemeGroupVersion.WithResource("configmaps"), "kube-system", ciliumConfigName)
	cm := obj.(*corev1.ConfigMap)
	if cm.Data[hubbleKey] != "true" || len(recordedKeys(cm)) > 0 || !fc.on() || restarts() != 4 {
		t.Errorf("after Close: enable-hubble %q, records %v, Hubble on %v, %d restarts (want true, none, on, 4)", cm.Data[hubbleKey], recordedKeys(cm), fc.on(), restarts())
	}
	if !slices.ContainsFunc(run.Notes, func(n string) bool {
		return strings.HasPrefix(n, `kube-system/cilium-config enable-hubble restored to "true" and DaemonSet kube-system/cilium restarted`)
	}) {
		t.Errorf("notes %v", run.Notes)
	}
	checkSecurityRBAC(t, cs, fc.execs)
	assertClean(t, cs)
}

// checkSecurityRBAC replays every API call (and exec) against `k8s rbac
// --allow-cluster-changes`.
func checkSecurityRBAC(t *testing.T, cs *fake.Clientset, execs []string) {
	t.Helper()
	replayChangeRBAC(t, cs)
	ciliumNS := ClusterChangeRules()
	for _, e := range execs {
		ns, pod, _ := strings.Cut(e, "/")
		if ns != DefaultCiliumNamespace || !allows(ciliumNS, "", "pods/exec", "create", pod) {
			t.Errorf("exec in %s not allowed", e)
		}
	}
	if len(execs) == 0 {
		t.Error("no exec checked")
	}
}

// Without --allow-cluster-changes the flows twin refuses itself naming the
// flag (and nothing of Cilium's is touched); on a cluster without Cilium
// it says so; an exec the RBAC forbids refuses it with the API server's
// words.
func TestFlowsTwinRefusals(t *testing.T) {
	cs := twoNodeCluster()
	startKubelet(t, cs, testNS, healthy)
	h := startHealthAgent(t, cs, testNS)
	fc := newFakeCilium(t, cs, nil)
	for _, c := range []struct {
		allow, forbid bool
		want          string
	}{
		{false, false, "switching Hubble changes enable-hubble in kube-system/cilium-config and restarts Cilium's agents: pass --allow-cluster-changes"},
		{true, true, `ask the Cilium agent cilium-worker-a on node worker-a for its status: pods "cilium-worker-a" is forbidden`},
	} {
		fc.refused = c.forbid
		tgt, err := Open(context.Background(), securityConfig(fmt.Sprintf("ref%v", c.allow), fc, c.allow), cs, &staticAccess{addr: h.srv.URL}, "")
		if err != nil {
			t.Fatal(err)
		}
		twins, _, _ := tgt.SecurityTwins("c")
		_, _, err = twins[1].Toggle.Check(context.Background())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("allow %v, forbid %v: %v", c.allow, c.forbid, err)
		}
		if err := tgt.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cm, _ := cs.CoreV1().ConfigMaps("kube-system").Get(context.Background(), ciliumConfigName, metav1.GetOptions{})
	if cm.Data[hubbleKey] != "true" || len(cm.Annotations) > 0 {
		t.Errorf("cilium-config touched: %v %v", cm.Data, cm.Annotations)
	}
	t2 := &Target{prov: Provenance{CNI: &CNI{Plugin: "unknown"}}, cfg: Config{Security: &SecurityConfig{AllowClusterChanges: true}}}
	if why := t2.hubbleRefusal(); !strings.HasPrefix(why, "no Cilium on this cluster (CNI unknown)") {
		t.Errorf("no Cilium: %s", why)
	}
	if nm := l7NotMeasured(&CNI{Plugin: "cilium", Components: []Component{{Plugin: "cilium"}}, Cilium: &CiliumConfig{Keys: map[string]string{"enable-l7-proxy": "false"}}}); !strings.HasSuffix(nm[0].Reason, "enable-l7-proxy=false: no L7 proxy") {
		t.Errorf("L7 without a proxy: %+v", nm)
	}
}

// Hubble switched on but no flow seen by an agent, or too few for the
// probe's connections, fails the switch with what the agents said, and
// Close still puts enable-hubble back.
func TestFlowsProofFails(t *testing.T) {
	for _, c := range []struct {
		name  string
		flows func(h *healthAgent) func(string) int64
		want  string
	}{
		{"none", func(*healthAgent) func(string) int64 { return nil }, "worker-a: Ok (seen 7 flows), worker-b: Ok (seen 7 flows)"},
		{"one node", func(h *healthAgent) func(string) int64 {
			return func(pod string) int64 {
				if pod == "cilium-worker-a" {
					return 0
				}
				return 5000 * int64(h.Runs())
			}
		}, "worker-a: Ok (seen 7 flows), worker-b: Ok (seen "},
		{"too few", func(h *healthAgent) func(string) int64 { return func(string) int64 { return 100 * int64(h.Runs()) } }, "worker-a: Ok (seen "},
	} {
		t.Run(c.name, func(t *testing.T) { flowsProofFails(t, c.flows, c.want) })
	}
}

func flowsProofFails(t *testing.T, flows func(h *healthAgent) func(string) int64, want string) {
	cs := twoNodeCluster()
	restarts := rollOut(cs)
	startKubelet(t, cs, testNS, healthy)
	h := startHealthAgent(t, cs, testNS)
	fc := newFakeCilium(t, cs, flows(h))
	tgt, err := Open(context.Background(), securityConfig("nf", fc, true), cs, &staticAccess{addr: h.srv.URL}, "")
	if err != nil {
		t.Fatal(err)
	}
	twins, _, _ := tgt.SecurityTwins("c")
	hub := twins[1].Toggle.(*hubbleToggle)
	hub.timeout = 200 * time.Millisecond
	if on, _, err := hub.Check(context.Background()); err != nil || !on {
		t.Fatalf("check: %v %v", on, err)
	}
	if _, err := hub.Set(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	_, err = hub.Set(context.Background(), true)
	if err == nil || !strings.Contains(err.Error(), "no seen-flows rising on every agent, by at least half the probe's 1000 connections altogether within 200ms: "+want) {
		t.Errorf("proof: %v", err)
	}
	if err := tgt.Close(); err != nil {
		t.Fatal(err)
	}
	cm, _ := cs.CoreV1().ConfigMaps("kube-system").Get(context.Background(), ciliumConfigName, metav1.GetOptions{})
	if cm.Data[hubbleKey] != "true" || len(cm.Annotations) > 0 || restarts() != 2 {
		t.Errorf("after Close: %v %v, %d restarts (want the value back, no record, no restart as the agents run it)", cm.Data, cm.Annotations, restarts())
	}
}

// A run killed while Hubble was switched leaves the record on
// cilium-config: the next run's flows twin refuses to start over it, and
// `k8s cleanup` (RestoreCiliumConfig) puts the value back (here: the key
// was unset), removes the record and restarts Cilium; a second cleanup
// has nothing to do.
func TestRestoreCiliumConfigAfterKill(t *testing.T) {
	cs := twoNodeCluster()
	restarts := rollOut(cs)
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	obj, _ := cs.Tracker().Get(gvr, "kube-system", ciliumConfigName)
	cm := obj.(*corev1.ConfigMap)
	delete(cm.Data, hubbleKey)
	if err := cs.Tracker().Update(gvr, cm, "kube-system"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := setCiliumKey(ctx, cs, "kube-system", hubbleKey, "true", "killed-run"); err != nil {
		t.Fatal(err)
	}
	err := setCiliumKey(ctx, cs, "kube-system", hubbleKey, "false", "next-run")
	if err == nil || err.Error() != "kube-system/cilium-config carries run killed-run's change of enable-hubble, never put back (it was (unset)): run 'cnibench k8s cleanup' first" {
		t.Errorf("next run: %v", err)
	}
	done, err := RestoreCiliumConfig(cs, 5*time.Second, nil)
	if err != nil || len(done) != 2 || !strings.Contains(done[0], "enable-hubble put back to (unset) (run killed-run)") || restarts() != 1 {
		t.Fatalf("cleanup: %v %v, %d restarts", done, err, restarts())
	}
	cm, _ = cs.CoreV1().ConfigMaps("kube-system").Get(ctx, ciliumConfigName, metav1.GetOptions{})
	if _, ok := cm.Data[hubbleKey]; ok || len(cm.Annotations) > 0 {
		t.Errorf("after cleanup: %v %v", cm.Data, cm.Annotations)
	}
	if done, err := RestoreCiliumConfig(cs, 5*time.Second, nil); err != nil || len(done) > 0 || restarts() != 1 {
		t.Errorf("second cleanup: %v %v", done, err)
	}
	bridge := newFakeCluster(testNode("n"), &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system"}})
	if done, err := RestoreCiliumConfig(bridge, time.Second, nil); err != nil || len(done) > 0 {
		t.Errorf("without Cilium: %v %v", done, err)
	}
}

// The policy twin's switches on a CNI that enforces after a lag: on is
// proved by the denied probes dropped while the client connects, off by
// every probe connecting again.
func TestPolicyToggle(t *testing.T) {
	cni := &fakeCNI{cs: newFakeCluster(), enforces: true, lag: 3}
	p := &policyToggle{t: &Target{cs: cni.cs, layout: netPolLayout(), cfg: Config{Namespace: testNS}}, run: newNetPolRun(cni)}
	on, err := p.Set(context.Background(), true)
	if err != nil || !strings.Contains(on, "cnibench-allow-client-only enforced") || !strings.Contains(on, "netpol-denied → node1-pod0 (10.244.2.10:5203) dropped") {
		t.Fatalf("on: %q %v", on, err)
	}
	off, err := p.Set(context.Background(), false)
	if err != nil || !strings.Contains(off, "removed; every probe connects again") || strings.Contains(off, "dropped") {
		t.Fatalf("off: %q %v", off, err)
	}
	cni.breaks = true
	if _, err := p.Set(context.Background(), true); err == nil || !strings.Contains(err.Error(), "not enforced within") {
		t.Errorf("a policy that breaks the client: %v", err)
	}
	var _ results.NotMeasured // the record type the refusals become (suite)
}
