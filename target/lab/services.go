package labtarget

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/ebpf"
	"github.com/cnibench/cnibench/datapath/iptables"
	"github.com/cnibench/cnibench/datapath/nftables"
	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/dnsload"
	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
)

// The pod-to-Service placement: node0-pod0 connects to the test Service's
// ClusterIP, whose endpoints are every pod of node1 (the server pods).
const (
	serviceClient = "node0-pod0"
	serviceNode   = 1
)

// ServiceEndpoints lists the server pods behind the test Service.
func serviceBackends(l *lab.Lab) ([]lab.Pod, error) {
	if len(l.Nodes) <= serviceNode {
		return nil, fmt.Errorf("pod-to-service/other-node needs at least 2 lab nodes, the lab has %d", len(l.Nodes))
	}
	return l.Nodes[serviceNode].Pods, nil
}

// TestServices is the Spec of the test Service: one ClusterIP
// (datapath.TestVIP(0)) with a port per engine, each backed by the same
// port on every server pod, as a Deployment behind a multi-port Service.
func TestServices(backends []lab.Pod) ([]datapath.Service, error) {
	ports := []struct {
		name  string
		port  int
		proto datapath.Protocol
	}{
		{"tcp-stream", engine.DefaultPort[engine.TCPStream], datapath.TCP},
		{"udp-stream", engine.DefaultPort[engine.UDPStream], datapath.UDP},
		{"tcp-rr", engine.DefaultPort[engine.TCPRR], datapath.TCP},
		{"udp-rr", engine.DefaultPort[engine.UDPRR], datapath.UDP},
		{"tcp-crr", engine.DefaultPort[engine.TCPCRR], datapath.TCP},
		{"http", httpload.DefaultPort, datapath.TCP},
		{"dns", dnsload.DefaultPort, datapath.UDP},
	}
	var svcs []datapath.Service
	for _, p := range ports {
		s := datapath.Service{Namespace: "cnibench", Name: "server", PortName: p.name,
			VIP: datapath.TestVIP(0), Port: uint16(p.port), Protocol: p.proto}
		for _, b := range backends {
			ip, err := netip.ParseAddr(b.IP)
			if err != nil {
				return nil, fmt.Errorf("server pod %s: %w", b.Name, err)
			}
			s.Endpoints = append(s.Endpoints, datapath.Endpoint{IP: ip, Port: uint16(p.port)})
		}
		svcs = append(svcs, s)
	}
	return svcs, nil
}

// OpenDatapaths opens the named Service datapath wherever it lives in the
// lab: in every node's namespace (kube-proxy runs on every node; ebpf-tc
// on every node's pod veths), or once on the lab's cgroup for the socket
// LB, which sees every pod's connect().
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
	if name == "ebpf" {
		if l.CgroupRoot == "" {
			return fail(errors.New("the socket load balancer attaches to the lab's cgroup, and this machine has no cgroup v2"))
		}
		d, err := ebpf.NewSocketLB(l.CgroupRoot, eo)
		if err != nil {
			return fail(err)
		}
		return []datapath.Datapath{d}, nil
	}
	for _, n := range l.Nodes {
		ns := netnsx.Path(n.Netns)
		var d datapath.Datapath
		var err error
		switch name {
		case "iptables", "iptables-legacy":
			d, err = iptables.New(ns, iptables.Options{Legacy: name == "iptables-legacy", ClusterCIDR: "198.19.0.0/16",
				LockFile: filepath.Join(l.Config.StateDir, l.Config.Name, n.Name+".xtables.lock")})
		case "nftables", "nftables-flat":
			d, err = nftables.New(ns, nftables.Options{Flat: name == "nftables-flat",
				ClusterCIDR: "198.19.0.0/16", ServiceCIDR: datapath.ServiceCIDR.String()})
		case "ebpf-tc":
			d, err = ebpf.NewTCLB(ns, nil, eo)
		default:
			err = fmt.Errorf("unknown (known: %s)", strings.Join(datapath.Names, ", "))
		}
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

// openServices programs the lab's Service datapath with the test Service
// for this run; closeServices removes it again.
func (t *Target) openServices(ctx context.Context) error {
	name := t.lab.Config.ServiceDatapath
	if name == "" {
		return nil
	}
	backends, err := serviceBackends(t.lab)
	if err != nil {
		return err
	}
	svcs, err := TestServices(backends)
	if err != nil {
		return err
	}
	t.progress("programming the test Service (%s datapath) ...", name)
	t.dps, err = OpenDatapathsWith(t.lab, name, t.cfg.EBPF)
	var dp datapath.Datapath
	if err == nil {
		dp, err = t.datapath()
	}
	if err == nil {
		var took time.Duration
		took, err = ProgramAndVerify(ctx, dp, datapath.Spec{Services: svcs})
		if err == nil {
			t.progress(" verified in %s\n", took.Round(time.Millisecond))
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
