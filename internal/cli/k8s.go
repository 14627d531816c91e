package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
	"github.com/cnibench/cnibench/targets/k8starget"
)

// k8sFlags are the `run --target k8s` settings.
type k8sFlags struct {
	kubeconfig, context, namespace, image string
	clientNode, serverNode, access        string
	datapathUsage                         string
	nodeSelector                          map[string]string
	timeout                               time.Duration
	dryRun, force, podSysctls             bool
}

func (f *k8sFlags) register(fs *pflag.FlagSet) {
	f.registerConn(fs)
	fs.StringVar(&f.image, "image", "", "k8s: agent image (default "+k8starget.DefaultImage()+"; build it with make image)")
	fs.StringVar(&f.clientNode, "client-node", "", "k8s: node of the client agents (node0; default: picked)")
	fs.StringVar(&f.serverNode, "server-node", "", "k8s: node of the other-node servers (node1; default: picked)")
	fs.StringToStringVar(&f.nodeSelector, "node-selector", nil, "k8s: only nodes with these labels, e.g. pool=bench")
	fs.StringVar(&f.access, "access", k8starget.AccessPortForward, "k8s: how the CLI reaches the agents' control API: port-forward (through the API server) or direct (pod IPs; the CLI runs in the cluster or on a node)")
	fs.StringVar(&f.datapathUsage, "datapath-usage", k8starget.UsageMetrics, "k8s: datapath CPU and memory per sample: metrics (metrics API, approximate), kubelet (kubelet summary, exact; needs nodes/proxy: k8s rbac --node-proxy) or off")
	fs.BoolVar(&f.podSysctls, "pod-sysctls", true, "k8s: agent pods set the lab's net.ipv4.ip_local_port_range=1024 65535 and net.ipv4.tcp_tw_reuse=1 (dropped, with a note, where the kubelet refuses it); false: kernel defaults")
	fs.BoolVar(&f.dryRun, "dry-run", false, "k8s: print every manifest the run would apply and exit (contacts no cluster)")
	fs.BoolVar(&f.force, "force", false, "k8s: remove an earlier run's leftovers in the namespace before starting")
}

// registerConn registers what every k8s command needs to reach a cluster.
func (f *k8sFlags) registerConn(fs *pflag.FlagSet) {
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "k8s: kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&f.context, "context", "", "k8s: kubeconfig context (default the current one)")
	fs.StringVar(&f.namespace, "namespace", k8starget.DefaultNamespace, "k8s: namespace of the agents (created if missing, removed afterwards if created)")
	fs.DurationVar(&f.timeout, "agent-timeout", k8starget.DefaultTimeout, "k8s: how long agents may take to become ready (and the test Services to forward), and cleanup to finish")
}

func (f *k8sFlags) config(placements []string, runID string, progress io.Writer) k8starget.Config {
	return k8starget.Config{
		Kubeconfig: f.kubeconfig, Context: f.context, Namespace: f.namespace, Image: f.image,
		ClientNode: f.clientNode, ServerNode: f.serverNode, NodeSelector: f.nodeSelector,
		Placements: placements, RunID: runID, Access: f.access, Timeout: f.timeout, Force: f.force,
		NoPodSysctls: !f.podSysctls, Progress: progress,
	}
}

// labOnlyFlags make no sense on a cluster; using one is an error, not a
// silent no-op.
var labOnlyFlags = []string{"scenarios", "nodes", "pods-per-node", "sysctl", "routing", "service-datapath"}

