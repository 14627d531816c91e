package k8starget

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// Datapath components recognised by their DaemonSet names (the names their
// upstream manifests and Helm charts use).
var knownDaemonSets = map[string]string{
	"cilium":          "cilium",
	"calico-node":     "calico",
	"aws-node":        "aws-vpc-cni",
	"kube-flannel-ds": "flannel",
	"kube-flannel":    "flannel",
	"canal":           "canal",
	"kube-router":     "kube-router",
	"antrea-agent":    "antrea",
	"weave-net":       "weave",
	"kube-proxy":      "kube-proxy",
}

// cniPreference orders CNIs when several are present: aws-node with Calico
// for policy is an AWS VPC CNI cluster; Cilium chained on aws-node is Cilium.
var cniPreference = []string{"cilium", "calico", "antrea", "flannel", "canal", "kube-router", "weave", "aws-vpc-cni"}

// Component is one datapath DaemonSet found in the cluster.
type Component struct {
	Plugin    string            `json:"plugin"` // cilium, calico, aws-vpc-cni, flannel, kube-proxy, ...
	Namespace string            `json:"namespace"`
	DaemonSet string            `json:"daemonset"`
	Image     string            `json:"image"`
	Version   string            `json:"version"` // the image tag
	Desired   int32             `json:"desired"`
	Ready     int32             `json:"ready"`
	Env       map[string]string `json:"env,omitempty"` // mode-defining env of the agent container
	selector  *metav1.LabelSelector
}

// CNI is the cluster's CNI and its mode, as found in the cluster's objects.
type CNI struct {
	Plugin string `json:"plugin"` // the main CNI, "unknown" if none was recognised
	// Source says where Plugin was read ("DaemonSet kube-system/cilium",
	// "node CNI config /etc/cni/net.d/10-bridge.conflist on worker-a"),
	// or why it is unknown.
	Source     string      `json:"source"`
	Components []Component `json:"components"`
	// NodeConfig is each run node's CNI config as its node probe read it
	// (nodecni.go): when no DaemonSet names the CNI, and on every run
	// whose node probes are up anyway (a sweep's).
	NodeConfig []NodeCNIConfig `json:"node_config,omitempty"`
	// NodeKernel is each run node's kernel support for encryption as its
	// node probe read it (encryption.go), with NodeConfig, and also where
	// a DaemonSet named the CNI and its config turns encryption off.
	NodeKernel []NodeKernel `json:"node_kernel,omitempty"`
	// Cilium is the cilium-config ConfigMap's mode-defining keys.
	Cilium *CiliumConfig `json:"cilium,omitempty"`
	// KubeProxy is kube-proxy's mode, absent without kube-proxy.
	KubeProxy *KubeProxy `json:"kube_proxy,omitempty"`
	// Flannel is the backend from kube-flannel-cfg.
	FlannelBackend string `json:"flannel_backend,omitempty"`
	// meshComponents are the mesh DaemonSets of the same listing
	// (mesh.go), recorded under the run's mesh, not here.
	meshComponents []Component
	// Encryption is the CNI's node-to-node encryption as its config says
	// (encryption.go): "wireguard (cilium enable-wireguard=true)", "none
	// (…)", or "unknown" when the CNI keeps it where we do not read; with
	// what the nodes' kernels offer where NodeKernel was read ("none
	// (cilium …; WireGuard unsupported on this kernel: nodes a, b; …)").
	Encryption string `json:"encryption"`
}

// CiliumConfig holds the cilium-config keys that change the datapath.
type CiliumConfig struct {
	RoutingMode          string            `json:"routing_mode"` // native | tunnel
	TunnelProtocol       string            `json:"tunnel_protocol,omitempty"`
	KubeProxyReplacement string            `json:"kube_proxy_replacement"`
	BPFLBMapMax          string            `json:"bpf_lb_map_max"`
	EnableHubble         string            `json:"enable_hubble"`
	Keys                 map[string]string `json:"keys"` // every key above as found, plus related ones
}

