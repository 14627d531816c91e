package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
	"github.com/cnibench/cnibench/targets/k8starget"
)

func init() {
	registerTarget("k8s", "Kubernetes flags", func(g *globals) targetKind { return &k8sKind{g: g} })
}

// k8sKind is a Kubernetes cluster as a --target: agents as pods on two
// nodes, reached through kubeconfig; one scenario, named after the
// kubeconfig context.
type k8sKind struct {
	g  *globals
	kf k8sFlags
	// the sweep's
	syncTimeout         time.Duration
	syncVerify          string
	allowClusterChanges bool
	apiQPS              float64
	apiBurst            int
	apiWorkers          int
}

func (k *k8sKind) register(fs *pflag.FlagSet) {
	k.kf.register(fs)
	fs.DurationVar(&k.syncTimeout, "sync-timeout", k8starget.DefaultSyncTimeout, "sweep: how long every node may take to hold a step's Services")
	fs.StringVar(&k.syncVerify, "sync-verify", k8starget.SyncNode, "sweep: node (a privileged probe pod per node reads kube-proxy's or Cilium's state) or api (the API server only)")
	fs.Float64Var(&k.apiQPS, "api-qps", k8starget.DefaultScaleQPS, "sweep: API writes per second creating and deleting the dummy Services and EndpointSlices")
	fs.IntVar(&k.apiBurst, "api-burst", 0, "sweep: burst of those writes (default: --api-qps)")
	fs.IntVar(&k.apiWorkers, "api-workers", 0, fmt.Sprintf("sweep: parallel writers of those writes, 1..256 (default %d; TKE's SVC_CREATE_PARALLEL)", k8starget.DefaultScaleWorkers))
	fs.BoolVar(&k.allowClusterChanges, "allow-cluster-changes", false, "let the run change Cilium's configuration and restart its agents, put back at the end (or by k8s cleanup): the sweep and the churn raise bpf-lb-map-max when the largest step needs it; --profile security switches Hubble (enable-hubble) for its flows twin")
	appliesTo(fs, annSchedule, []string{scheduleReprograms}, "sync-timeout", "sync-verify", "api-qps", "api-burst", "api-workers")
	fs.BoolVar(&k.kf.networkPolicyCheck, "network-policy-check", false, "apply a NetworkPolicy (only the client may reach the pod servers), verify it with a denied probe before measuring and record enforced, not enforced or broken; the policy stays for the run")
	appliesTo(fs, annSchedule, []string{scheduleRounds}, "network-policy-check")
}

