package nodeprobe

import (
	"context"
	"testing"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/lab/labtest"
)

// read runs Read on the namespace at ns with the BPF filesystem bpffs
// (an empty temporary directory when "", so the host's pins never count).
func read(t *testing.T, ns, bpffs string) *Report {
	t.Helper()
	if bpffs == "" {
		bpffs = t.TempDir()
	}
	rep, err := Read(context.Background(), Options{Node: "node-t", NetNS: ns, BPFFS: bpffs})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Node != "node-t" || rep.ReadTime <= 0 {
		t.Errorf("node %q, read time %v", rep.Node, rep.ReadTime)
	}
	return rep
}

// checkCounts fails unless rep is datapath with exactly services and
// endpoints.
func checkCounts(t *testing.T, rep *Report, dp string, services, endpoints int) {
	t.Helper()
	if rep.Datapath != dp || rep.Services != services || rep.Endpoints != endpoints {
		t.Fatalf("read %s %d Services %d endpoints (errors %q), want %s %d %d",
			rep.Datapath, rep.Services, rep.Endpoints, rep.Errors, dp, services, endpoints)
	}
}

// program makes d hold spec, failing the test otherwise.
func program(t *testing.T, d datapath.Datapath, spec datapath.Spec) {
	t.Helper()
	labtest.Sync(t, d, spec, d.Name())
}

// scaleSpec is n dummy Services × eps endpoints plus the lab's test
// Service with 2 endpoints: what a sweep step leaves on a node.
func scaleSpec(n, eps int) datapath.Spec {
	return datapath.Spec{Services: append(datapath.DummyServices(n, eps), labtest.TestService("198.19.1.10", []uint16{1, 2}))}
}

// checkKeys fails unless rep.Keys are exactly the keys (Key) of spec's
// Services for rep's datapath kind: what a sweep matches its Services by.
func checkKeys(t *testing.T, rep *Report, spec datapath.Spec) {
	t.Helper()
	want := map[string]bool{}
	for _, s := range spec.Services {
		want[Key(rep.Datapath, ServicePort{Namespace: s.Namespace, Name: s.Name, PortName: s.PortName,
			Protocol: string(s.Protocol), ClusterIP: s.VIP, Port: s.Port})] = true
	}
	got := map[string]bool{}
	for _, k := range rep.Keys {
		got[k] = true
	}
	if len(got) != len(rep.Keys) || len(got) != len(want) {
		t.Fatalf("%s: %d keys (%d distinct), want the %d of the spec", rep.Datapath, len(rep.Keys), len(got), len(want))
	}
	for k := range want {
		if !got[k] {
			t.Fatalf("%s: key %q of a programmed Service is not in the report", rep.Datapath, k)
		}
	}
}
