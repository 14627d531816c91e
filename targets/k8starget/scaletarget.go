package k8starget

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/agent/nodeprobe"
	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/sweep"
	"github.com/cnibench/cnibench/suite"
)

// DefaultRolloutTimeout bounds each Cilium restart of the LB-map change
// (and of its revert): a rolling restart of every agent of a cluster.
const DefaultRolloutTimeout = 10 * time.Minute

// ScaleConfig makes a run a Service-scale sweep: with SyncVerify "node" a
// privileged probe pod per node reads what the node's Service proxy
// programmed, and before anything is created the Cilium LB map is checked
// for the largest step (changed only with AllowClusterChanges, and then
// reverted by Close).
type ScaleConfig struct {
	SyncVerify          string        `json:"sync_verify"`  // SyncNode (default) or SyncAPI
	SyncTimeout         time.Duration `json:"sync_timeout"` // per step and node (default 5m)
	SyncInterval        time.Duration `json:"-"`            // between probe reads (default 1s; tests shorten it)
	AllowClusterChanges bool          `json:"allow_cluster_changes,omitempty"`
	// Services and Endpoints are the largest step, for the LB-map
	// preflight (for a churn, the Services it keeps: the preflight adds
	// the one it adds and the endpoints of a scale-up).
	Services  int `json:"services"`
	Endpoints int `json:"endpoints_per_service"`
	// QPS (--api-qps), Burst (--api-burst, default = QPS) and Workers
	// (parallel writers) pace the API writes; 0: DefaultScaleQPS, …
	QPS            float64       `json:"qps,omitempty"`
	Burst          int           `json:"burst,omitempty"`
	Workers        int           `json:"workers,omitempty"`
	RolloutTimeout time.Duration `json:"rollout_timeout,omitempty"` // default 10m
	// Churn: the churn schedule, not the sweep, drives the Services
	// (ClusterServices.PerChange); the probes are read every
	// DefaultChurnSyncInterval unless SyncInterval says otherwise.
	Churn bool `json:"churn,omitempty"`
}

// probes tells whether the run needs node probes.
func (s *ScaleConfig) probes() bool { return s != nil && s.SyncVerify == SyncNode }

func (s *ScaleConfig) validate() error {
	if s == nil {
		return nil
	}
	switch s.SyncVerify {
	case "":
		s.SyncVerify = SyncNode
	case SyncNode, SyncAPI:
	default:
		return fmt.Errorf("--sync-verify %q: want node or api", s.SyncVerify)
	}
	if s.SyncTimeout == 0 {
		s.SyncTimeout = DefaultSyncTimeout
	}
	if s.SyncTimeout < 0 {
		return fmt.Errorf("--sync-timeout must be positive, got %s", s.SyncTimeout)
	}
	if s.Endpoints == 0 {
		s.Endpoints = sweep.DefaultEndpoints
	}
	if s.Services < 0 || s.Endpoints < 0 {
		return fmt.Errorf("service scale: %d Services × %d endpoints", s.Services, s.Endpoints)
	}
	if s.RolloutTimeout <= 0 {
		s.RolloutTimeout = DefaultRolloutTimeout
	}
	switch {
	case s.QPS == 0:
		s.QPS = DefaultScaleQPS
	case !(s.QPS >= 1 && s.QPS <= MaxScaleQPS): // NaN too
		return fmt.Errorf("--api-qps must be in 1..%d, got %g", MaxScaleQPS, s.QPS)
	}
	switch {
	case s.Burst == 0:
		s.Burst = max(int(s.QPS), 1)
	case s.Burst < 1 || s.Burst > MaxScaleQPS:
		return fmt.Errorf("--api-burst must be in 1..%d, got %d", MaxScaleQPS, s.Burst)
	}
	if s.Workers == 0 {
		s.Workers = DefaultScaleWorkers
	}
	if s.Workers < 1 || s.Workers > 256 {
		return fmt.Errorf("service scale: %d writers (want 1..256)", s.Workers)
	}
	if s.Churn && s.SyncVerify == SyncAPI {
		return fmt.Errorf("--sync-verify api: the churn times each change by the node probes (the API server holds a change as soon as it is written)")
	}
	if s.Churn && s.SyncInterval == 0 {
		s.SyncInterval = DefaultChurnSyncInterval
	}
	return nil
}

// ClientRate is client-go's rate limit for a sweep: above the sweep's own
// write pacing, with room for the reads (lists, agents, cleanup) beside it.
func (s *ScaleConfig) ClientRate() (float32, int) {
	return float32(s.QPS) + DefaultClientQPS, s.Burst + DefaultClientBurst
}

// scaleState is the Service-scale part of a Target.
type scaleState struct {
	probes []NodeProbe
	dp     *ClusterServices
	change *ClusterChange // what the LB-map preflight changed, reverted by Close
}

// PortAccess reaches a port of a pod other than the agents' control port
// (the node probes listen on agent.DefaultProbePort).
type PortAccess interface {
	ControlOn(ctx context.Context, pod *corev1.Pod, port int) (string, error)
}

