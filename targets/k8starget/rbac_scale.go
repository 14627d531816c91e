package k8starget

import (
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultCiliumNamespace is where Cilium's Helm chart installs it.
const DefaultCiliumNamespace = "kube-system"

// ClusterChangeRules are the only writes outside the run's namespace, and
// only for `run --tests service-scale --allow-cluster-changes` on Cilium:
// raising bpf-lb-map-max in cilium-config and restarting the Cilium
// DaemonSet so it takes effect (and putting both back at the end). The
// sweep itself (dummy Services, EndpointSlices, node probe pods) needs no
// more than NamespaceRules; reading cilium-config and DaemonSets is in
// ClusterRules.
func ClusterChangeRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "update"}, ResourceNames: []string{"cilium-config"}},
		{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"get", "update"}, ResourceNames: []string{"cilium"}},
	}
}

// ClusterChangeRBAC is a Role with ClusterChangeRules in Cilium's
// namespace and its binding to subject (`cnibench k8s rbac
// --allow-cluster-changes`). Without it, --allow-cluster-changes fails
// with the API server's Forbidden and nothing is changed.
func ClusterChangeRBAC(namespace, ciliumNamespace string, subject Subject) ([]runtime.Object, error) {
	if errs := validation.IsDNS1123Label(ciliumNamespace); len(errs) > 0 {
		return nil, fmt.Errorf("--cilium-namespace %q: %s", ciliumNamespace, strings.Join(errs, "; "))
	}
	subjects, err := subject.rbac(namespace)
	if err != nil {
		return nil, err
	}
	name := RBACName + "-" + namespace + "-cluster-changes"
	return roleAndBinding(name, ciliumNamespace, ClusterChangeRules(), subjects), nil
}
