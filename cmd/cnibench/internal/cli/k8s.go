package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/suite"
	"github.com/cnibench/cnibench/targets/k8starget"
)

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
		Long: `Remove every cnibench object (pods, Services, EndpointSlices, NetworkPolicies,
the token Secret) from --namespace, of any run, and the namespace itself if
cnibench created it. It waits until they are gone (up to --agent-timeout).
Objects not labelled by cnibench are never touched. A run killed while it had
changed Cilium's configuration (--allow-cluster-changes: enable-hubble for
--profile security) left the value from before on cilium-config as an
annotation: cleanup puts it back, removes the annotation and restarts the
cilium DaemonSet, waiting for the rollout.`,
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
			// A run killed while it had Cilium's configuration changed
			// (--allow-cluster-changes) left a record on cilium-config.
			restored, rerr := k8starget.RestoreCiliumConfig(cl.Clientset, k8starget.DefaultRolloutTimeout, cmd.ErrOrStderr())
			for _, r := range restored {
				fmt.Fprintf(cmd.OutOrStdout(), "restored %s\n", r)
			}
			if err == nil && rerr == nil && len(objs) == 0 && len(restored) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "nothing of cnibench's in namespace %s\n", f.namespace)
			}
			return errors.Join(err, rerr)
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
map size and 'run --profile security --allow-cluster-changes' to switch
Hubble, and pods/exec there, where the security profile asks each Cilium
agent for its Hubble state (cilium-dbg status): exec cannot be limited to the
agents' generated pod names, so it reaches every pod of that namespace. Without
it those runs fail (or refuse the flows twin) before changing anything.`,
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
	fs.BoolVar(&changes, "allow-cluster-changes", false, "also grant update on cilium-config and the cilium DaemonSet and pods/exec in Cilium's namespace, for run --allow-cluster-changes (the sweep, the churn, --profile security)")
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
