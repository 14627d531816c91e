package k8starget

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/agent/nodeprobe"
)

// nodeCNIQueryTimeout bounds one probe's answer: it reads a few files.
const nodeCNIQueryTimeout = 10 * time.Second

// readNodeCNI reads the CNI config of the run's nodes and what their
// kernels offer encryption: from a sweep's node probes, which are up
// anyway, on every run; otherwise from node probes deployed for the
// moment (when allowed: nodeCNIProbeBlocked) and deleted once read, only
// when no DaemonSet named the CNI, or when the CNI's config turns
// encryption off (can these kernels encrypt at all?). Nothing here
// fails the run: what was not read is said in the CNI's Source and
// Encryption.
func (t *Target) readNodeCNI(ctx context.Context) {
	cni := t.prov.CNI
	if cni == nil {
		return
	}
	var configs []NodeCNIConfig
	var kernels []NodeKernel
	why := ""
	// What the probes are deployed for: the CNI's name, or the kernels'
	// word on the encryption the CNI's config leaves off.
	what, prefix := "the nodes' CNI config", noCNIDaemonSet
	if cni.Plugin != "unknown" {
		what, prefix = "the nodes' kernel support for encryption", "encryption "+cni.Encryption
	}
	switch {
	case len(t.scale.probes) > 0:
		configs, kernels = queryNodeCNI(ctx, t.scale.probes)
	case cni.Plugin != "unknown" && !cni.encryptionOff():
		return
	default:
		if why = nodeCNIProbeBlocked(ctx, t.cs, t.cfg, t.access); why != "" {
			t.progress("%s, and %s is not read: %s\n", prefix, what, why)
			break
		}
		t.progress("%s: reading %s with a node probe ...", prefix, what)
		if configs, kernels, why = t.probeNodeCNI(ctx); why != "" {
			t.progress(" not read: %s\n", why)
			for _, n := range t.layout.Nodes {
				if n != "" {
					kernels = append(kernels, NodeKernel{Node: n, Error: why})
				}
			}
			break
		}
		var found []string
		if cni.Plugin == "unknown" {
			for _, n := range configs {
				found = append(found, n.String())
			}
		}
		if k := kernelNote(kernels); k != "" {
			found = append(found, k)
		}
		t.progress(" %s\n", strings.Join(found, "; "))
	}
	cni.applyNodeCNI(configs, why)
	cni.NodeKernel = kernels
	cni.Encryption = cni.encryption()
}

// nodeCNIProbeBlocked says why this run may not deploy node probes to
// read the nodes' CNI config, "" when it may. They are privileged
// hostNetwork pods, so only in a namespace whose Pod Security level admits
// them (one cnibench creates is labelled privileged, as is the one `k8s
// rbac` prints), through an access that reaches their port, and never
// with --node-cni-probe=false.
func nodeCNIProbeBlocked(ctx context.Context, cs kubernetes.Interface, cfg Config, access Access) string {
	if cfg.NoNodeCNIProbe {
		return "--node-cni-probe=false"
	}
	if _, ok := access.(PortAccess); !ok {
		return fmt.Sprintf("access %s cannot reach the node probe's port %d", access.Name(), agent.DefaultProbePort)
	}
	level, err := probeRejectingLevel(ctx, cs, cfg.Namespace)
	if err != nil {
		return oneLine(err.Error())
	}
	if level != "" {
		return fmt.Sprintf("namespace %s has %s=%s, which rejects the privileged node probe", cfg.Namespace, LabelPodSecurity, level)
	}
	return ""
}

// probeNodeCNI creates a node probe per run node, asks each for its
// node's CNI config and kernel and deletes them: they do not stay for
// the measurement. why says what kept every probe from answering.
func (t *Target) probeNodeCNI(ctx context.Context) (configs []NodeCNIConfig, kernels []NodeKernel, why string) {
	pods := NodeCNIProbes(t.layout)
	defer t.deleteProbes(pods)
	var names []string
	for _, p := range pods {
		if _, err := t.cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{FieldManager: ManagedBy}); err != nil {
			return nil, nil, fmt.Sprintf("creating the node probe %s was refused: %s", p.Name, oneLine(err.Error()))
		}
		names = append(names, p.Name)
	}
	ready, err := waitReady(ctx, t.cs, t.cfg.Namespace, t.cfg.RunID, names, t.cfg.Timeout, nil)
	if err != nil {
		return nil, nil, "the node probe did not become ready: " + oneLine(err.Error())
	}
	pa := t.access.(PortAccess) // nodeCNIProbeBlocked checked it
	var probes []NodeProbe
	for _, p := range pods {
		pod := ready[p.Name]
		c, err := t.dialProbe(ctx, pa, pod)
		if err != nil {
			configs = append(configs, NodeCNIConfig{Node: pod.Spec.NodeName, CNIConfig: nodeprobe.CNIConfig{Error: oneLine(err.Error())}})
			kernels = append(kernels, NodeKernel{Node: pod.Spec.NodeName, Error: oneLine(err.Error())})
			continue
		}
		probes = append(probes, NodeProbe{Node: pod.Spec.NodeName, Client: c})
	}
	c, k := queryNodeCNI(ctx, probes)
	return append(configs, c...), append(kernels, k...), ""
}

// dialProbe reaches a node probe pod with the run's token.
func (t *Target) dialProbe(ctx context.Context, pa PortAccess, p *corev1.Pod) (*agent.Client, error) {
	control, err := pa.ControlOn(ctx, p, agent.DefaultProbePort)
	if err != nil {
		return nil, err
	}
	c, err := agent.NewClient(p.Labels[LabelEndpoint], control, t.layout.Token)
	if err != nil {
		return nil, err
	}
	if err := c.WaitReady(ctx, agentReadyTimeout); err != nil {
		return nil, fmt.Errorf("node probe %s/%s on %s: %w", p.Namespace, p.Name, p.Spec.NodeName, err)
	}
	return c, nil
}

// deleteProbes removes the probes read for the CNI and what the access
// holds for them; Close waits for them to be gone with everything else.
func (t *Target) deleteProbes(pods []*corev1.Pod) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, p := range pods {
		release(t.access, p)
		err := t.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.progress("warning: delete node probe %s: %s (removed at the end of the run)\n", p.Name, oneLine(err.Error()))
		}
	}
}

// queryNodeCNI asks each probe for its node's CNI config and kernel; a
// probe that does not answer is its node's Error.
func queryNodeCNI(ctx context.Context, probes []NodeProbe) ([]NodeCNIConfig, []NodeKernel) {
	var configs []NodeCNIConfig
	var kernels []NodeKernel
	for _, p := range probes {
		qctx, cancel := context.WithTimeout(ctx, nodeCNIQueryTimeout)
		rep, err := p.Client.NodeServices(qctx, nodeprobe.Query{CNIConfig: true})
		cancel()
		n, k := NodeCNIConfig{Node: p.Node}, NodeKernel{Node: p.Node}
		switch {
		case err != nil:
			n.Error, k.Error = oneLine(err.Error()), oneLine(err.Error())
		case rep.CNI == nil:
			n.Error, k.Error = "the node probe answered no CNI config (an agent image older than the CLI?)", "the node probe answered no CNI config"
		default:
			n.CNIConfig = *rep.CNI
			if rep.Kernel == nil {
				k.Error = "the node probe answered no kernel support (an agent image older than the CLI?)"
			} else {
				k.KernelEncryption = *rep.Kernel
			}
		}
		configs, kernels = append(configs, n), append(kernels, k)
	}
	return configs, kernels
}
