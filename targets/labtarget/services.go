package labtarget

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"github.com/cnibench/cnibench/datapath"
	_ "github.com/cnibench/cnibench/datapath/all" // registers every datapath OpenDatapaths opens by name
	"github.com/cnibench/cnibench/datapath/ebpf"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/suite"
)

// podsCIDR holds every lab pod's address (kube-proxy's --cluster-cidr).
const podsCIDR = "198.19.0.0/16"

// The pod-to-Service placements: node0-pod0 connects to a test Service's
// ClusterIP; on other-node its endpoints are every pod of node1, on
// same-node every other pod of node0 (node0-pod1 in the default lab).
const serviceClient = "node0-pod0"

// testService is the lab's test Service of one pod-to-service placement.
type testService struct {
	name  string // Service name in namespace "cnibench"
	vip   int    // datapath.TestVIP index
	group string // its backends, an endpoint group of placementEndpoints
}

// testServices: other-node keeps the ClusterIP 198.18.128.1 it always
// had; same-node gets the next one.
var testServices = map[string]testService{
	suite.PodToServiceOtherNode: {name: "server", vip: 0, group: "node1-pods"},
	suite.PodToServiceSameNode:  {name: "server-local", vip: 1, group: "node0-pods"},
}

// serviceBackends lists the server pods behind the test Service of an
// endpoint group: "node1-pods" is every pod of node1, "node0-pods" every
// pod of node0 but the clients of the run's pairs (node0-pod0 for one).
func serviceBackends(l *lab.Lab, group string, pairs int) ([]lab.Pod, error) {
	clients := map[string]bool{}
	for k := range max(1, pairs) {
		clients[suite.PairClient(k)] = true
	}
	switch group {
	case "node1-pods":
		if len(l.Nodes) < 2 {
			return nil, fmt.Errorf("%s needs at least 2 lab nodes, the lab has %d", suite.PodToServiceOtherNode, len(l.Nodes))
		}
		return l.Nodes[1].Pods, nil
	case "node0-pods":
		var pods []lab.Pod
		for _, p := range l.Nodes[0].Pods {
			if !clients[p.Name] {
				pods = append(pods, p)
			}
		}
		if len(pods) == 0 {
			return nil, fmt.Errorf("%s needs at least 2 pods per node (the client node0-pod0 and an endpoint), the lab has %d", suite.PodToServiceSameNode, len(l.Nodes[0].Pods))
		}
		return pods, nil
	}
	return nil, fmt.Errorf("unknown endpoint group %q", group)
}

// placementServices builds the test Services of the lab's pod-to-service
// placements among placements, in that order.
func placementServices(l *lab.Lab, placements []string, pairs int) ([]datapath.Service, error) {
	var svcs []datapath.Service
	for _, pl := range placements {
		ts, ok := testServices[pl]
		if !ok {
			continue
		}
		backends, err := serviceBackends(l, ts.group, pairs)
		if err != nil {
			return nil, err
		}
		s, err := TestServices(ts.name, datapath.TestVIP(ts.vip), backends)
		if err != nil {
			return nil, err
		}
		svcs = append(svcs, s...)
	}
	return svcs, nil
}

// TestServices is the Spec of one test Service: one ClusterIP with a port
// per data port of the engine kinds (kinds.Ports), each backed by the same port on every server pod, as a
// Deployment behind a multi-port Service.
func TestServices(name string, vip netip.Addr, backends []lab.Pod) ([]datapath.Service, error) {
	var svcs []datapath.Service
	for _, p := range kinds.Ports() {
		proto := datapath.TCP
		if p.Proto == "udp" {
			proto = datapath.UDP
		}
		s := datapath.Service{Namespace: "cnibench", Name: name, PortName: p.Name,
			VIP: vip, Port: uint16(p.Number), Protocol: proto}
		for _, b := range backends {
			ip, err := netip.ParseAddr(b.IP)
			if err != nil {
				return nil, fmt.Errorf("server pod %s: %w", b.Name, err)
			}
			s.Endpoints = append(s.Endpoints, datapath.Endpoint{IP: ip, Port: uint16(p.Number)})
		}
		svcs = append(svcs, s)
	}
	return svcs, nil
}