// ciliumKeys are recorded verbatim when present.
var ciliumKeys = []string{
	"routing-mode", "tunnel", "tunnel-protocol", "kube-proxy-replacement", "bpf-lb-map-max",
	"enable-hubble", "bpf-lb-algorithm", "bpf-lb-mode", "bpf-lb-acceleration", "datapath-mode",
	"enable-bpf-masquerade", "enable-ipv4-masquerade", "ipam", "enable-wireguard", "enable-ipsec",
	"enable-bandwidth-manager", "enable-bbr", "enable-host-legacy-routing", "enable-l7-proxy", "external-envoy-proxy",
}

// KubeProxy is kube-proxy's proxy mode.
type KubeProxy struct {
	Mode   string `json:"mode"`   // iptables | ipvs | nftables
	Source string `json:"source"` // where the mode was read, or "default"
	// MinSyncPeriod is the mode's minimum time between two rule syncs
	// (--*-min-sync-period or the config's <mode>.minSyncPeriod; "1s
	// (default)" when unset): it batches changes, so it bounds how soon a
	// new Service is programmed and how much CPU a burst of changes costs.
	MinSyncPeriod string `json:"min_sync_period,omitempty"`
}

// modeEnv are agent container env vars that select a datapath mode.
var modeEnv = map[string][]string{
	"calico":      {"FELIX_BPFENABLED", "CALICO_NETWORKING_BACKEND", "CALICO_IPV4POOL_IPIP", "CALICO_IPV4POOL_VXLAN", "FELIX_IPTABLESBACKEND", "FELIX_WIREGUARDENABLED"},
	"aws-vpc-cni": {"ENABLE_PREFIX_DELEGATION", "AWS_VPC_K8S_CNI_EXTERNALSNAT", "ENABLE_POD_ENI", "AWS_VPC_ENI_MTU", "ENABLE_IPv6"},
}

// DetectCNI finds the datapath DaemonSets and reads their mode from their
// ConfigMaps. It needs list on daemonsets and get on the ConfigMaps
// (cnibench k8s rbac); what it cannot read is reported as unknown.
func DetectCNI(ctx context.Context, cs kubernetes.Interface) (*CNI, error) {
	dss, err := cs.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list DaemonSets to detect the CNI: %w", err)
	}
	c := &CNI{Plugin: "unknown", Source: noCNIDaemonSet}
	for i := range dss.Items {
		ds := &dss.Items[i]
		if plugin, ok := knownDaemonSets[ds.Name]; ok {
			c.Components = append(c.Components, component(plugin, ds))
		}
		if plugin, ok := meshDaemonSets[ds.Name]; ok {
			c.meshComponents = append(c.meshComponents, component(plugin, ds))
		}
	}
	sort.Slice(c.Components, func(i, j int) bool {
		a, b := c.Components[i], c.Components[j]
		return a.Plugin+"/"+a.Namespace < b.Plugin+"/"+b.Namespace
	})
	for _, p := range cniPreference {
		if comp := c.component(p); comp != nil {
			c.Plugin, c.Source = p, "DaemonSet "+comp.Namespace+"/"+comp.DaemonSet
			break
		}
	}
	if comp := c.component("cilium"); comp != nil {
		if c.Cilium, err = ciliumConfig(ctx, cs, comp.Namespace); err != nil {
			return nil, err
		}
	}
	if comp := c.component("kube-proxy"); comp != nil {
		if c.KubeProxy, err = kubeProxyMode(ctx, cs, comp); err != nil {
			return nil, err
		}
	}
	if comp := c.component("flannel"); comp != nil {
		c.FlannelBackend = flannelBackend(ctx, cs, comp.Namespace)
	}
	c.Encryption = c.encryption()
	return c, nil
}

func (c *CNI) component(plugin string) *Component {
	for i := range c.Components {
		if c.Components[i].Plugin == plugin {
			return &c.Components[i]
		}
	}
	return nil
}