// runK8s runs the plan on a cluster (or prints its manifests with
// --dry-run). defaultPlacements says the user did not pick placements, so
// pod-to-service joins them: every cluster has a Service datapath.
func runK8s(cmd *cobra.Command, f *k8sFlags, plan *suite.Plan, defaultPlacements bool, out string) (err error) {
	for _, name := range labOnlyFlags {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			return fmt.Errorf("--%s is a lab setting: it does not apply to --target k8s", name)
		}
	}
	if err := k8starget.ValidateUsageMode(f.datapathUsage); err != nil {
		return err
	}
	if defaultPlacements {
		for _, p := range suite.ServicePlacements {
			if !contains(plan.Placements, p) {
				plan.Placements = append(plan.Placements, p)
			}
		}
	}
	runID := newRunID()
	w := progressOut(cmd.ErrOrStderr())
	cfg := f.config(plan.Placements, runID, w)
	if f.dryRun {
		return dryRunK8s(cmd.OutOrStdout(), w, cfg)
	}
	if out == "" {
		out = filepath.Join("cnibench-results", runID)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	cl, access, createdOut, err := f.connect(cfg, out, w)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	fmt.Fprintf(w, "cnibench run %s on cluster %q: profile %s\n", runID, cl.Context, plan.Profile)
	tgt, err := k8starget.Open(ctx, cfg, cl.Clientset, access, cl.Context)
	if err != nil {
		if createdOut {
			_ = os.Remove(out) // only if still empty
		}
		return openFailed(ctx, err)
	}
	defer func() {
		if cerr := tgt.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	fmt.Fprintln(w, tgt.SampleCount(plan))
	if err := tgt.SetDatapathUsage(f.datapathUsage); err != nil {
		return err
	}
	name := cl.Context
	if name == "" {
		name = "k8s"
	}
	runner := &suite.Runner{Scenarios: []suite.Scenario{{Name: name, Target: tgt}}, Plan: plan, OutDir: out, RunID: runID, Progress: w}
	run, runErr := runner.Run(ctx)
	if err := writeOutputs(cmd, out, run); err != nil {
		return err
	}
	if errors.Is(runErr, ctx.Err()) && ctx.Err() != nil {
		return fmt.Errorf("interrupted: completed samples are in %s (the run's cluster objects are removed)", filepath.Join(out, results.FileName))
	}
	return runErr
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
	dummies, about := k8starget.ScaleManifests(cfg, dryRunDummies)
	objs = append(objs, dummies...)
	var comments []string
	if cfg.ClientNode == "" || cfg.ServerNode == "" {
		comments = append(comments, fmt.Sprintf("nodes %s and %s are placeholders: replace them with your nodes' names (or pass --client-node and --server-node)", l.Nodes[0], l.Nodes[1]))
	}
	if about != "" {
		comments = append(comments, about)
	}
	fmt.Fprintf(stderr, "# dry run: %d manifests (the namespace is only created if missing; the token is generated per run; nodes %s and %s)\n",
		len(objs), l.Nodes[0], l.Nodes[1])
	for _, c := range comments {
		fmt.Fprintf(stdout, "# %s\n", c)
		fmt.Fprintf(stderr, "# %s\n", c)
	}
	return k8starget.WriteYAML(stdout, objs)
}

// dryRunDummies is how many dummy Services a sweep's dry run prints.
const dryRunDummies = 3

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func newK8sCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "k8s",
		Short: "Kubernetes helpers: cleanup, least-privilege RBAC, the agent image",
		Long: `Helpers for running cnibench on a cluster ('cnibench run --target k8s').

  cnibench k8s cleanup     remove every object cnibench made in the namespace
  cnibench k8s rbac        print the least-privilege RBAC the tool needs
  cnibench k8s image       write the agent image as a tarball (make image)`,
	}
	cmd.AddCommand(newK8sCleanupCmd(), newK8sRBACCmd(), newK8sImageCmd())
	return cmd
}

