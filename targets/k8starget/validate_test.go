package k8starget

import (
	"fmt"
	"net/netip"
	"reflect"
	"regexp"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	k8stesting "k8s.io/client-go/testing"
)

// validatingReactor makes the fake clientset refuse what a real API server
// refuses: every object created or updated through it is checked with
// apimachinery's own validation (names as the kind requires them, label
// keys and values, annotation sizes, generateName, namespace names) and a
// few cheap kind-specific rules (EndpointSlice address types and ports,
// Service and container port names, pod sysctl names, node names in
// affinity). A failure is the API server's Invalid error, so a bad label
// value fails a unit test instead of the first real cluster.
func validatingReactor(a k8stesting.Action) (bool, runtime.Object, error) {
	if a.GetSubresource() != "" {
		return false, nil, nil
	}
	var obj runtime.Object
	var opts field.ErrorList
	switch act := a.(type) {
	case k8stesting.CreateActionImpl:
		obj = act.GetObject()
		opts = metav1validation.ValidateCreateOptions(&act.CreateOptions)
	case k8stesting.UpdateActionImpl:
		obj = act.GetObject()
		opts = metav1validation.ValidateUpdateOptions(&act.UpdateOptions)
	default:
		return false, nil, nil
	}
	if obj == nil {
		return false, nil, nil
	}
	meta, err := metaOf(obj)
	if err != nil {
		return true, nil, err
	}
	if errs := append(opts, validateObject(obj, a.GetNamespace())...); len(errs) > 0 {
		gr := a.GetResource().GroupResource()
		kind := schema.GroupKind{Group: gr.Group, Kind: reflect.TypeOf(obj).Elem().Name()}
		return true, nil, apierrors.NewInvalid(kind, meta.GetName(), errs)
	}
	return false, nil, nil
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object meta", obj)
	}
	return m, nil
}

// validateObject is the API server's validation of obj as far as
// apimachinery carries it; ns is the request's namespace ("" for
// cluster-scoped kinds).
func validateObject(obj runtime.Object, ns string) field.ErrorList {
	meta, err := metaOf(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	nameFn := apivalidation.NameIsDNSSubdomain
	namespaced := true
	var spec field.ErrorList
	switch o := obj.(type) {
	case *corev1.Namespace:
		nameFn, namespaced = apivalidation.ValidateNamespaceName, false
	case *corev1.Service:
		nameFn = apivalidation.NameIsDNS1035Label
		spec = validateServiceSpec(o)
	case *corev1.Pod:
		spec = validatePodSpec(&o.Spec, field.NewPath("spec"))
	case *discoveryv1.EndpointSlice:
		spec = validateEndpointSlice(o)
	case *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding:
		nameFn, namespaced = path.ValidatePathSegmentName, false
	case *rbacv1.Role, *rbacv1.RoleBinding:
		nameFn = path.ValidatePathSegmentName
	case *corev1.Node:
		namespaced = false
	case *networkingv1.NetworkPolicy:
		spec = validateNetworkPolicySpec(&o.Spec)
	case *appsv1.DaemonSet:
		spec = validatePodSpec(&o.Spec.Template.Spec, field.NewPath("spec", "template", "spec"))
		spec = append(spec, apivalidation.ValidateAnnotations(o.Spec.Template.Annotations, field.NewPath("spec", "template", "metadata", "annotations"))...)
	case *corev1.ConfigMap:
		for k := range o.Data {
			for _, msg := range validation.IsConfigMapKey(k) {
				spec = append(spec, field.Invalid(field.NewPath("data").Key(k), k, msg))
			}
		}
	}
	errs := apivalidation.ValidateObjectMetaAccessor(meta, namespaced, nameFn, field.NewPath("metadata"))
	if namespaced && ns != "" && meta.GetNamespace() != "" && meta.GetNamespace() != ns {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), meta.GetNamespace(), "does not match the namespace of the request"))
	}
	return append(errs, spec...)
}

