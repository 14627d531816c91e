package k8starget

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/cnibench/cnibench/datapath"
)

// scaleLabels are the labels of a dummy Service and its EndpointSlices.
func scaleLabels(runID, name string) map[string]string {
	l := baseLabels(runID, NameScale)
	l[LabelRole] = "scale"
	l[LabelShard] = scaleShard(name)
	return l
}

// scaleShards is how many groups the dummies are split into for deletion:
// an API server deletes a collection one object at a time (its
// --delete-collection-workers defaults to 1), so one DeleteCollection of
// 10,000 Services outlasted its 60 s request timeout; 16 smaller ones in
// parallel finish.
const scaleShards = 16

// scaleShard is a dummy's group, from its name.
func scaleShard(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	return strconv.Itoa(int(h.Sum32() % scaleShards))
}

// dummyObjects are the objects of one dummy Service name in namespace ns:
// a ClusterIP Service without a selector and its EndpointSlices (one per
// target port; never v1 Endpoints). ClusterServices creates them and the
// dry run prints them.
func dummyObjects(ns, runID, name string, s datapath.Service) (*corev1.Service, []*discoveryv1.EndpointSlice) {
	proto := corev1.Protocol(s.Protocol)
	byPort := map[uint16][]string{}
	for _, ep := range s.Endpoints {
		byPort[ep.Port] = append(byPort[ep.Port], ep.IP.String())
	}
	var ports []uint16
	for p := range byPort {
		ports = append(ports, p)
	}
	sort.Slice(ports, func(i, j int) bool { return ports[i] < ports[j] })
	target := intstr.FromInt32(int32(s.Port))
	if len(ports) > 0 {
		target = intstr.FromInt32(int32(ports[0]))
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: scaleLabels(runID, name)},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP,
			// No selector: the EndpointSlices below are ours, and the
			// EndpointSlice controller leaves Services without one alone.
			Ports: []corev1.ServicePort{{Name: s.PortName, Port: int32(s.Port), Protocol: proto, TargetPort: target}},
		},
	}
	var slices []*discoveryv1.EndpointSlice
	for _, port := range ports {
		lbl := scaleLabels(runID, name)
		lbl[discoveryv1.LabelServiceName] = name
		lbl[discoveryv1.LabelManagedBy] = sliceManager
		ready := true
		p, pname := int32(port), s.PortName
		slice := &discoveryv1.EndpointSlice{
			TypeMeta:    metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
			ObjectMeta:  metav1.ObjectMeta{Name: name + "-" + strconv.Itoa(int(port)), Namespace: ns, Labels: lbl},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &pname, Port: &p, Protocol: &proto}},
		}
		for _, ip := range byPort[port] {
			slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
		}
		slices = append(slices, slice)
	}
	return svc, slices
}

// ScaleManifests are the objects of the first show dummy Services of a
// sweep (Services and their EndpointSlices) for a dry run, and a comment
// saying how many the largest step creates.
func ScaleManifests(cfg Config, show int) ([]runtime.Object, string) {
	s := cfg.Scale
	if s == nil || s.Services == 0 {
		return nil, ""
	}
	n, eps := s.Services, s.Endpoints
	about := fmt.Sprintf("the sweep's largest step has %d dummy Services (%d endpoints each, one EndpointSlice per Service), created and deleted step by step; the first %d follow", n, eps, min(show, n))
	if s.Churn {
		about = fmt.Sprintf("the churn keeps %d dummy Services (%d endpoints each, one EndpointSlice per Service) and during its samples scales, replaces, adds and removes them; the first %d follow", n, eps, min(show, n))
	}
	var objs []runtime.Object
	for _, d := range datapath.DummyServices(min(show, n), eps) {
		svc, slices := dummyObjects(cfg.Namespace, cfg.RunID, ScaleName(d.Name), d)
		objs = append(objs, svc)
		for _, sl := range slices {
			objs = append(objs, sl)
		}
	}
	return objs, about
}
