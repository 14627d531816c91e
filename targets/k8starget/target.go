package k8starget

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
)

// agentReadyTimeout bounds the wait for an agent's control API once its
// pod is Ready (the readiness probe already saw the port open); tests
// shorten it.
var agentReadyTimeout = 30 * time.Second

// Target is a cluster with this run's agents up. Close it: that removes
// every object the run created.
type Target struct {
	cfg     Config
	cs      kubernetes.Interface
	access  Access
	context string

	layout         Layout
	prov           Provenance
	pods           map[string]*corev1.Pod // endpoint → pod
	services       map[string]string      // server endpoint → ClusterIP
	agents         map[string]*agent.Client
	skipped        map[string]string // placement → reason
	usage          *usageReader      // datapath CPU and memory per sample (usage.go); nil: off
	scale          scaleState        // Service-scale sweep (scaletarget.go)
	fallback       *sysctlFallback   // agent pods recreated without refused sysctls
	ciliumPolicies []string          // the CiliumNetworkPolicies the NetworkPolicy check applied (netpol_cilium.go)
	hubble         *hubbleToggle     // the security profile's flows twin (hubble_twin.go); Close restores it
	restored       string            // what Close put back in the cluster's configuration, for the run's notes
	deaths         *deathWatch       // the agents' pods while the run measures (deathwatch.go)
	lost           map[string]error  // endpoint → why no pod replaces its dead agent (replace.go)
	kernels        kernels           // the nodes' boot ids, for their CPU (nodecpu.go)

	closeOnce sync.Once
	closeErr  error
}

// Open checks the cluster, refuses to start over an earlier run's leftovers
// (unless cfg.Force), picks the nodes, creates the agents and waits until
// each answers on its control API. On any error, and when ctx is cancelled,
// whatever it created is removed before it returns.
func Open(ctx context.Context, cfg Config, cs kubernetes.Interface, access Access, kubeContext string) (t *Target, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t = &Target{cfg: cfg, cs: cs, access: access, context: kubeContext,
		pods: map[string]*corev1.Pod{}, services: map[string]string{}, agents: map[string]*agent.Client{}, skipped: map[string]string{}}
	plan, err := Prepare(ctx, cfg, cs)
	if err != nil {
		return nil, err
	}
	t.layout, t.skipped, t.prov = plan.Layout, plan.Skipped, plan.Provenance
	t.prov.Context = kubeContext
	t.prov.Access = access.Name()
	if t.layout.Token, err = randomToken(); err != nil {
		return nil, err
	}
	m, err := Build(t.layout)
	if err != nil {
		return nil, err
	}

	// From the first object on, every way out but success cleans up.
	defer func() {
		if err != nil {
			if cerr := t.Close(); cerr != nil {
				err = fmt.Errorf("%w (and cleanup failed: %v)", err, cerr)
			}
		}
	}()
	if err := t.scalePreflight(ctx); err != nil {
		return t, err
	}
	t.progress("creating %d agent pods in namespace %s on %s ...", len(m.Pods), cfg.Namespace, strings.Join(nonEmpty(t.layout.Nodes[:]), " and "))
	t.fallback = newSysctlFallback(cs, m)
	if err := create(ctx, cs, m, t.fallback); err != nil {
		t.progress(" failed\n")
		return t, err
	}
	var want []string
	for _, p := range m.Pods {
		want = append(want, p.Name)
	}
	start := time.Now()
	ready, err := waitReady(ctx, cs, cfg.Namespace, cfg.RunID, want, cfg.Timeout, t.fallback)
	if err != nil {
		t.progress(" failed\n")
		return t, err
	}
	t.progress(" ready in %s\n", time.Since(start).Round(100*time.Millisecond))
	for _, p := range ready {
		t.pods[p.Labels[LabelEndpoint]] = p
	}
	if err := t.readServices(ctx); err != nil {
		return t, err
	}
	if err := t.connectAgents(ctx); err != nil {
		return t, err
	}
	t.readSysctls(ctx)
	if err := t.openProbes(ctx); err != nil {
		return t, err
	}
	t.readNodeCNI(ctx)
	if err := t.openSync(ctx); err != nil {
		return t, err
	}
	if err := t.waitServicesReachable(ctx, cfg.Timeout); err != nil {
		return t, err
	}
	if err := t.checkNetworkPolicy(ctx); err != nil {
		return t, err
	}
	t.recordEndpoints()
	t.readMesh(ctx)
	t.watchDeaths()
	return t, nil
}

