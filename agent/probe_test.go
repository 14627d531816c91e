package agent

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/agent/nodeprobe"
	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/iptables"
	"github.com/cnibench/cnibench/datapath/nftables"
	"github.com/cnibench/cnibench/lab/labtest"
)

// startProbe serves a node probe reading the namespace at ns on a unix
// socket, stopped at cleanup, and returns its control address.
func startProbe(t *testing.T, ns, token string) string {
	t.Helper()
	control := "unix:" + filepath.Join(t.TempDir(), "probe.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ServeProbe(ctx, ProbeConfig{Control: control, Token: token, Node: "node-p", NetNS: ns, BPFFS: t.TempDir()})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("probe: %v", err)
		}
	})
	c, err := NewClient("probe", control, token)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	return control
}

// The probe mode end to end: token checked, the node's datapath read over
// the control API, nothing else served.
func TestProbeServesNodeServices(t *testing.T) {
	ns := labtest.ScratchNS(t, "apr")
	d, err := nftables.New(ns, nftables.Options{})
	d = labtest.OrSkip(t, d, err)
	labtest.Sync(t, d, datapath.Spec{Services: datapath.DummyServices(10, 2)}, "nftables")
	control := startProbe(t, ns, "s3cret")
	ctx := context.Background()

	bad, _ := NewClient("probe", control, "wrong")
	if _, err := bad.NodeServices(ctx, nodeprobe.Query{}); err == nil || !strings.Contains(err.Error(), "bad or missing agent token") {
		t.Fatalf("wrong token: %v, want refused", err)
	}
	c, _ := NewClient("probe", control, "s3cret")
	rep, err := c.NodeServices(ctx, nodeprobe.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Node != "node-p" || rep.Datapath != nodeprobe.KubeProxyNFTables || rep.Services != 10 || rep.Endpoints != 20 {
		t.Fatalf("report %+v, want node-p %s 10/20", rep, nodeprobe.KubeProxyNFTables)
	}
	if rep.EndpointKeysRead || len(rep.EndpointKeys) > 0 {
		t.Errorf("endpoint keys read without being asked for: %v", rep.EndpointKeys)
	}
	// Asked for two Services' endpoints, the probe names their 4.
	dummies := datapath.DummyServices(10, 2)
	ref := func(s datapath.Service) string {
		return nodeprobe.PortRef(nodeprobe.ServicePort{Namespace: s.Namespace, Name: s.Name, PortName: s.PortName, Protocol: string(s.Protocol)})
	}
	rep, err = c.NodeServices(ctx, nodeprobe.Query{EndpointsOf: []string{ref(dummies[2]), ref(dummies[5])}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.EndpointKeysRead || len(rep.EndpointKeys) != 4 {
		t.Errorf("endpoint keys of 2 Services × 2 endpoints: read %v, %q", rep.EndpointKeysRead, rep.EndpointKeys)
	}
	if _, err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}
	// A probe runs no engine: the run endpoints are not there.
	if err := c.do(ctx, "POST", pathRR, struct{}{}, &struct{}{}); err == nil {
		t.Fatal("a probe answered a run request")
	}
}

// A datapath the probe cannot read reaches the client as
// errors.ErrUnsupported, so a sweep can fall back to the API-side check.
func TestProbeUnsupportedCrossesTheWire(t *testing.T) {
	ns := labtest.ScratchNS(t, "apl")
	d, err := iptables.New(ns, iptables.Options{Legacy: true})
	d = labtest.OrSkip(t, d, err)
	labtest.Sync(t, d, datapath.Spec{Services: datapath.DummyServices(3, 2)}, "iptables-legacy")
	c, _ := NewClient("probe", startProbe(t, ns, ""), "")
	_, err = c.NodeServices(context.Background(), nodeprobe.Query{})
	if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "iptables-legacy") {
		t.Fatalf("NodeServices on iptables-legacy: %v, want unsupported", err)
	}
	t.Log(err)
}

// A query crosses the wire whole: the Service ports by name for
// kube-proxy and by frontend for Cilium, in separate parameters (a probe
// older than frontends ignores theirs).
func TestProbeQueryCrossesTheWire(t *testing.T) {
	var q nodeprobe.Query
	q.Live = true
	for _, sp := range []nodeprobe.ServicePort{
		{Namespace: "scale", Name: "a", PortName: "p", Protocol: "TCP", ClusterIP: netip.MustParseAddr("10.96.0.10"), Port: 80},
		{Namespace: "scale", Name: "b", PortName: "dns", Protocol: "UDP", ClusterIP: netip.MustParseAddr("10.96.0.11"), Port: 53},
	} {
		q.AskEndpoints(sp)
	}
	v := probeValues(q)
	if got := probeQuery(v); !reflect.DeepEqual(got, q) {
		t.Fatalf("%v read back as %+v, want %+v", v, got, q)
	}
	if v.Get("endpoints") != "scale/a:p/tcp,scale/b:dns/udp" || v.Get("frontends") != "10.96.0.10:80/tcp,10.96.0.11:53/udp" {
		t.Errorf("parameters %v", v)
	}
	if got := probeQuery(probeValues(nodeprobe.Query{})); !reflect.DeepEqual(got, nodeprobe.Query{}) {
		t.Errorf("empty query read back as %+v", got)
	}
}

// ?cni=1 crosses the wire: the probe answers the CNI config of its
// directory and its kernel's encryption support, and reads no datapath (its network namespace here does not
// exist, which a datapath read would fail on).
func TestProbeServesCNIConfig(t *testing.T) {
	dir := t.TempDir()
	conf := `{"cniVersion":"1.0.0","name":"pods","plugins":[{"type":"bridge"},{"type":"portmap","capabilities":{"portMappings":true}}]}`
	if err := os.WriteFile(filepath.Join(dir, "10-pods.conflist"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	// The node's kernel: WireGuard loaded, nothing else readable.
	kernel := t.TempDir()
	if err := os.MkdirAll(filepath.Join(kernel, "sys", "module", "wireguard"), 0o755); err != nil {
		t.Fatal(err)
	}
	control := "unix:" + filepath.Join(t.TempDir(), "probe.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ServeProbe(ctx, ProbeConfig{Control: control, Token: "t0ken", Node: "node-c", NetNS: "/nonexistent/netns", CNIConfDir: dir,
			Kernel: nodeprobe.KernelPaths{Root: kernel}})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("probe: %v", err)
		}
	}()
	c, _ := NewClient("probe", control, "t0ken")
	if err := c.WaitReady(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	rep, err := c.NodeServices(ctx, nodeprobe.Query{CNIConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Node != "node-c" || rep.CNI == nil || rep.CNI.File != "10-pods.conflist" || strings.Join(rep.CNI.Plugins, ",") != "bridge,portmap" ||
		rep.Datapath != "" || len(rep.Errors) > 0 {
		t.Fatalf("report %+v (cni %+v), want only the CNI config", rep, rep.CNI)
	}
	if k := rep.Kernel; k == nil || k.WireGuard.Support != nodeprobe.KernelAvailable || k.IPsec.Support != nodeprobe.KernelUnknown {
		t.Errorf("kernel %+v, want WireGuard available (loaded), IPsec unknown", k)
	}
	if _, err := c.NodeServices(ctx, nodeprobe.Query{}); err == nil {
		t.Error("a datapath read in a namespace that does not exist succeeded: the test proves nothing")
	}
}
