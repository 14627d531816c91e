package k8starget

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
)

// RBACName names the ClusterRole, Role and their bindings.
const RBACName = "cnibench"

// Subject is who gets the rights: a user, a group or a service account
// ("namespace/name").
type Subject struct {
	User           string `json:"user,omitempty"`
	Group          string `json:"group,omitempty"`
	ServiceAccount string `json:"service_account,omitempty"`
}

func (s Subject) rbac(defaultNS string) ([]rbacv1.Subject, error) {
	set := 0
	for _, v := range []string{s.User, s.Group, s.ServiceAccount} {
		if v != "" {
			set++
		}
	}
	if set > 1 {
		return nil, fmt.Errorf("give one of --user, --group and --service-account")
	}
	switch {
	case s.User != "":
		return []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: s.User}}, nil
	case s.Group != "":
		return []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: s.Group}}, nil
	}
	ns, name := defaultNS, RBACName
	if s.ServiceAccount != "" {
		var ok bool
		if ns, name, ok = strings.Cut(s.ServiceAccount, "/"); !ok {
			ns, name = defaultNS, s.ServiceAccount
		}
	}
	for _, v := range []string{ns, name} {
		if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
			return nil, fmt.Errorf("--service-account %q: %s", s.ServiceAccount, strings.Join(errs, "; "))
		}
	}
	return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}, nil
}

// ClusterRules are the cluster-wide rights: reading nodes and the
// datapath's DaemonSets and ConfigMaps (only those named), listing pods to
// see where the CNI agent runs, reading the run's namespace, and the pod
// metrics of the datapath's pods.
func ClusterRules(namespace string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"},
			ResourceNames: []string{"cilium-config", "kube-proxy", "kube-proxy-config", "kube-flannel-cfg"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}, ResourceNames: []string{namespace}},
		// --datapath-usage metrics: the datapath pods' CPU and memory
		// (the metrics API lists a namespace's pods; kube-system's here).
		{APIGroups: []string{"metrics.k8s.io"}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
	}
}

// NodeProxyRule lets --datapath-usage kubelet read the kubelet summary
// through the API server. Only with `cnibench k8s rbac --node-proxy`:
// nodes/proxy also reaches the kubelet's exec and run APIs, which is
// root on every node.
var NodeProxyRule = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{"get"}}

// RBACOption changes what RBAC grants.
type RBACOption func(*[]rbacv1.PolicyRule)

// WithNodeProxy adds NodeProxyRule to the ClusterRole.
func WithNodeProxy() RBACOption {
	return func(rules *[]rbacv1.PolicyRule) { *rules = append(*rules, NodeProxyRule) }
}

// NamespaceRules are the rights inside the run's namespace: the agents'
// pods (and port-forwarding to them), their Services, the Service-scale
// sweep's dummy Services and EndpointSlices, the NetworkPolicy check's
// policy, and the one token Secret.
func NamespaceRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "services"}, Verbs: []string{"create", "get", "list", "delete"}},
		// SPDY port-forward is a POST (create); the websocket upgrade is a
		// GET that newer API servers authorise as create, older ones as get.
		{APIGroups: []string{""}, Resources: []string{"pods/portforward"}, Verbs: []string{"create", "get"}},
		// deletecollection: the sweep removes its Services and EndpointSlices by label in one call each.
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"deletecollection"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"create", "list", "delete", "deletecollection"}},
		// --network-policy-check: the run's NetworkPolicy, in this namespace only.
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"create", "list", "delete"}},
		// and where Cilium runs, its L7 CiliumNetworkPolicy (a no-op rule elsewhere).
		{APIGroups: []string{"cilium.io"}, Resources: []string{"ciliumnetworkpolicies"}, Verbs: []string{"create", "delete"}},
		// create cannot be limited by name; get and delete can.
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "delete"}, ResourceNames: []string{SecretName}},
	}
}

// RBAC returns the least-privilege objects for running cnibench in
// namespace: the namespace itself (made by the admin, so cnibench neither
// creates nor deletes it and needs no cluster-wide namespace rights), a
// ClusterRole and a Role with their bindings to subject.
func RBAC(namespace string, subject Subject, opts ...RBACOption) ([]runtime.Object, error) {
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return nil, fmt.Errorf("--namespace %q: %s", namespace, strings.Join(errs, "; "))
	}
	subjects, err := subject.rbac(namespace)
	if err != nil {
		return nil, err
	}
	var objs []runtime.Object
	objs = append(objs, &corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{
			// host-to-host needs hostNetwork agents.
			"pod-security.kubernetes.io/enforce": "privileged",
		}},
	})
	if subjects[0].Kind == rbacv1.ServiceAccountKind && subjects[0].Namespace == namespace {
		objs = append(objs, &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Name: subjects[0].Name, Namespace: namespace},
		})
	}
	clusterRules := ClusterRules(namespace)
	for _, o := range opts {
		o(&clusterRules)
	}
	objs = append(objs,
		&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: RBACName + "-" + namespace},
			Rules:      clusterRules,
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: RBACName + "-" + namespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: RBACName + "-" + namespace},
			Subjects:   subjects,
		},
	)
	return append(objs, roleAndBinding(RBACName, namespace, NamespaceRules(), subjects)...), nil
}

// roleAndBinding is a namespaced Role with rules and its RoleBinding to
// subjects, both named name.
func roleAndBinding(name, namespace string, rules []rbacv1.PolicyRule, subjects []rbacv1.Subject) []runtime.Object {
	return []runtime.Object{
		&rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Rules:      rules,
		},
		&rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects:   subjects,
		},
	}
}
