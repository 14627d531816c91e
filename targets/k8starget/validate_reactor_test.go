package k8starget

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cnibench/cnibench/datapath"
)

// The fake clientset refuses what a real API server refused on a real
// cluster: the EndpointSlice managed-by label with the value the sweep
// used to write ("cnibench.io/scale"), with the same Invalid error; our
// value, bad names and bad port names are judged as the API server would.
func TestValidatingReactor(t *testing.T) {
	cs := newFakeCluster()
	ctx := context.Background()
	slice := func(name, manager string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: map[string]string{discoveryv1.LabelManagedBy: manager}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"198.19.240.1"}}},
		}
	}
	_, err := cs.DiscoveryV1().EndpointSlices(testNS).Create(ctx, slice("old", "cnibench.io/scale"), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `metadata.labels: Invalid value: "cnibench.io/scale"`) {
		t.Errorf("the old managed-by value: %v, want the API server's Invalid error on metadata.labels", err)
	}
	if _, err := cs.DiscoveryV1().EndpointSlices(testNS).Create(ctx, slice("new", sliceManager), metav1.CreateOptions{}); err != nil {
		t.Errorf("our managed-by value %q refused: %v", sliceManager, err)
	}
	if sliceManager == "endpointslice-controller.k8s.io" {
		t.Error("our slices would be adopted by the EndpointSlice controller")
	}
	bad := slice("v6", sliceManager)
	bad.Endpoints[0].Addresses = []string{"2001:db8::1"}
	if _, err := cs.DiscoveryV1().EndpointSlices(testNS).Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("an IPv6 address in an IPv4 slice: %v", err)
	}
	for _, c := range []struct {
		obj  *corev1.Service
		want string
	}{
		{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "Upper", Namespace: testNS}}, "metadata.name"},
		{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "1svc", Namespace: testNS}}, "metadata.name"}, // DNS-1035: no leading digit
		{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: testNS, Labels: map[string]string{"a/b/c": "x"}}}, "metadata.labels"},
		{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: testNS, Annotations: map[string]string{"a": strings.Repeat("x", 300000)}}}, "metadata.annotations"},
		{&corev1.Service{ObjectMeta: metav1.ObjectMeta{GenerateName: "Bad_", Namespace: testNS}}, "metadata.generateName"},
		{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: testNS}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "a", Port: 1}, {Name: "tcp_rr", Port: 2}}}}, "spec.ports[1].name"},
	} {
		_, err := cs.CoreV1().Services(testNS).Create(ctx, c.obj, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want Invalid on %s", c.obj.Name+c.obj.GenerateName, err, c.want)
		}
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a.b"}}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("namespace a.b (not a DNS label): %v", err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: testNS}, Spec: corev1.PodSpec{
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"CLIENT-NODE"}}}}}}}},
		Containers: []corev1.Container{{Name: "agent", Image: "x"}}}}
	if _, err := cs.CoreV1().Pods(testNS).Create(ctx, pod, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "CLIENT-NODE") {
		t.Errorf("a pod pinned to node CLIENT-NODE: %v", err)
	}
}

// Every object a dry run prints is one an API server accepts as it is:
// without --client-node/--server-node (placeholder nodes) and with a
// sweep's dummy Services and EndpointSlices, which are exactly what the
// sweep creates.
func TestDryRunObjectsValid(t *testing.T) {
	cfg := Config{Namespace: "cnibench", Image: "x:y", RunID: "20250101-120000-abcd", Placements: []string{PodToServiceOtherNode},
		Scale: &ScaleConfig{Services: 1000, Endpoints: 4}}
	_, m := dryRunYAML(t, cfg)
	dummies, about := ScaleManifests(cfg, 3)
	if len(dummies) != 6 || !strings.Contains(about, "1000 dummy Services") {
		t.Fatalf("%d dummy objects (%q), want 3 Services + 3 slices", len(dummies), about)
	}
	// A run without a sweep prints the node probes it may create to read
	// the nodes' CNI config.
	plain := cfg
	plain.Scale = nil
	l, err := OfflineLayout(plain, "dry-run-token")
	if err != nil {
		t.Fatal(err)
	}
	probes := NodeCNIProbes(l)
	if len(probes) != 2 {
		t.Fatalf("%d node CNI probes, want one per node", len(probes))
	}
	for _, o := range append(m.Objects(), dummies...) {
		if errs := validateObject(o, ""); len(errs) > 0 {
			t.Errorf("%T: the API server would refuse it: %v", o, errs.ToAggregate())
		}
	}
	for _, p := range probes {
		if errs := validateObject(p, ""); len(errs) > 0 {
			t.Errorf("probe %s: the API server would refuse it: %v", p.Name, errs.ToAggregate())
		}
	}
	// The sweep creates the same objects the dry run shows.
	cs := newFakeCluster()
	c := &ClusterServices{Clientset: cs, Namespace: cfg.Namespace, RunID: cfg.RunID}
	if _, err := c.Program(context.Background(), datapath.Spec{Services: datapath.DummyServices(3, 4)}); err != nil {
		t.Fatal(err)
	}
	for _, o := range dummies {
		meta := o.(metav1.Object)
		var got runtime.Object
		var err error
		switch o.(type) {
		case *corev1.Service:
			got, err = cs.CoreV1().Services(cfg.Namespace).Get(context.Background(), meta.GetName(), metav1.GetOptions{})
		case *discoveryv1.EndpointSlice:
			got, err = cs.DiscoveryV1().EndpointSlices(cfg.Namespace).Get(context.Background(), meta.GetName(), metav1.GetOptions{})
		}
		if err != nil {
			t.Fatalf("%s: %v", meta.GetName(), err)
		}
		if g := got.(metav1.Object); !equality.Semantic.DeepEqual(g.GetLabels(), meta.GetLabels()) {
			t.Errorf("%s labels %v, dry run %v", meta.GetName(), g.GetLabels(), meta.GetLabels())
		}
		if s, ok := got.(*discoveryv1.EndpointSlice); ok && !equality.Semantic.DeepEqual(s.Endpoints, o.(*discoveryv1.EndpointSlice).Endpoints) {
			t.Errorf("%s endpoints differ from the dry run's", s.Name)
		}
	}
}