// open checks the flags, prints the manifests and stops (--dry-run), or
// connects, checks the results directory and opens the target.
func (k *k8sKind) open(ctx context.Context, req *runRequest) ([]suite.Scenario, error) {
	f, plan := &k.kf, req.plan
	if err := k8sApplies(req); err != nil {
		return nil, err
	}
	if err := k8starget.ValidateUsageMode(f.datapathUsage); err != nil {
		return nil, err
	}
	rp := req.reprogramming()
	security := req.plan.Profile == suite.SecurityProfile && rp == nil
	if rp == nil && !security && len(req.opts.Placements) == 0 && plan.Reproduces == nil {
		// Every cluster has a Service datapath: pod-to-service joins
		// the default placements (a published report's profile keeps
		// the report's).
		for _, p := range suite.ServicePlacements {
			if !contains(plan.Placements, p) {
				plan.Placements = append(plan.Placements, p)
			}
		}
	}
	w := progressOut(req.progress)
	req.progress = w
	cfg := f.config(plan.Placements, req.runID, w)
	cfg.Pairs = plan.PairCount()
	if rp != nil {
		if k.apiQPS <= 0 { // 0 would mean the default to ScaleConfig
			return nil, fmt.Errorf("--api-qps must be in 1..%d, got %g", k8starget.MaxScaleQPS, k.apiQPS)
		}
		cfg.Scale = &k8starget.ScaleConfig{SyncVerify: k.syncVerify, SyncTimeout: k.syncTimeout,
			AllowClusterChanges: k.allowClusterChanges, QPS: k.apiQPS, Burst: k.apiBurst, Workers: k.apiWorkers,
			Services: rp.Services, Endpoints: rp.Endpoints, Churn: rp.Live}
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
	}
	if security {
		cfg.Security = &k8starget.SecurityConfig{AllowClusterChanges: k.allowClusterChanges}
	}
	if f.dryRun {
		return nil, dryRunK8s(req.stdout, w, cfg)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := req.claimOut(); err != nil {
		return nil, err
	}
	req.cleanup = []string{"cnibench k8s cleanup --namespace " + cfg.Namespace}
	k.g.intr.cleansUp(req.cleanup...)
	cl, access, err := f.connect(cfg, w)
	if err != nil {
		return nil, err
	}
	k.header(req, cl.Context, cfg)
	cfg.Dynamic = cl.Dynamic // the NetworkPolicy check's CiliumNetworkPolicy
	if cfg.Security != nil {
		cfg.Security.Exec = &k8starget.PodExec{Config: cl.Config, Clientset: cl.Clientset}
	}
	tgt, err := k8starget.Open(ctx, cfg, cl.Clientset, access, cl.Context)
	if err != nil {
		return nil, openFailed(ctx, err)
	}
	if rp == nil {
		fmt.Fprintln(w, tgt.SampleCount(plan))
	}
	if err := tgt.SetDatapathUsage(f.datapathUsage); err != nil {
		return nil, errors.Join(err, tgt.Close())
	}
	model, datapath := tgt.LabModel()
	if err := suite.OnCluster(req.plan, model, datapath); err != nil {
		return nil, errors.Join(err, tgt.Close())
	}
	return k.scenarios(req, cl.Context, tgt, cfg), nil
}

// scenarios are the cluster's, named after the kubeconfig context: the
// cluster as it is, with what the schedule measures beside it (the
// churn's twin), or the security profile's twins — all one Target,
// switched between samples and closed once.
func (k *k8sKind) scenarios(req *runRequest, context string, tgt *k8starget.Target, cfg k8starget.Config) []suite.Scenario {
	name := context
	if name == "" {
		name = "k8s"
	}
	base := suite.Scenario{Name: name, Parts: results.ScenarioName{name}, Target: tgt}
	if cfg.Security != nil {
		twins, scs, notMeasured := tgt.SecurityTwins(name)
		req.plan.Questions = suite.TwinQuestions(name)
		req.schedule = &suite.Twins{Base: name, Twins: twins, NotMeasured: notMeasured}
		return append([]suite.Scenario{base}, scs...)
	}
	var scs []suite.Scenario
	for _, n := range suite.ExpandScenarios(req.schedule, []results.ScenarioName{base.Parts}) {
		scs = append(scs, suite.Scenario{Name: n.String(), Parts: n, Target: tgt})
	}
	return scs
}

// header prints the run's first line: the cluster, and for a schedule
// that reprograms its Services how it writes and verifies them.
func (k *k8sKind) header(req *runRequest, context string, cfg k8starget.Config) {
	plan := req.plan
	switch {
	case cfg.Scale != nil:
		s := cfg.Scale
		fmt.Fprintf(req.progress, "cnibench run %s on cluster %q: %s, written at up to %g/s (burst %d, %d writers), verified %s within %s, %s, %d rounds: about %s of measurement plus programming\n",
			req.runID, context, req.about, s.QPS, s.Burst, s.Workers, k.syncText(cfg), s.SyncTimeout, strings.Join(plan.Tests, ", "), plan.Rounds,
			req.estimate(scenarioStrings(suite.ExpandScenarios(req.schedule, []results.ScenarioName{{context}}))))
	case cfg.Security != nil:
		fmt.Fprintf(req.progress, "cnibench run %s on cluster %q: profile %s as twins on this cluster (the policy and flows parts switched between samples, the L7 parts not measured: see the results), %s on %s, %d rounds\n",
			req.runID, context, plan.Profile, strings.Join(plan.Tests, ", "), strings.Join(plan.Placements, ", "), plan.Rounds)
	default:
		pairs := ""
		if n := plan.PairCount(); n > 1 {
			pairs = fmt.Sprintf(", %d pairs at once per sample", n)
		}
		fmt.Fprintf(req.progress, "cnibench run %s on cluster %q: profile %s%s\n", req.runID, context, plan.Profile, pairs)
	}
}

// syncText says where a sweep's steps or a churn's changes are verified.
func (k *k8sKind) syncText(cfg k8starget.Config) string {
	if cfg.Scale.SyncVerify == k8starget.SyncAPI {
		return "in the API server only"
	}
	return "on every node (node probes)"
}

// k8sFlags are the k8s target's settings of the schedules' commands (run, sweep, churn).
type k8sFlags struct {
	kubeconfig, context, namespace, image string
	clientNode, serverNode, access        string
	datapathUsage                         string
	nodeSelector                          map[string]string
	timeout                               time.Duration
	dryRun, force, podSysctls             bool
	nodeCNIProbe                          bool
	networkPolicyCheck                    bool // k8sKind.register: run only
}

func (f *k8sFlags) register(fs *pflag.FlagSet) {
	f.registerConn(fs)
	fs.StringVar(&f.image, "image", "", "agent image (default "+k8starget.DefaultImage()+"; build it with make image)")
	fs.StringVar(&f.clientNode, "client-node", "", "node of the client agents (node0; default: picked)")
	fs.StringVar(&f.serverNode, "server-node", "", "node of the other-node servers (node1; default: picked)")
	fs.StringToStringVar(&f.nodeSelector, "node-selector", nil, "only nodes with these labels, e.g. pool=bench")
	fs.StringVar(&f.access, "access", k8starget.AccessPortForward, "how the CLI reaches the agents' control API: port-forward (through the API server) or direct (pod IPs; the CLI runs in the cluster or on a node)")
	fs.StringVar(&f.datapathUsage, "datapath-usage", k8starget.UsageMetrics, "datapath CPU and memory per sample: metrics (metrics API, approximate), kubelet (kubelet summary, exact; needs nodes/proxy: k8s rbac --node-proxy) or off")
	fs.BoolVar(&f.podSysctls, "pod-sysctls", true, "agent pods set the lab's net.ipv4.ip_local_port_range=1024 65535 and net.ipv4.tcp_tw_reuse=1 (dropped, with a note, where the kubelet refuses it); false: kernel defaults")
	fs.BoolVar(&f.nodeCNIProbe, "node-cni-probe", true, "when no CNI DaemonSet is recognised, name the CNI from each node's /etc/cni/net.d, and when the CNI's config turns encryption off, ask each node's kernel whether it could encrypt, read by a privileged node probe pod deployed for a moment; false: never (the CNI stays unknown, the encryption is the config's alone)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print every manifest the run would apply and exit (contacts no cluster)")
	fs.BoolVar(&f.force, "force", false, "remove an earlier run's leftovers in the namespace before starting")
}

// registerConn registers what every k8s command needs to reach a cluster.
func (f *k8sFlags) registerConn(fs *pflag.FlagSet) {
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&f.context, "context", "", "kubeconfig context (default the current one)")
	fs.StringVar(&f.namespace, "namespace", k8starget.DefaultNamespace, "namespace of the agents (created if missing, removed afterwards if created)")
	fs.DurationVar(&f.timeout, "agent-timeout", k8starget.DefaultTimeout, "how long agents may take to become ready (and the test Services to forward), and cleanup to finish")
}