// watchDeaths starts watching the agents' pods while the run measures
// (deathwatch.go).
func (t *Target) watchDeaths() {
	agents := map[string]*corev1.Pod{}
	for _, ep := range t.layout.Endpoints {
		agents[ep] = t.pods[ep]
	}
	t.deaths = startDeathWatch(t.cs, t.cfg.Namespace, t.cfg.RunID, agents)
}

// readServices reads the ClusterIP of every test Service the run made.
func (t *Target) readServices(ctx context.Context) error {
	cfg, cs := t.cfg, t.cs
	for _, ep := range t.layout.Services {
		svc, err := cs.CoreV1().Services(cfg.Namespace).Get(ctx, ServiceName(ep), metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("read Service %s: %w", ServiceName(ep), err)
		}
		if ip := svc.Spec.ClusterIP; ip == "" || ip == corev1.ClusterIPNone {
			return fmt.Errorf("service %s/%s has no ClusterIP", cfg.Namespace, svc.Name)
		}
		t.services[ep] = svc.Spec.ClusterIP
	}
	return nil
}

// connectAgents reaches each agent's control API and checks that it
// answers with this run's token.
func (t *Target) connectAgents(ctx context.Context) error {
	for _, ep := range t.layout.Endpoints {
		c, err := t.dialAgent(ctx, ep, t.pods[ep])
		if err != nil {
			return err
		}
		t.agents[ep] = c
	}
	return nil
}

// dialAgent reaches the agent of endpoint ep in pod p through the access
// and waits until it answers with the run's token.
func (t *Target) dialAgent(ctx context.Context, ep string, p *corev1.Pod) (*agent.Client, error) {
	control, err := t.access.Control(ctx, p)
	if err != nil {
		return nil, err
	}
	c, err := agent.NewClient(ep, control, t.layout.Token)
	if err != nil {
		return nil, err
	}
	if err := c.WaitReady(ctx, agentReadyTimeout); err != nil {
		return nil, fmt.Errorf("pod %s/%s (%s, %s access): %w", t.cfg.Namespace, p.Name, p.Status.PodIP, t.cfg.Access, err)
	}
	return c, nil
}

// Plan is what a run would create, before anything is created: the
// layout, the placements it must skip and the provenance read so far.
type Plan struct {
	Layout     Layout
	Skipped    map[string]string
	Provenance Provenance
}

// Prepare reads the cluster and decides what a run creates: it checks for
// leftovers (removing them with cfg.Force), detects the CNI, picks the
// nodes and decides which placements can run. It creates nothing, except
// that cfg.Force deletes an earlier run's objects.
func Prepare(ctx context.Context, cfg Config, cs kubernetes.Interface) (*Plan, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ver, platform, cni, err := collectCluster(ctx, cs)
	if err != nil {
		return nil, err
	}
	if err := clearLeftovers(ctx, cfg, cs); err != nil {
		return nil, err
	}
	exists, _, err := namespaceState(ctx, cs, cfg.Namespace)
	if err != nil {
		return nil, err
	}
	if cfg.Scale.probes() {
		if err := checkProbeNamespace(ctx, cs, cfg.Namespace); err != nil {
			return nil, err
		}
	}
	var agentNodes map[string]bool
	cniName := cni.Plugin
	if comp := cni.Agent(); comp != nil {
		if agentNodes, err = AgentNodes(ctx, cs, comp); err != nil {
			return nil, err
		}
		cniName = comp.DaemonSet
	}
	needTwo := false
	for _, p := range cfg.Placements {
		needTwo = needTwo || needsTwoNodes(p)
	}
	choice, err := SelectNodes(ctx, cs, cfg, agentNodes, cniName, needTwo)
	if err != nil {
		return nil, err
	}
	p := &Plan{Skipped: map[string]string{}}
	p.Layout = Layout{
		Namespace: cfg.Namespace, CreateNamespace: !exists, RunID: cfg.RunID,
		Image: cfg.Image, PullPolicy: cfg.PullPolicy, Nodes: choice.Nodes, Resources: cfg.Resources,
		Probes: cfg.Scale.probes(), Sysctls: cfg.podSysctls(), NetPolCheck: cfg.deniedProber(),
	}
	p.Layout.Endpoints, p.Layout.Services = endpointsFor(runnable(cfg, choice, p.Skipped), cfg.Pairs)
	if len(p.Layout.Endpoints) == 0 {
		return nil, fmt.Errorf("no placement can run on this cluster: %s", describeSkipped(p.Skipped))
	}
	p.Provenance = Provenance{
		KubernetesVersion: ver, Platform: platform, Namespace: cfg.Namespace, Image: cfg.Image,
		Access: cfg.Access, RefusedNodes: choice.Refused, CNI: cni, Skipped: p.Skipped,
	}
	for i, n := range choice.objects {
		if n != nil {
			p.Provenance.Nodes = append(p.Provenance.Nodes, nodeInfo(fmt.Sprintf("node%d", i), n))
		}
	}
	return p, nil
}

