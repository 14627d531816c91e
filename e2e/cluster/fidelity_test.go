package cluster

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/fidelity"
	"github.com/cnibench/cnibench/datapath/iptables"
	"github.com/cnibench/cnibench/datapath/nftables"
	"github.com/cnibench/cnibench/lab/labtest"
)

// fidelityNamespaces hold the Services the fidelity test programs through
// the API server; the lab gets the same Services with the same names, so
// kube-proxy's hashed chain names are the same on both sides.
var fidelityNamespaces = []string{"cnbk-fid-a", "cnbk-fid-b"}

// documentedDifferences are the differences between the lab's layouts and
// kube-proxy's (v1.34) that docs/service-scale.md ("Fidelity to
// kube-proxy") explains. The test fails on any other difference, and on a
// documented one that no longer shows, so the list and the docs stay true.
// Those in maybe may or may not show.
func documentedDifferences(mode, serviceCIDR string) (always, maybe []string) {
	if mode == "iptables" {
		return []string{
			// The kubelet's KUBE-FIREWALL (drop of martian 127.0.0.0/8
			// traffic that route_localnet would let in), not the Service
			// datapath's.
			`filter/INPUT differs: line 4: lab "", node "-j KUBE-FIREWALL" (lab 3 lines, node 4)`,
			`filter/OUTPUT differs: line 3: lab "", node "-j KUBE-FIREWALL" (lab 2 lines, node 3)`,
			"only on node: filter/KUBE-FIREWALL",
			// kube-proxy counts the invalid packets it drops in an nfacct
			// object (a counter; the packet's path is the same).
			`filter/KUBE-FORWARD differs: line 1: lab "-m conntrack --ctstate INVALID -j DROP", node "-m conntrack --ctstate INVALID -m nfacct --nfacct-name  ct_state_invalid_dropped_pkts -j DROP" (lab 3 lines, node 3)`,
			// Empty chains kube-proxy and the kubelet create to notice a
			// flush of their tables, and the hint chain that tells other
			// tools which iptables backend is in use: no packet enters them.
			"only on node: filter/KUBE-KUBELET-CANARY",
			"only on node: filter/KUBE-PROXY-CANARY",
			"only on node: mangle/KUBE-IPTABLES-HINT",
			"only on node: mangle/KUBE-KUBELET-CANARY",
			"only on node: mangle/KUBE-PROXY-CANARY",
			"only on node: nat/KUBE-KUBELET-CANARY",
			"only on node: nat/KUBE-PROXY-CANARY",
		}, nil
	}
	return []string{
			// The lab accepts NodePorts on every local address (kube-proxy
			// with nodePortAddresses 0.0.0.0/0); kube-proxy 1.34's default
			// is the node's primary IP, in a nodeport-ips set. No ClusterIP
			// packet takes either rule.
			`nodeport-endpoints-check differs: line 1: lab "ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @no-endpoint-nodeports", node "ip daddr @nodeport-ips meta l4proto . th dport vmap @no-endpoint-nodeports" (lab 1 lines, node 1)`,
			`services differs: line 2: lab "fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports", node "ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports" (lab 2 lines, node 2)`,
			"only on node: set nodeport-ips",
		}, []string{
			// kube-proxy drops traffic to unallocated ClusterIPs once it has
			// read the cluster's ServiceCIDR objects, which on a fresh cluster
			// it may not have done yet.
			`cluster-ips-check differs: line 2: lab "ip daddr ` + serviceCIDR + ` drop comment \"Drop traffic to unallocated ClusterIPs\"", node "" (lab 2 lines, node 1)`,
		}
}