func newK8sCleanupCmd() *cobra.Command {
	var f k8sFlags
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Remove every object labelled app.kubernetes.io/managed-by=cnibench from the namespace",
		Long: `Remove every cnibench object (pods, Services, EndpointSlices, the token Secret)
from --namespace, of any run, and the namespace itself if cnibench created it.
It waits until they are gone (up to --agent-timeout). Objects not labelled
by cnibench are never touched.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := (&k8starget.Config{Namespace: f.namespace, RunID: "cleanup", Placements: []string{suite.PodToPodSameNode}, Timeout: f.timeout}).Validate(); err != nil {
				return err
			}
			cl, err := k8starget.Connect(f.kubeconfig, f.context)
			if err != nil {
				return err
			}
			objs, err := k8starget.Cleanup(cl.Clientset, f.namespace, k8starget.ManagedSelector(), f.timeout, cmd.ErrOrStderr())
			for _, o := range objs {
				fmt.Fprintf(cmd.OutOrStdout(), "deleted %s (run %s)\n", o, o.RunID)
			}
			if err == nil && len(objs) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "nothing of cnibench's in namespace %s\n", f.namespace)
			}
			return err
		},
	}
	f.registerConn(cmd.Flags())
	return cmd
}

func newK8sRBACCmd() *cobra.Command {
	var (
		namespace string
		subject   k8starget.Subject
		nodeProxy bool
		changes   bool   // k8s_scale.go: --allow-cluster-changes
		ciliumNS  string // where the Role for it goes
	)
	cmd := &cobra.Command{
		Use:   "rbac",
		Short: "Print the least-privilege RBAC cnibench needs (kubectl apply -f -)",
		Long: `Print, as YAML for 'kubectl apply -f -', the namespace for the agents and the
least-privilege rights to run cnibench there: a ClusterRole that only reads
(nodes, the datapath's DaemonSets and named ConfigMaps, pods to see where the
CNI agent runs, the namespace, the metrics API's pod metrics) and a Role in the namespace for the agents'
pods, port-forwards, Services, EndpointSlices and the one token Secret. The
namespace is the admin's: cnibench then neither creates nor deletes it.
Bind to --user, --group or --service-account NS/NAME (default: a
ServiceAccount "cnibench" in the namespace, for in-cluster runs).
--node-proxy adds get on nodes/proxy, which 'run --datapath-usage kubelet'
needs; it is off by default because nodes/proxy also reaches the kubelet's
exec API (root on every node).
--allow-cluster-changes adds a Role in --cilium-namespace to update the
cilium-config ConfigMap and the cilium DaemonSet, which 'run --tests
service-scale --allow-cluster-changes' needs to raise (and put back) the LB
map size; without it that run fails before changing anything.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var opts []k8starget.RBACOption
			if nodeProxy {
				opts = append(opts, k8starget.WithNodeProxy())
			}
			objs, err := k8starget.RBAC(namespace, subject, opts...)
			if err != nil {
				return err
			}
			if changes {
				more, err := k8starget.ClusterChangeRBAC(namespace, ciliumNS, subject)
				if err != nil {
					return err
				}
				objs = append(objs, more...)
			}
			return k8starget.WriteYAML(cmd.OutOrStdout(), objs)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&namespace, "namespace", k8starget.DefaultNamespace, "namespace of the agents")
	fs.StringVar(&subject.User, "user", "", "bind to this user")
	fs.StringVar(&subject.Group, "group", "", "bind to this group")
	fs.StringVar(&subject.ServiceAccount, "service-account", "", "bind to this service account (NS/NAME)")
	fs.BoolVar(&changes, "allow-cluster-changes", false, "also grant update on cilium-config and the cilium DaemonSet, for run --tests service-scale --allow-cluster-changes")
	fs.StringVar(&ciliumNS, "cilium-namespace", k8starget.DefaultCiliumNamespace, "namespace of Cilium, for --allow-cluster-changes")
	fs.BoolVar(&nodeProxy, "node-proxy", false, "also grant get on nodes/proxy, for --datapath-usage kubelet (nodes/proxy also reaches the kubelet's exec API: root on every node)")
	return cmd
}

func newK8sImageCmd() *cobra.Command {
	var o k8starget.ImageOptions
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Write the agent image (a static cnibench on an empty base) as a tarball, offline",
		Long: `Write the agent image as a tarball, without Docker or a registry: one layer
with the binary at /cnibench on an empty base, running as nobody. The tarball
is an OCI image layout with a docker-save manifest.json, so 'ctr image
import', 'docker load', 'kind load image-archive' and 'crane push' read it.
The binary must be static (CGO_ENABLED=0): 'make image' builds one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Binary == "" {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				o.Binary = exe
			}
			if strings.TrimSpace(o.Out) == "" {
				return errors.New("--out is required")
			}
			info, err := k8starget.BuildImage(o)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s linux/%s %d bytes -> %s\n", info.Ref, info.Digest, info.Architecture, info.Bytes, o.Out)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Binary, "binary", "", "static cnibench binary to package (default: this one)")
	fs.StringVar(&o.Ref, "tag", k8starget.DefaultImage(), "image reference written into the tarball")
	fs.StringVar(&o.Out, "out", "cnibench-image.tar", "tarball to write")
	return cmd
}

// connect reaches the cluster, checks that the results directory can be
// written (createdOut: the run makes it, so a run refused before any
// sample removes it again) and picks how the CLI reaches the agents.
func (f *k8sFlags) connect(cfg k8starget.Config, out string, w io.Writer) (cl *k8starget.Cluster, access k8starget.Access, createdOut bool, err error) {
	qps, burst := float32(k8starget.DefaultClientQPS), k8starget.DefaultClientBurst
	if cfg.Scale != nil {
		qps, burst = cfg.Scale.ClientRate()
	}
	if cl, err = k8starget.ConnectWith(f.kubeconfig, f.context, qps, burst); err != nil {
		return nil, nil, false, err
	}
	_, statErr := os.Stat(out)
	if err := results.CheckWritable(out); err != nil {
		return nil, nil, false, err
	}
	access = k8starget.Direct{}
	if cfg.Access == k8starget.AccessPortForward {
		access = &k8starget.PortForward{Config: cl.Config, Clientset: cl.Clientset, Log: w}
	}
	return cl, access, os.IsNotExist(statErr), nil
}