// clearLeftovers refuses a namespace that holds an earlier run's objects,
// or deletes them with cfg.Force.
func clearLeftovers(ctx context.Context, cfg Config, cs kubernetes.Interface) error {
	left, err := Find(ctx, cs, cfg.Namespace, ManagedSelector())
	if err != nil || len(left) == 0 {
		return err
	}
	if !cfg.Force {
		return fmt.Errorf("namespace %s holds an earlier cnibench run's objects (%s): run 'cnibench k8s cleanup --namespace %s' or pass --force", cfg.Namespace, Describe(left), cfg.Namespace)
	}
	if cfg.Progress != nil {
		fmt.Fprintf(cfg.Progress, "--force: ")
	}
	_, err = Cleanup(cs, cfg.Namespace, ManagedSelector(), cfg.Timeout, cfg.Progress)
	return err
}

// runnable are the placements the chosen nodes can host (the others go
// into skipped with the reason); a sweep keeps the first.
func runnable(cfg Config, choice NodeChoice, skipped map[string]string) []string {
	var run []string
	for _, pl := range cfg.Placements {
		if needsTwoNodes(pl) && choice.Nodes[1] == "" {
			skipped[pl] = choice.OneNodeReason()
			continue
		}
		run = append(run, pl)
	}
	if cfg.Scale != nil && len(run) > 1 {
		// A sweep measures on one placement: the first the cluster can
		// host (other-node, else same-node on a one-node cluster).
		run = run[:1]
	}
	return run
}

