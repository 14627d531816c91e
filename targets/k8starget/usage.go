package k8starget

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
)

// Datapath usage modes (--datapath-usage): where each sample's datapath
// CPU and memory are read.
const (
	UsageMetrics = "metrics" // the metrics API (metrics-server): pods.metrics.k8s.io, windowed rates
	UsageKubelet = "kubelet" // the kubelet summary through nodes/proxy: cumulative counters
	UsageOff     = "off"
)

// ValidateUsageMode checks a --datapath-usage value.
func ValidateUsageMode(mode string) error {
	switch mode {
	case UsageMetrics, UsageKubelet, UsageOff:
		return nil
	}
	return fmt.Errorf("--datapath-usage %q: want %s, %s or %s", mode, UsageMetrics, UsageKubelet, UsageOff)
}

var (
	_ suite.UsageSampler = (*Target)(nil)
	_ suite.TestChecker  = (*Target)(nil)
)

// usageReader reads what the datapath components use on the run's nodes.
type usageReader struct {
	mode  string
	pods  kubernetes.Interface // typed API: which pods are the datapath's
	raw   kubernetes.Interface // raw reads: the metrics API, the node proxy
	cni   *CNI
	nodes []string
}

// SetDatapathUsage selects how the runner's samples read the datapath's
// CPU and memory (call it after Open). A Target that was never set, or set
// to off, reads nothing.
func (t *Target) SetDatapathUsage(mode string) error {
	if err := ValidateUsageMode(mode); err != nil {
		return err
	}
	t.usage = nil
	if mode != UsageOff {
		t.usage = &usageReader{mode: mode, pods: t.cs, raw: t.cs, cni: t.prov.CNI, nodes: nonEmpty(t.layout.Nodes[:])}
	}
	return nil
}

// usageMark is the reading at a sample's start.
type usageMark struct {
	at      time.Time
	kubelet []Usage                  // kubelet mode: cumulative counters
	places  map[string]podPlace      // metrics mode: namespace/pod → where
	rates   map[string]containerRate // metrics mode: namespace/pod/container → rate
}

// StartUsage implements suite.UsageSampler.
func (t *Target) StartUsage(ctx context.Context) (suite.UsageMark, error) {
	r := t.usage
	if r == nil {
		return nil, nil
	}
	if r.cni == nil || len(r.cni.Components) == 0 {
		return nil, errors.New("no datapath DaemonSet (CNI agent, kube-proxy) was recognised in the cluster: nothing to account")
	}
	m := &usageMark{}
	var err error
	switch r.mode {
	case UsageKubelet:
		m.kubelet, err = DatapathUsage(ctx, r.raw, r.nodes, r.cni)
	default:
		if m.places, err = datapathPods(ctx, r.pods, r.cni, r.nodes); err == nil {
			m.rates, err = readMetrics(ctx, r.raw, m.places)
		}
	}
	m.at = time.Now()
	if err != nil {
		return nil, err
	}
	return m, nil
}

// EndUsage implements suite.UsageSampler: in kubelet mode the CPU is the
// exact difference of cumulative counters; in metrics mode the mean of the
// rates read at both ends times the sample's length (approximate: the
// rates are averages over metrics-server's window, ~15 s or more).
// Containers not read at both ends (restarted, replaced) are left out.
func (t *Target) EndUsage(ctx context.Context, mark suite.UsageMark) (*results.DatapathUsage, error) {
	m, _ := mark.(*usageMark)
	r := t.usage
	if r == nil || m == nil {
		return nil, nil
	}
	var comps []results.ComponentUsage
	var window float64
	source := results.UsageSourceMetrics
	switch r.mode {
	case UsageKubelet:
		source = results.UsageSourceKubelet
		after, err := DatapathUsage(ctx, r.raw, r.nodes, r.cni)
		if err != nil {
			return nil, err
		}
		for _, d := range UsageDelta(m.kubelet, after) {
			comps = addComponent(comps, results.ComponentUsage{Plugin: d.Plugin, Node: d.Node, Pod: d.Pod, CPUSec: d.CPUSeconds, MemoryBytes: d.MemoryBytes})
		}
		seconds := time.Since(m.at).Seconds()
		return finishUsage(source, seconds, window, comps)
	default:
		rates, err := readMetrics(ctx, r.raw, m.places)
		if err != nil {
			return nil, err
		}
		seconds := time.Since(m.at).Seconds()
		keys := make([]string, 0, len(rates))
		for k := range rates {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			a, ok := m.rates[k]
			if !ok {
				continue
			}
			b := rates[k]
			window = max(window, a.window, b.window)
			comps = addComponent(comps, results.ComponentUsage{Plugin: b.plugin, Node: b.node, Pod: b.pod,
				CPUSec: (a.cores + b.cores) / 2 * seconds, MemoryBytes: b.memory})
		}
		return finishUsage(source, seconds, window, comps)
	}
}

func finishUsage(source string, seconds, window float64, comps []results.ComponentUsage) (*results.DatapathUsage, error) {
	if len(comps) == 0 {
		return nil, errors.New("no datapath container was read at both ends of the sample")
	}
	u := results.NewDatapathUsage(source, seconds, comps)
	u.WindowSec = window
	return u, nil
}

// addComponent sums containers into their pod's ComponentUsage.
func addComponent(comps []results.ComponentUsage, c results.ComponentUsage) []results.ComponentUsage {
	for i := range comps {
		if comps[i].Plugin == c.Plugin && comps[i].Node == c.Node && comps[i].Pod == c.Pod {
			comps[i].CPUSec += c.CPUSec
			comps[i].MemoryBytes += c.MemoryBytes
			return comps
		}
	}
	return append(comps, c)
}