// ControlOn implements PortAccess.
func (Direct) ControlOn(_ context.Context, pod *corev1.Pod, port int) (string, error) {
	if pod.Status.PodIP == "" {
		return "", fmt.Errorf("pod %s has no IP", pod.Name)
	}
	return "tcp:" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(port)), nil
}

// scalePreflight runs the Cilium LB-map check for the largest step before
// any object is created; with AllowClusterChanges it may raise the map
// (recorded, reverted by Close).
func (t *Target) scalePreflight(ctx context.Context) error {
	s := t.cfg.Scale
	if s == nil || t.prov.CNI == nil {
		return nil
	}
	n, eps := s.Services, s.Endpoints
	if s.Churn {
		n, eps = n+1, eps+eps/2 // churn.ScaleUp adds half the endpoints again
	}
	ch, err := LBMapPreflight(ctx, t.cs, t.prov.CNI, n, eps, s.AllowClusterChanges, s.RolloutTimeout, t.cfg.Progress)
	t.scale.change = ch
	return err
}

// openProbes reaches every node probe with the run's token.
func (t *Target) openProbes(ctx context.Context) error {
	eps := probeEndpoints(t.layout)
	if len(eps) == 0 {
		return nil
	}
	pa, ok := t.access.(PortAccess)
	if !ok {
		return fmt.Errorf("access %s cannot reach the node probes' port %d: use --sync-verify api", t.access.Name(), agent.DefaultProbePort)
	}
	for _, ep := range eps {
		p := t.pods[ep]
		if p == nil {
			return fmt.Errorf("node probe %s: no pod", ep)
		}
		c, err := t.dialProbe(ctx, pa, p)
		if err != nil {
			return err
		}
		t.scale.probes = append(t.scale.probes, NodeProbe{Node: p.Spec.NodeName, Client: c})
	}
	return nil
}