func describeSkipped(skipped map[string]string) string {
	var parts []string
	for p, why := range skipped {
		parts = append(parts, p+": "+why)
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// recordEndpoints fills the provenance's endpoint map from the live pods.
func (t *Target) recordEndpoints() {
	t.prov.Endpoints = map[string]EndpointInfo{}
	for ep, p := range t.pods {
		t.prov.Endpoints[ep] = EndpointInfo{Pod: p.Name, Node: p.Spec.NodeName, IP: p.Status.PodIP,
			HostNetwork: p.Spec.HostNetwork, QOSClass: string(p.Status.QOSClass), PodSysctls: podSysctls(p)}
	}
	if len(t.services) > 0 {
		t.prov.Services = t.services
	}
}

// readSysctls records each agent's effective sysctls and every pod that
// runs without sysctls it asked for: in the provenance, as notes of the
// run, and as a warning in the progress. A failed read is a note, not an
// error (an agent image older than the CLI has no such endpoint).
func (t *Target) readSysctls(ctx context.Context) {
	t.prov.EndpointSysctls = map[string]agent.Sysctls{}
	for _, ep := range t.layout.Endpoints {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		s, err := t.agents[ep].Sysctls(rctx)
		cancel()
		if err != nil {
			t.prov.Notes = append(t.prov.Notes, fmt.Sprintf("effective sysctls of %s not read: %s", ep, oneLine(err.Error())))
			continue
		}
		t.prov.EndpointSysctls[ep] = *s
	}
	if t.fallback == nil {
		return
	}
	t.prov.SysctlDrops = t.fallback.Drops()
	for _, d := range t.prov.SysctlDrops {
		t.prov.Notes = append(t.prov.Notes, d.String())
		t.progress("warning: %s\n", d)
	}
}

// Notes implements suite.Noter: what the results must say about the
// target (sysctls dropped or not read).
func (t *Target) Notes() []string { return t.prov.Notes }

// Kind implements suite.Target.
func (t *Target) Kind() string { return "k8s" }

// Details implements suite.Target: the cluster's provenance.
func (t *Target) Details() map[string]any {
	d := t.prov.Map()
	if s := t.scaleDetails(); s != nil {
		d["service_scale"] = s
	}
	return d
}

// Placement implements suite.Target. A placement the cluster cannot host
// (other-node with one usable node) wraps suite.ErrUnsupported.
func (t *Target) Placement(name string) (results.Placement, error) { return t.placement(name, 0) }

// PairPlacement implements suite.PairPlacer: pair k's endpoints
// (suite.PairEndpoints), a pod-to-service pair through its own Service.
func (t *Target) PairPlacement(name string, k int) (results.Placement, error) {
	if k >= t.cfg.Pairs {
		return results.Placement{}, fmt.Errorf("pair %d of a run of %d pairs", k, t.cfg.Pairs)
	}
	return t.placement(name, k)
}

// placement is pair k's endpoints of a placement and its server's address.
func (t *Target) placement(name string, k int) (results.Placement, error) {
	eps, err := pairEndpoints(name, k)
	if err != nil {
		return results.Placement{}, err
	}
	if why, skip := t.skipped[name]; skip {
		return results.Placement{}, fmt.Errorf("%w: %s", suite.ErrUnsupported, why)
	}
	srv, ok := t.pods[eps[1]]
	if !ok {
		return results.Placement{}, fmt.Errorf("placement %s: no agent on %s (not in this run's plan)", name, eps[1])
	}
	addr := srv.Status.PodIP
	if isServicePlacement(name) {
		if addr, ok = t.services[eps[1]]; !ok {
			return results.Placement{}, fmt.Errorf("placement %s: no Service in front of %s", name, eps[1])
		}
	}
	path, node, _ := strings.Cut(name, "/")
	return results.Placement{Path: path, Node: node, Client: eps[0], Server: eps[1], ServerAddr: addr}, nil
}

// Agent implements suite.Target.
func (t *Target) Agent(endpoint string) (*agent.Client, error) {
	c, ok := t.agents[endpoint]
	if !ok {
		return nil, fmt.Errorf("no agent runs on %s", endpoint)
	}
	return c, nil
}

// ErrNoCPUAccounting is what CPUSeconds returns on the k8s target.
var ErrNoCPUAccounting = errors.New("CPU accounting is unsupported on the k8s target (yet)")

// CPUSeconds implements suite.Target: not available on clusters yet.
func (t *Target) CPUSeconds(string) (float64, error) { return 0, ErrNoCPUAccounting }

// Close stops the control connections and removes every object of this
// run (the namespace too, if the run created it), waiting until they are
// gone. It runs once, on its own context, so it also works after Ctrl-C.
func (t *Target) Close() error {
	t.closeOnce.Do(func() {
		t.deaths.Stop() // before the cleanup deletes what it watches
		if t.access != nil {
			_ = t.access.Close()
		}
		if t.cs == nil {
			return
		}
		// The sweep's dummies first (in parallel, rate-limited), then the
		// run's objects, then the cluster change is reverted: a smaller LB
		// map must not meet thousands of Services.
		dummyErr := errors.Join(t.closeScaleServices(), t.closeCiliumPolicies())
		_, t.closeErr = Cleanup(t.cs, t.cfg.Namespace, RunSelector(t.cfg.RunID), t.cfg.Timeout, t.cfg.Progress)
		restored, hubbleErr := t.hubble.restore()
		t.restored = restored
		t.closeErr = errors.Join(dummyErr, t.closeErr, t.revertClusterChange(), hubbleErr)
	})
	return t.closeErr
}

// Layout is what the run created.
func (t *Target) Layout() Layout { return t.layout }

func (t *Target) progress(format string, a ...any) {
	if t.cfg.Progress != nil {
		fmt.Fprintf(t.cfg.Progress, format, a...)
	}
}

func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("agent token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

func nonEmpty(s []string) []string {
	var out []string
	for _, v := range s {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