// TestFidelityToKubeProxy programs the same Services through the API
// server (kube-proxy on the node writes its rules) and into a lab node's
// datapath, then compares what a packet to each Service walks, and the
// rest of the layout: first a few hand-made Services (one and four
// endpoints, a named UDP port), then with 300 dummy Services × 4 endpoints
// more, past kube-proxy's 1,000-endpoint threshold where it drops the
// per-endpoint comments.
func TestFidelityToKubeProxy(t *testing.T) {
	env := getEnv(t)
	if env.cilium() {
		t.Skip("reads kube-proxy's rules; on Cilium the sweep and churn tests check its LB maps through the node probe")
	}
	mode := env.proxyMode
	cs := env.clientset(t)
	ctx := context.Background()
	for _, ns := range fidelityNamespaces {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { deleteNamespaces(t, cs, fidelityNamespaces) })

	small := fidelityServices()
	dummies := datapath.DummyServices(300, 4)
	for i := range dummies {
		dummies[i].Namespace = fidelityNamespaces[1]
	}
	created := 0 // Services of svcs already in the cluster: steps only add
	for _, step := range []struct {
		name string
		svcs []datapath.Service
	}{{"3 Services", small}, {"303 Services", append(append([]datapath.Service{}, small...), dummies...)}} {
		t.Run(step.name, func(t *testing.T) {
			for _, s := range step.svcs[created:] {
				createService(t, cs, s)
			}
			created = len(step.svcs)
			node := waitNodeHolds(t, env, mode, step.svcs)
			lab := labDump(t, env, mode, step.svcs)
			r, err := fidelity.Compare(lab, node, step.svcs)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("kube-proxy %s mode against the lab's %s layout:\n%s", mode, mode, r)
			if len(r.ServiceDiffs) > 0 {
				t.Errorf("%d Service ports walk differently in the lab than in kube-proxy", len(r.ServiceDiffs))
			}
			// Comments differ only where kube-proxy's partial syncs kept
			// them past its 1,000-endpoint threshold (fidelity.Report).
			if len(r.CommentOnly) > 0 && (mode != "iptables" || len(step.svcs) == len(small)) {
				t.Errorf("%d Service ports differ in comments below kube-proxy's large-cluster threshold: %v", len(r.CommentOnly), r.CommentOnly)
			}
			always, maybe := documentedDifferences(mode, env.serviceCIDR)
			checkDocumented(t, r.Layout, always, maybe)
		})
	}
}

// fidelityServices are a ClusterIP with one endpoint, one with four
// endpoints on a named port, and a named UDP port with two.
func fidelityServices() []datapath.Service {
	ep := func(s string, port uint16) datapath.Endpoint {
		return datapath.Endpoint{IP: netip.MustParseAddr(s), Port: port}
	}
	a, b := fidelityNamespaces[0], fidelityNamespaces[1]
	return []datapath.Service{
		// VIPs from 198.18.128.0/24, which datapath.DummyServices leaves
		// to test Services.
		{Namespace: a, Name: "one", VIP: netip.MustParseAddr("198.18.128.20"), Port: 80, Protocol: datapath.TCP,
			Endpoints: []datapath.Endpoint{ep("198.19.1.200", 8080)}},
		{Namespace: a, Name: "four", PortName: "http", VIP: netip.MustParseAddr("198.18.128.21"), Port: 8080, Protocol: datapath.TCP,
			Endpoints: []datapath.Endpoint{ep("198.19.0.200", 80), ep("198.19.0.201", 80), ep("198.19.1.200", 80), ep("198.19.1.201", 80)}},
		{Namespace: b, Name: "dns", PortName: "dns", VIP: netip.MustParseAddr("198.18.128.22"), Port: 53, Protocol: datapath.UDP,
			Endpoints: []datapath.Endpoint{ep("198.19.0.202", 5353), ep("198.19.1.202", 5353)}},
	}
}

// createService creates s as a selector-less Service with its ClusterIP
// fixed and one EndpointSlice per endpoint port, all endpoints ready.
func createService(t *testing.T, cs kubernetes.Interface, s datapath.Service) {
	t.Helper()
	ctx := context.Background()
	proto := corev1.Protocol(s.Protocol)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace},
		Spec: corev1.ServiceSpec{ClusterIP: s.VIP.String(), Ports: []corev1.ServicePort{{
			Name: s.PortName, Port: int32(s.Port), Protocol: proto, TargetPort: intstr.FromInt32(int32(s.Endpoints[0].Port))}}},
	}
	if _, err := cs.CoreV1().Services(s.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Service %s: %v", s.Key(), err)
	}
	byPort := map[uint16][]discoveryv1.Endpoint{}
	var ports []uint16
	for _, ep := range s.Endpoints {
		if byPort[ep.Port] == nil {
			ports = append(ports, ep.Port)
		}
		byPort[ep.Port] = append(byPort[ep.Port], discoveryv1.Endpoint{
			Addresses: []string{ep.IP.String()}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}})
	}
	for _, port := range ports {
		slice := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", s.Name, port), Namespace: s.Namespace, Labels: map[string]string{
				discoveryv1.LabelServiceName: s.Name, discoveryv1.LabelManagedBy: "fidelity-test.cnibench.io"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   byPort[port],
			Ports:       []discoveryv1.EndpointPort{{Name: ptr(s.PortName), Port: ptr(int32(port)), Protocol: &proto}},
		}
		if _, err := cs.DiscoveryV1().EndpointSlices(s.Namespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create EndpointSlice for %s: %v", s.Key(), err)
		}
	}
}