func (f *k8sFlags) config(placements []string, runID string, progress io.Writer) k8starget.Config {
	return k8starget.Config{
		Kubeconfig: f.kubeconfig, Context: f.context, Namespace: f.namespace, Image: f.image,
		ClientNode: f.clientNode, ServerNode: f.serverNode, NodeSelector: f.nodeSelector,
		Placements: placements, RunID: runID, Access: f.access, Timeout: f.timeout, Force: f.force,
		NoPodSysctls: !f.podSysctls, NoNodeCNIProbe: !f.nodeCNIProbe, NetworkPolicyCheck: f.networkPolicyCheck, Progress: progress,
	}
}

// openFailed words an Open error: Ctrl-C while the agents start is an
// interruption (Open has removed what it created), not the error of the
// step it cut short (e.g. "port-forward to pod ...: context canceled").
func openFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return errors.New("interrupted before the first sample: nothing measured (the run's cluster objects are removed)")
	}
	return err
}

// dryRunK8s prints every manifest of a run without contacting a cluster:
// objects an API server accepts as they are (nodes not given are valid
// placeholder names, said in a comment), and for a Service-scale sweep
// the first few dummy Services with their EndpointSlices.
func dryRunK8s(stdout, stderr io.Writer, cfg k8starget.Config) error {
	l, err := k8starget.OfflineLayout(cfg, "generated-per-run")
	if err != nil {
		return err
	}
	m, err := k8starget.Build(l)
	if err != nil {
		return err
	}
	objs := m.Objects()
	var comments []string
	if cfg.ClientNode == "" || cfg.ServerNode == "" {
		comments = append(comments, fmt.Sprintf("nodes %s and %s are placeholders: replace them with your nodes' names (or pass --client-node and --server-node)", l.Nodes[0], l.Nodes[1]))
	}
	if probes := k8starget.NodeCNIProbes(l); len(probes) > 0 && !cfg.NoNodeCNIProbe {
		for _, p := range probes {
			objs = append(objs, p)
		}
		comments = append(comments, "the node probes (privileged, hostNetwork, the node's /etc/cni/net.d read-only) are created only when no CNI DaemonSet is recognised, to name the CNI from each node's config, or when the CNI's config turns encryption off, to ask each node's kernel whether it could encrypt, and deleted once read (--node-cni-probe=false: never)")
	}
	dummies, about := k8starget.ScaleManifests(cfg, dryRunDummies)
	objs = append(objs, dummies...)
	if about != "" {
		comments = append(comments, about)
	}
	fmt.Fprintf(stderr, "# dry run: %d manifests (the namespace is only created if missing; the token is generated per run; nodes %s and %s)\n",
		len(objs), l.Nodes[0], l.Nodes[1])
	if cfg.Security != nil {
		comments = append(comments, k8starget.SecurityPlan(cfg, "<context>")...)
	}
	for _, c := range comments {
		fmt.Fprintf(stdout, "# %s\n", c)
		fmt.Fprintf(stderr, "# %s\n", c)
	}
	return k8starget.WriteYAML(stdout, objs)
}