func validateServiceSpec(s *corev1.Service) field.ErrorList {
	p := field.NewPath("spec")
	errs := metav1validation.ValidateLabels(s.Spec.Selector, p.Child("selector"))
	names := map[string]bool{}
	for i, port := range s.Spec.Ports {
		pp := p.Child("ports").Index(i)
		if len(s.Spec.Ports) > 1 || port.Name != "" {
			for _, msg := range validation.IsDNS1123Label(port.Name) {
				errs = append(errs, field.Invalid(pp.Child("name"), port.Name, msg))
			}
		}
		if names[port.Name] {
			errs = append(errs, field.Duplicate(pp.Child("name"), port.Name))
		}
		names[port.Name] = true
		for _, msg := range validation.IsValidPortNum(int(port.Port)) {
			errs = append(errs, field.Invalid(pp.Child("port"), port.Port, msg))
		}
		errs = append(errs, validateProtocol(port.Protocol, pp.Child("protocol"))...)
	}
	return errs
}

// sysctlNameRe is the kernel's sysctl name syntax as the API server checks it.
var sysctlNameRe = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

func validatePodSpec(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.NodeName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(s.NodeName, false) {
			errs = append(errs, field.Invalid(p.Child("nodeName"), s.NodeName, msg))
		}
	}
	errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, p.Child("nodeSelector"))...)
	if a := s.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for i, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for j, req := range term.MatchFields {
				fp := p.Child("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms").Index(i).Child("matchFields").Index(j)
				if req.Key != "metadata.name" {
					errs = append(errs, field.Invalid(fp.Child("key"), req.Key, "not a valid field selector key"))
				}
				if len(req.Values) != 1 {
					errs = append(errs, field.Required(fp.Child("values"), "must have exactly one value when `operator` is 'In' or 'NotIn' for field selector"))
				}
				for k, v := range req.Values { // node names, as ValidateNodeName checks them
					for _, msg := range apivalidation.NameIsDNSSubdomain(v, false) {
						errs = append(errs, field.Invalid(fp.Child("values").Index(k), v, msg))
					}
				}
			}
		}
	}
	if sc := s.SecurityContext; sc != nil {
		for i, sy := range sc.Sysctls {
			if len(sy.Name) > 253 || !sysctlNameRe.MatchString(sy.Name) {
				errs = append(errs, field.Invalid(p.Child("securityContext", "sysctls").Index(i).Child("name"), sy.Name, "not a valid sysctl name"))
			}
		}
		if s.HostNetwork && len(sc.Sysctls) > 0 {
			// The API server allows it; the kubelet refuses net.* sysctls
			// with host networking (SysctlForbidden). Refused here so no
			// test can build such a pod unnoticed.
			errs = append(errs, field.Forbidden(p.Child("securityContext", "sysctls"), "net.* sysctls are refused by the kubelet for hostNetwork pods"))
		}
	}
	for i, c := range append(append([]corev1.Container{}, s.InitContainers...), s.Containers...) {
		cp := p.Child("containers").Index(i)
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			errs = append(errs, field.Invalid(cp.Child("name"), c.Name, msg))
		}
		for j, port := range c.Ports {
			if port.Name != "" {
				for _, msg := range validation.IsValidPortName(port.Name) {
					errs = append(errs, field.Invalid(cp.Child("ports").Index(j).Child("name"), port.Name, msg))
				}
			}
			errs = append(errs, validateProtocol(port.Protocol, cp.Child("ports").Index(j).Child("protocol"))...)
		}
		for j, e := range c.Env {
			for _, msg := range validation.IsEnvVarName(e.Name) {
				errs = append(errs, field.Invalid(cp.Child("env").Index(j).Child("name"), e.Name, msg))
			}
		}
	}
	return errs
}

