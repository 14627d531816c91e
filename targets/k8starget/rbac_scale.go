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
// only with --allow-cluster-changes on Cilium: changing a key of
// cilium-config (bpf-lb-map-max for the Service-scale sweep and the
// churn, enable-hubble for the security profile's flows twin) and
// restarting the Cilium DaemonSet so it takes effect (and putting both
// back at the end), and exec in Cilium's pods, where the flows twin asks
// each agent for its Hubble state (cilium-dbg status). pods/exec cannot
// be limited to the agents' generated pod names: it reaches every pod of
// the namespace, which is why it is granted only with this flag. The
// rest of each run needs no more than NamespaceRules; reading
// cilium-config, DaemonSets and pods is in ClusterRules.
func ClusterChangeRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "update"}, ResourceNames: []string{"cilium-config"}},
		{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"get", "update"}, ResourceNames: []string{"cilium"}},
		// SPDY exec is a POST (create); the websocket upgrade is a GET that
		// newer API servers authorise as create, older ones as get.
		{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create", "get"}},
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