// Agent is the main CNI's DaemonSet, whose pod must run on every node used.
func (c *CNI) Agent() *Component {
	if c == nil || c.Plugin == "unknown" {
		return nil
	}
	return c.component(c.Plugin)
}

func component(plugin string, ds *appsv1.DaemonSet) Component {
	comp := Component{Plugin: plugin, Namespace: ds.Namespace, DaemonSet: ds.Name,
		Desired: ds.Status.DesiredNumberScheduled, Ready: ds.Status.NumberReady, selector: ds.Spec.Selector}
	if cs := ds.Spec.Template.Spec.Containers; len(cs) > 0 {
		main := cs[0]
		for _, c := range cs {
			if c.Name == ds.Name || strings.HasPrefix(ds.Name, c.Name) {
				main = c
				break
			}
		}
		comp.Image = main.Image
		comp.Version = imageTag(main.Image)
		for _, e := range main.Env {
			for _, want := range modeEnv[plugin] {
				if e.Name == want && e.Value != "" {
					if comp.Env == nil {
						comp.Env = map[string]string{}
					}
					comp.Env[e.Name] = e.Value
				}
			}
		}
	}
	return comp
}

// imageTag is the tag of an image reference (without digest), or "".
func imageTag(image string) string {
	ref, _, _ := strings.Cut(image, "@")
	slash := strings.LastIndex(ref, "/")
	if colon := strings.LastIndex(ref, ":"); colon > slash {
		return ref[colon+1:]
	}
	return ""
}