// connect reaches the cluster and picks how the CLI reaches the agents.
func (f *k8sFlags) connect(cfg k8starget.Config, w io.Writer) (*k8starget.Cluster, k8starget.Access, error) {
	qps, burst := float32(k8starget.DefaultClientQPS), k8starget.DefaultClientBurst
	if cfg.Scale != nil {
		qps, burst = cfg.Scale.ClientRate()
	}
	cl, err := k8starget.ConnectWith(f.kubeconfig, f.context, qps, burst)
	if err != nil {
		return nil, nil, err
	}
	var access k8starget.Access = k8starget.Direct{}
	if cfg.Access == k8starget.AccessPortForward {
		access = &k8starget.PortForward{Config: cl.Config, Clientset: cl.Clientset, Log: w}
	}
	return cl, access, nil
}

// k8sApplies refuses, in one line, what a cluster run cannot do rather
// than run something else: a profile whose questions are lab scenarios
// side by side (a cluster is measured as it is, one scenario; the
// security profile runs as twins of the one cluster), flame graphs (perf
// on this machine's CPUs, where the lab's agents run), and
// --allow-cluster-changes where nothing would change the cluster.
func k8sApplies(req *runRequest) error {
	if req.reprograms() {
		return nil
	}
	if req.flags.Changed("allow-cluster-changes") && req.plan.Profile != suite.SecurityProfile {
		return fmt.Errorf("--allow-cluster-changes applies to the Service-scale sweep, the churn and --profile security only")
	}
	if prof, err := suite.LookupProfile(req.plan.Profile); err == nil && len(prof.Scenarios) > 0 && prof.Name != suite.SecurityProfile && !prof.OnCluster {
		return fmt.Errorf("--profile %s compares lab scenarios side by side (%s): it does not apply to --target k8s, which measures the cluster as it is (use --profile %s there)",
			prof.Name, strings.Join(prof.Scenarios[:min(len(prof.Scenarios), 3)], ", ")+ellipsis(len(prof.Scenarios) > 3), clusterProfiles())
	}
	if req.plan.FlameGraph != "" {
		return fmt.Errorf("--flame-graph samples the lab's agents' CPUs with perf on this machine: it does not apply to --target k8s")
	}
	return nil
}

func ellipsis(more bool) string {
	if more {
		return ", …"
	}
	return ""
}