// OpenDatapaths opens the named Service datapath wherever its registration
// (datapath.Variant.Scope) says it lives in the lab: in every node's
// namespace (kube-proxy runs on every node; ebpf-tc on every node's pod
// veths), or once on the lab's cgroup for the socket LB, which sees every
// pod's connect().
func OpenDatapaths(l *lab.Lab, name string, autoSize bool) ([]datapath.Datapath, error) {
	return OpenDatapathsWith(l, name, ebpf.Options{AutoSize: autoSize})
}

// OpenDatapathsWith is OpenDatapaths with the eBPF datapaths' map sizes.
func OpenDatapathsWith(l *lab.Lab, name string, eo ebpf.Options) ([]datapath.Datapath, error) {
	var dps []datapath.Datapath
	fail := func(err error) ([]datapath.Datapath, error) {
		for _, d := range dps {
			_ = d.Close()
		}
		return nil, fmt.Errorf("service datapath %s: %w", name, err)
	}
	v, known := datapath.Lookup(name)
	site := datapath.Site{Cgroup: l.CgroupRoot, StateDir: filepath.Join(l.Config.StateDir, l.Config.Name),
		ClusterCIDR: podsCIDR, Options: eo}
	if known && v.Scope == datapath.PerLab {
		d, err := v.Open(site)
		if err != nil {
			return fail(err)
		}
		return []datapath.Datapath{d}, nil
	}
	for _, n := range l.Nodes {
		if !known {
			return fail(fmt.Errorf("%s: unknown (known: %s)", n.Name, strings.Join(datapath.Names(), ", ")))
		}
		site.Netns, site.Node = netnsx.Path(n.Netns), n.Name
		d, err := v.Open(site)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", n.Name, err))
		}
		dps = append(dps, d)
	}
	return dps, nil
}

// ProgramAndVerify programs spec into d (for a per-node datapath, every
// node's: see labDatapath) and reads it back, so no test runs before the
// datapath holds what it should.
func ProgramAndVerify(ctx context.Context, d datapath.Datapath, spec datapath.Spec) (time.Duration, error) {
	start := time.Now()
	if _, err := d.Program(ctx, spec); err != nil {
		return 0, fmt.Errorf("%s: programming: %w", d.Name(), err)
	}
	got, err := d.Verify(ctx)
	if err == nil {
		err = got.Holds(d.Expected(spec))
	}
	if err != nil {
		return 0, fmt.Errorf("%s: verify: %w", d.Name(), err)
	}
	return time.Since(start), nil
}

// openServices programs the lab's Service datapath with the test
// Services of this run's pod-to-service placements (none: the datapath is
// opened empty, for a sweep to program) and reads them back.
func (t *Target) openServices(ctx context.Context) error {
	name := t.lab.Config.ServiceDatapath
	if name == "" {
		return nil
	}
	svcs, err := placementServices(t.lab, t.cfg.Placements, t.pairs())
	if err != nil {
		return err
	}
	t.progress("programming the test Services (%s datapath) ...", name)
	t.dps, err = OpenDatapathsWith(t.lab, name, t.cfg.EBPF)
	var dp datapath.Datapath
	if err == nil {
		dp, err = t.datapath()
	}
	if err == nil && len(svcs) == 0 {
		t.progress(" none asked for\n")
		return nil
	}
	if err == nil {
		var took time.Duration
		took, err = ProgramAndVerify(ctx, dp, datapath.Spec{Services: svcs})
		if err == nil {
			t.progress(" %d Service ports verified in %s\n", len(svcs), took.Round(time.Millisecond))
			return nil
		}
	}
	t.progress(" failed\n")
	return err
}

func (t *Target) closeServices() {
	for _, d := range t.dps {
		_ = d.Close()
	}
	t.dps = nil
}