func validateEndpointSlice(s *discoveryv1.EndpointSlice) field.ErrorList {
	var errs field.ErrorList
	switch s.AddressType {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("addressType"), s.AddressType, []string{"IPv4", "IPv6", "FQDN"}))
	}
	if len(s.Endpoints) > 1000 {
		errs = append(errs, field.TooMany(field.NewPath("endpoints"), len(s.Endpoints), 1000))
	}
	for i, ep := range s.Endpoints {
		ap := field.NewPath("endpoints").Index(i).Child("addresses")
		if len(ep.Addresses) < 1 || len(ep.Addresses) > 100 {
			errs = append(errs, field.Invalid(ap, len(ep.Addresses), "must have 1 to 100 addresses"))
		}
		for j, a := range ep.Addresses {
			ip, err := netip.ParseAddr(a)
			if s.AddressType != discoveryv1.AddressTypeFQDN && (err != nil || ip.Is4() != (s.AddressType == discoveryv1.AddressTypeIPv4)) {
				errs = append(errs, field.Invalid(ap.Index(j), a, "must be a valid "+string(s.AddressType)+" address"))
			}
		}
	}
	if len(s.Ports) > 100 {
		errs = append(errs, field.TooMany(field.NewPath("ports"), len(s.Ports), 100))
	}
	names := map[string]bool{}
	for i, port := range s.Ports {
		pp := field.NewPath("ports").Index(i)
		name := ""
		if port.Name != nil {
			name = *port.Name
		}
		if name != "" {
			for _, msg := range validation.IsDNS1123Label(name) {
				errs = append(errs, field.Invalid(pp.Child("name"), name, msg))
			}
		}
		if names[name] {
			errs = append(errs, field.Duplicate(pp.Child("name"), name))
		}
		names[name] = true
		if port.Port != nil {
			for _, msg := range validation.IsValidPortNum(int(*port.Port)) {
				errs = append(errs, field.Invalid(pp.Child("port"), *port.Port, msg))
			}
		}
		if port.Protocol != nil {
			errs = append(errs, validateProtocol(*port.Protocol, pp.Child("protocol"))...)
		}
	}
	return errs
}

func validateProtocol(p corev1.Protocol, fp *field.Path) field.ErrorList {
	switch p {
	case "", corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP: // "" is defaulted to TCP first
		return nil
	}
	return field.ErrorList{field.NotSupported(fp, p, []string{"TCP", "UDP", "SCTP"})}
}

// validateNetworkPolicySpec is the API server's NetworkPolicy spec
// validation (pkg/apis/networking/validation): selectors, ports (a number
// or a port name), peers with exactly one kind of selector or an ipBlock,
// and the policy types.
func validateNetworkPolicySpec(s *networkingv1.NetworkPolicySpec) field.ErrorList {
	p := field.NewPath("spec")
	opts := metav1validation.LabelSelectorValidationOptions{}
	errs := metav1validation.ValidateLabelSelector(&s.PodSelector, opts, p.Child("podSelector"))
	for i, rule := range s.Ingress {
		rp := p.Child("ingress").Index(i)
		for j, port := range rule.Ports {
			pp := rp.Child("ports").Index(j)
			if port.Protocol != nil {
				errs = append(errs, validateProtocol(*port.Protocol, pp.Child("protocol"))...)
			}
			if port.Port != nil {
				if port.Port.Type == intstr.Int {
					for _, msg := range validation.IsValidPortNum(int(port.Port.IntVal)) {
						errs = append(errs, field.Invalid(pp.Child("port"), port.Port.IntVal, msg))
					}
				} else {
					for _, msg := range validation.IsValidPortName(port.Port.StrVal) {
						errs = append(errs, field.Invalid(pp.Child("port"), port.Port.StrVal, msg))
					}
				}
			}
		}
		for j, peer := range rule.From {
			fp := rp.Child("from").Index(j)
			n := 0
			if peer.PodSelector != nil {
				n++
				errs = append(errs, metav1validation.ValidateLabelSelector(peer.PodSelector, opts, fp.Child("podSelector"))...)
			}
			if peer.NamespaceSelector != nil {
				n++
				errs = append(errs, metav1validation.ValidateLabelSelector(peer.NamespaceSelector, opts, fp.Child("namespaceSelector"))...)
			}
			if peer.IPBlock != nil {
				n++
				if _, err := netip.ParsePrefix(peer.IPBlock.CIDR); err != nil {
					errs = append(errs, field.Invalid(fp.Child("ipBlock", "cidr"), peer.IPBlock.CIDR, err.Error()))
				}
			}
			if n == 0 {
				errs = append(errs, field.Required(fp, "must specify a peer"))
			}
		}
	}
	if len(s.Egress) > 0 {
		errs = append(errs, field.Forbidden(p.Child("egress"), "cnibench's check has no egress rules (not validated here)"))
	}
	for i, t := range s.PolicyTypes {
		if t != networkingv1.PolicyTypeIngress && t != networkingv1.PolicyTypeEgress {
			errs = append(errs, field.NotSupported(p.Child("policyTypes").Index(i), t, []string{"Ingress", "Egress"}))
		}
	}
	return errs
}