// openSync reads every node's baseline (two equal probe reads in a row)
// when the target opens, after its own test Service exists: read inside
// the first step's Program, it made a step that adds nothing report a
// poll interval of programming.
func (t *Target) openSync(ctx context.Context) error {
	if t.cfg.Scale == nil || t.cfg.Scale.SyncVerify != SyncNode {
		return nil
	}
	if _, _, err := t.ScaleDatapath(); err != nil {
		return err
	}
	start := time.Now()
	t.progress("reading the Service datapath baseline of %d nodes ...", len(t.scale.probes))
	if err := t.scale.dp.Sync.readBaseline(ctx); err != nil {
		t.progress(" failed\n")
		return fmt.Errorf("node sync baseline: %w", err)
	}
	t.progress(" done in %s\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// ScaleDatapath implements suite.ScaleTarget: the cluster's Services in
// the run's namespace, as dummies the sweep adds around the run's own
// Service of ScalePlacement (one datapath.Service per port; its VIP is a
// placeholder from the lab's range, since ClusterServices never creates
// the test Service: the real ClusterIP is in the details).
func (t *Target) ScaleDatapath() (datapath.Datapath, []datapath.Service, error) {
	s := t.cfg.Scale
	if s == nil {
		return nil, nil, fmt.Errorf("the k8s target was opened without a Service-scale configuration")
	}
	placement, err := t.ScalePlacement()
	if err != nil {
		return nil, nil, err
	}
	server := placementEndpoints[placement][1]
	pod := t.pods[server]
	ip, err := netip.ParseAddr(pod.Status.PodIP)
	if err != nil || !ip.Is4() {
		return nil, nil, fmt.Errorf("pod %s has IP %q: the Service-scale sweep needs IPv4 pods", pod.Name, pod.Status.PodIP)
	}
	clusterIP, err := netip.ParseAddr(t.services[server])
	if err != nil {
		return nil, nil, fmt.Errorf("service %s has ClusterIP %q: the Service-scale sweep needs IPv4", ServiceName(server), t.services[server])
	}
	var test []datapath.Service
	var require []nodeprobe.ServicePort
	for _, p := range dataPorts() {
		test = append(test, datapath.Service{Namespace: t.cfg.Namespace, Name: ServiceName(server), PortName: p.Name,
			VIP: datapath.TestVIP(0), Port: uint16(p.ContainerPort), Protocol: datapath.Protocol(p.Protocol),
			Endpoints: []datapath.Endpoint{{IP: ip, Port: uint16(p.ContainerPort)}}})
		require = append(require, nodeprobe.ServicePort{Namespace: t.cfg.Namespace, Name: ServiceName(server), PortName: p.Name,
			Protocol: string(p.Protocol), ClusterIP: clusterIP, Port: uint16(p.ContainerPort)})
	}
	if t.scale.dp == nil {
		dp := &ClusterServices{Clientset: t.cs, Namespace: t.cfg.Namespace, RunID: t.cfg.RunID,
			QPS: s.QPS, Burst: s.Burst, Workers: s.Workers, Progress: t.cfg.Progress, Datapath: t.serviceProxy(), PerChange: s.Churn}
		dp.Sync = &SyncVerifier{Mode: s.SyncVerify, Probes: t.scale.probes, Timeout: s.SyncTimeout, Interval: s.SyncInterval, Live: s.Churn,
			ClientNode: t.layout.Nodes[0], Require: require, Progress: t.cfg.Progress}
		t.scale.dp = dp
	}
	return t.scale.dp, test, nil
}

// ScalePlacement implements suite.ScaleTarget: the pod-to-service
// placement of this run (Prepare keeps one for a sweep: other-node, or
// same-node on a one-node cluster).
func (t *Target) ScalePlacement() (string, error) {
	for _, pl := range t.cfg.Placements {
		if _, skipped := t.skipped[pl]; skipped || !isServicePlacement(pl) {
			continue
		}
		if _, ok := t.services[placementEndpoints[pl][1]]; ok {
			return pl, nil
		}
	}
	return "", fmt.Errorf("no pod-to-service placement runs on this cluster: %s", describeSkipped(t.skipped))
}

// serviceProxy names what implements Services on the cluster: Cilium
// when it replaces kube-proxy (or there is no kube-proxy), else kube-proxy
// and its mode.
func (t *Target) serviceProxy() string {
	cni := t.prov.CNI
	if cni == nil {
		return ""
	}
	if cni.component("cilium") != nil {
		kpr := ""
		if cni.Cilium != nil {
			kpr = cni.Cilium.KubeProxyReplacement
		}
		if kpr == "true" || kpr == "strict" || cni.KubeProxy == nil {
			return "cilium"
		}
	}
	if cni.KubeProxy != nil {
		return "kube-proxy-" + or(cni.KubeProxy.Mode, "iptables")
	}
	return ""
}

// ConntrackUsage implements suite.ScaleTarget: the client node's
// conntrack table is not read on clusters (no agent call for it yet), so
// the answer is "unknown", which skips the conntrack preflight with a note.
func (t *Target) ConntrackUsage(context.Context) (count, max, flows int, err error) {
	return -1, 0, 0, fmt.Errorf("%w: the client node's conntrack table is not read on clusters (yet)", suite.ErrUnsupported)
}

// EphemeralPorts implements suite.ScaleTarget: the size of the client
// pod's ip_local_port_range, as its agent read it when the target opened.
func (t *Target) EphemeralPorts() (int, error) {
	v, ok := t.prov.EndpointSysctls["node0-pod0"].Values[SysctlPortRange]
	if !ok {
		return 0, fmt.Errorf("%w: the client pod's ip_local_port_range was not read", suite.ErrUnsupported)
	}
	var lo, hi int
	if n, err := fmt.Sscanf(v, "%d %d", &lo, &hi); n != 2 || err != nil || hi < lo {
		return 0, fmt.Errorf("client pod's ip_local_port_range %q: not two ports", v)
	}
	return hi - lo + 1, nil
}

// closeScaleServices deletes the sweep's dummies (Close calls it first).
func (t *Target) closeScaleServices() error {
	if t.scale.dp == nil {
		return nil
	}
	return t.scale.dp.Close()
}

// revertClusterChange puts back what the LB-map preflight changed, on its
// own context (it also runs after Ctrl-C).
func (t *Target) revertClusterChange() error {
	if t.scale.change == nil {
		return nil
	}
	return RevertChange(t.cs, t.scale.change, t.cfg.Scale.RolloutTimeout, t.cfg.Progress)
}

// ClusterChange is what the LB-map preflight changed (nil: nothing).
func (t *Target) ClusterChange() *ClusterChange { return t.scale.change }

// scaleDetails go into the results' target details.
func (t *Target) scaleDetails() map[string]any {
	s := t.cfg.Scale
	if s == nil {
		return nil
	}
	d := map[string]any{"sync_verify": s.SyncVerify, "sync_timeout": s.SyncTimeout.String(),
		"allow_cluster_changes": s.AllowClusterChanges, "service_proxy": or(t.serviceProxy(), "unknown")}
	if pl, err := t.ScalePlacement(); err == nil {
		d["placement"] = pl
	}
	d["api_qps"], d["api_burst"], d["api_workers"] = s.QPS, s.Burst, s.Workers
	if s.Churn {
		d["churn"], d["probe_interval"] = true, s.SyncInterval.String()
	}
	if t.scale.dp != nil && t.scale.dp.Deleted() != nil {
		d["deleted"] = t.scale.dp.Deleted()
	}
	var probes []string
	for _, p := range t.scale.probes {
		probes = append(probes, p.Node)
	}
	if len(probes) > 0 {
		d["probe_nodes"] = probes
	}
	if ch := t.scale.change; ch != nil {
		d["cluster_change"] = map[string]any{"object": ch.Object, "key": ch.Key, "old": ch.Old, "old_present": ch.OldPresent,
			"new": ch.New, "restarted": ch.Restarted, "applied": ch.Applied, "reverted": ch.Reverted, "text": ch.String()}
	}
	return d
}