// waitNodeHolds reads the node's ruleset until every Service of svcs
// walks to all of its endpoints (kube-proxy synced), for up to a minute.
func waitNodeHolds(t *testing.T, env *env, mode string, svcs []datapath.Service) *fidelity.Dump {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		d, missing := nodeDump(t, env, mode), ""
		for _, s := range svcs {
			w, err := d.Walk(s)
			if err != nil {
				missing = err.Error()
				break
			}
			if n := dnats(w); n != len(s.Endpoints) {
				missing = fmt.Sprintf("%s: %d of %d endpoints", s.Key(), n, len(s.Endpoints))
				break
			}
		}
		if missing == "" {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-proxy (%s mode) on %s did not program the Services within a minute: %s", mode, env.ruleNetNS, missing)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// dnats counts the DNAT lines of a walk: one per endpoint programmed.
func dnats(walk []string) int {
	n := 0
	for _, l := range walk {
		if strings.Contains(l, "DNAT --to-destination") || strings.Contains(l, "dnat to") {
			n++
		}
	}
	return n
}

// nodeDump reads kube-proxy's ruleset inside the node's namespace.
func nodeDump(t *testing.T, env *env, mode string) *fidelity.Dump {
	t.Helper()
	return parseDump(t, mode, nsOutput(t, "/run/netns/"+env.ruleNetNS, mode))
}

// labDump programs svcs into the lab's datapath of the same layout, in a
// scratch namespace, with kube-proxy's settings of this cluster, and
// reads it back.
func labDump(t *testing.T, env *env, mode string, svcs []datapath.Service) *fidelity.Dump {
	t.Helper()
	ns := labtest.ScratchNS(t, "fid")
	var (
		d   datapath.Datapath
		err error
	)
	if mode == "iptables" {
		d, err = iptables.New(ns, iptables.Options{ClusterCIDR: env.clusterCIDR})
	} else {
		d, err = nftables.New(ns, nftables.Options{ClusterCIDR: env.clusterCIDR, ServiceCIDR: env.serviceCIDR})
	}
	d = labtest.OrSkip(t, d, err)
	labtest.Sync(t, d, datapath.Spec{Services: svcs}, "lab "+mode)
	return parseDump(t, mode, nsOutput(t, ns, mode))
}

func nsOutput(t *testing.T, nsPath, mode string) []byte {
	t.Helper()
	args := []string{"--net=" + nsPath, "iptables-save"}
	if mode == "nftables" {
		args = []string{"--net=" + nsPath, "nft", "list", "table", "ip", "kube-proxy"}
	}
	out, err := exec.Command("nsenter", args...).Output()
	if err != nil {
		t.Fatalf("nsenter %v: %v", args, err)
	}
	return out
}

func parseDump(t *testing.T, mode string, out []byte) *fidelity.Dump {
	t.Helper()
	parse := fidelity.ParseIPTablesSave
	if mode == "nftables" {
		parse = fidelity.ParseNFT
	}
	d, err := parse(out)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// checkDocumented fails on a layout difference that is not documented,
// and on a documented one of always that did not show.
func checkDocumented(t *testing.T, got, always, maybe []string) {
	t.Helper()
	want, may := map[string]bool{}, map[string]bool{}
	for _, d := range always {
		want[d] = true
	}
	for _, d := range maybe {
		may[d] = true
	}
	for _, d := range got {
		if !want[d] && !may[d] {
			t.Errorf("undocumented difference: %s", d)
		}
		delete(want, d)
	}
	for d := range want {
		t.Errorf("documented difference no longer seen (update the list and docs/service-scale.md): %s", d)
	}
}

func deleteNamespaces(t *testing.T, cs kubernetes.Interface, names []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, ns := range names {
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
	}
	for _, ns := range names {
		for {
			_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if ctx.Err() != nil {
				t.Errorf("namespace %s still there after 2 minutes", ns)
				return
			}
			time.Sleep(time.Second)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// clientset is a client of the cluster as its admin, allowed more
// requests a second than client-go's default for the fidelity test's
// few hundred creates.
func (e *env) clientset(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", e.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