// podPlace is a datapath pod's component and node.
type podPlace struct {
	plugin, node string
}

// datapathPods finds the datapath DaemonSets' pods on nodes (by the
// DaemonSet's selector and owner), keyed namespace/name: the metrics API
// does not say which node a pod runs on.
func datapathPods(ctx context.Context, cs kubernetes.Interface, cni *CNI, nodes []string) (map[string]podPlace, error) {
	on := map[string]bool{}
	for _, n := range nodes {
		on[n] = true
	}
	out := map[string]podPlace{}
	for i := range cni.Components {
		comp := &cni.Components[i]
		pods, err := comp.pods(ctx, cs)
		if err != nil {
			return nil, err
		}
		for j := range pods.Items {
			p := &pods.Items[j]
			if on[p.Spec.NodeName] && ownedBy(p, comp) {
				out[p.Namespace+"/"+p.Name] = podPlace{plugin: comp.Plugin, node: p.Spec.NodeName}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no pod of the datapath DaemonSets (%s) runs on %s", componentNames(cni), strings.Join(nodes, " or "))
	}
	return out, nil
}

// ownedBy tells whether a pod is the component's: owned by its DaemonSet,
// or, without an owner, named like its pods.
func ownedBy(p *corev1.Pod, comp *Component) bool {
	if ref := metav1.GetControllerOf(p); ref != nil {
		return ref.Kind == "DaemonSet" && ref.Name == comp.DaemonSet
	}
	return strings.HasPrefix(p.Name, comp.DaemonSet+"-")
}

func componentNames(cni *CNI) string {
	var n []string
	for _, c := range cni.Components {
		n = append(n, c.Namespace+"/"+c.DaemonSet)
	}
	return strings.Join(n, ", ")
}

// containerRate is one container's metrics API reading.
type containerRate struct {
	plugin, node, pod string
	cores             float64 // CPU rate over the window
	memory            uint64  // working set
	window            float64 // seconds
}

// podMetricsList is the part of metrics.k8s.io/v1beta1 PodMetricsList we
// read (not importing k8s.io/metrics for four fields).
type podMetricsList struct {
	Items []struct {
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		Window     string `json:"window"`
		Containers []struct {
			Name  string            `json:"name"`
			Usage map[string]string `json:"usage"`
		} `json:"containers"`
	} `json:"items"`
}

// readMetrics lists the pod metrics of the namespaces of places and keeps
// the containers of those pods.
func readMetrics(ctx context.Context, cs kubernetes.Interface, places map[string]podPlace) (map[string]containerRate, error) {
	namespaces := map[string]bool{}
	for k := range places {
		ns, _, _ := strings.Cut(k, "/")
		namespaces[ns] = true
	}
	out := map[string]containerRate{}
	for ns := range namespaces {
		path := "/apis/metrics.k8s.io/v1beta1/namespaces/" + ns + "/pods"
		raw, err := getRaw(ctx, cs, path)
		if err != nil {
			return nil, fmt.Errorf("metrics API (is metrics-server installed? else --datapath-usage kubelet or off): %w", err)
		}
		var l podMetricsList
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, fmt.Errorf("metrics API %s: %w", path, err)
		}
		for _, it := range l.Items {
			key := it.Metadata.Namespace + "/" + it.Metadata.Name
			pl, ok := places[key]
			if !ok {
				continue
			}
			window := 0.0
			if d, err := time.ParseDuration(it.Window); err == nil {
				window = d.Seconds()
			}
			for _, c := range it.Containers {
				cpu, err := resource.ParseQuantity(c.Usage["cpu"])
				if err != nil {
					return nil, fmt.Errorf("metrics API: pod %s container %s: cpu %q: %v", key, c.Name, c.Usage["cpu"], err)
				}
				r := containerRate{plugin: pl.plugin, node: pl.node, pod: it.Metadata.Name, cores: cpu.AsApproximateFloat64(), window: window}
				if mem, err := resource.ParseQuantity(c.Usage["memory"]); err == nil && mem.Sign() > 0 {
					r.memory = uint64(mem.Value())
				}
				out[key+"/"+c.Name] = r
			}
		}
	}
	return out, nil
}

// getRaw GETs an API path with the clientset's REST client.
func getRaw(ctx context.Context, cs kubernetes.Interface, path string) ([]byte, error) {
	rc, err := restClient(cs)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	return rc.Get().AbsPath(path).DoRaw(ctx)
}

// restClient is the clientset's REST client for raw reads; client-go's
// fake clientset has none, which is an error here, not a panic.
func restClient(cs kubernetes.Interface) (rest.Interface, error) {
	rc := cs.CoreV1().RESTClient()
	if c, ok := rc.(*rest.RESTClient); !ok || c == nil {
		return nil, errors.New("the clientset has no REST client for raw API reads")
	}
	return rc, nil
}

// CheckTest implements suite.TestChecker: the DNS tests' server side is a
// dnsmasq the server agent starts, and the agent image (a static cnibench
// on an empty base) has none.
func (t *Target) CheckTest(spec suite.TestSpec) error {
	if spec.IsDNS() {
		return fmt.Errorf("%w: %s needs dnsmasq in the server agent, and the agent image has none", suite.ErrUnsupported, spec.Name)
	}
	return nil
}