func ciliumConfig(ctx context.Context, cs kubernetes.Interface, ns string) (*CiliumConfig, error) {
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "cilium-config", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &CiliumConfig{RoutingMode: "unknown (no cilium-config)", Keys: map[string]string{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s/cilium-config: %w", ns, err)
	}
	cc := &CiliumConfig{Keys: map[string]string{}}
	for _, k := range ciliumKeys {
		if v, ok := cm.Data[k]; ok {
			cc.Keys[k] = v
		}
	}
	d := cm.Data
	// Cilium >= 1.14 says routing-mode; older ones say tunnel=disabled for
	// native routing or tunnel=vxlan|geneve.
	switch {
	case d["routing-mode"] != "":
		cc.RoutingMode = d["routing-mode"]
		if cc.RoutingMode == "tunnel" {
			cc.TunnelProtocol = or(d["tunnel-protocol"], "vxlan (default)")
		}
	case d["tunnel"] == "disabled":
		cc.RoutingMode = "native"
	case d["tunnel"] != "":
		cc.RoutingMode, cc.TunnelProtocol = "tunnel", d["tunnel"]
	default:
		cc.RoutingMode, cc.TunnelProtocol = "tunnel (default)", "vxlan (default)"
	}
	cc.KubeProxyReplacement = or(d["kube-proxy-replacement"], "false (default)")
	cc.BPFLBMapMax = or(d["bpf-lb-map-max"], "65536 (default)")
	cc.EnableHubble = or(d["enable-hubble"], "false (default)")
	return cc, nil
}

// kubeProxyMode reads the mode from kube-proxy's flags or its config file
// in a ConfigMap (kubeadm: kube-proxy/config.conf; EKS:
// kube-proxy-config/config). An empty mode means iptables on Linux.
func kubeProxyMode(ctx context.Context, cs kubernetes.Interface, comp *Component) (*KubeProxy, error) {
	ds, err := cs.AppsV1().DaemonSets(comp.Namespace).Get(ctx, comp.DaemonSet, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read kube-proxy DaemonSet: %w", err)
	}
	kp := &KubeProxy{}
	flagSync := map[string]string{} // mode → its --*-min-sync-period
	for _, c := range ds.Spec.Template.Spec.Containers {
		for _, a := range append(append([]string{}, c.Command...), c.Args...) {
			if v, ok := strings.CutPrefix(a, "--proxy-mode="); ok && v != "" {
				kp.Mode, kp.Source = v, "DaemonSet flag --proxy-mode"
			}
			for _, m := range []string{"iptables", "ipvs", "nftables"} {
				if v, ok := strings.CutPrefix(a, "--"+m+"-min-sync-period="); ok && v != "" {
					flagSync[m] = v + " (flag)"
				}
			}
		}
	}
	var conf struct {
		Mode     string                  `json:"mode"`
		IPTables struct{ kubeProxySync } `json:"iptables"`
		IPVS     struct{ kubeProxySync } `json:"ipvs"`
		NFTables struct{ kubeProxySync } `json:"nftables"`
	}
	for _, src := range [][2]string{{"kube-proxy", "config.conf"}, {"kube-proxy-config", "config"}} {
		cm, err := cs.CoreV1().ConfigMaps(comp.Namespace).Get(ctx, src[0], metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s/%s: %w", comp.Namespace, src[0], err)
		}
		text, ok := cm.Data[src[1]]
		if !ok {
			continue
		}
		if err := yaml.Unmarshal([]byte(text), &conf); err != nil {
			if kp.Mode != "" {
				break // the flag says the mode; the sync period stays unknown
			}
			return nil, fmt.Errorf("%s/%s %s: not a KubeProxyConfiguration: %v", comp.Namespace, src[0], src[1], err)
		}
		if kp.Mode == "" {
			kp.Source = "ConfigMap " + comp.Namespace + "/" + src[0]
			kp.Mode = conf.Mode
			if kp.Mode == "" {
				kp.Mode, kp.Source = "iptables", kp.Source+" (mode empty: iptables is the Linux default)"
			}
		}
		break
	}
	if kp.Mode == "" {
		kp.Mode, kp.Source = "iptables", "default (no mode flag or config found)"
	}
	confSync := map[string]string{"iptables": conf.IPTables.MinSyncPeriod, "ipvs": conf.IPVS.MinSyncPeriod, "nftables": conf.NFTables.MinSyncPeriod}
	switch {
	case flagSync[kp.Mode] != "":
		kp.MinSyncPeriod = flagSync[kp.Mode]
	case confSync[kp.Mode] != "":
		kp.MinSyncPeriod = confSync[kp.Mode]
	default:
		kp.MinSyncPeriod = "1s (default)"
	}
	return kp, nil
}

// kubeProxySync is the part of a kube-proxy mode's configuration recorded.
type kubeProxySync struct {
	MinSyncPeriod string `json:"minSyncPeriod"`
}

func flannelBackend(ctx context.Context, cs kubernetes.Interface, ns string) string {
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "kube-flannel-cfg", metav1.GetOptions{})
	if err != nil {
		return "unknown"
	}
	var conf struct {
		Backend struct {
			Type string `json:"Type"`
		} `json:"Backend"`
	}
	if json.Unmarshal([]byte(cm.Data["net-conf.json"]), &conf) != nil || conf.Backend.Type == "" {
		return "unknown"
	}
	return conf.Backend.Type
}

// AgentNodes lists the nodes where the component has a Ready pod.
func AgentNodes(ctx context.Context, cs kubernetes.Interface, comp *Component) (map[string]bool, error) {
	pods, err := comp.pods(ctx, cs)
	if err != nil {
		return nil, err
	}
	nodes := map[string]bool{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && podReady(&p) {
			nodes[p.Spec.NodeName] = true
		}
	}
	return nodes, nil
}

// pods lists the pods the component's DaemonSet selects (all of its
// namespace's when the selector is unknown).
func (c *Component) pods(ctx context.Context, cs kubernetes.Interface) (*corev1.PodList, error) {
	opts := metav1.ListOptions{}
	if c.selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(c.selector)
		if err != nil {
			return nil, fmt.Errorf("%s DaemonSet selector: %w", c.DaemonSet, err)
		}
		opts.LabelSelector = sel.String()
	}
	pods, err := cs.CoreV1().Pods(c.Namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list %s pods: %w", c.DaemonSet, err)
	}
	return pods, nil
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
