package k8starget

import (
	"bytes"
	"fmt"
	"io"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	enginekinds "github.com/cnibench/cnibench/engine/kinds"
)

// Names of the objects of a run (one run per namespace at a time: the
// preflight refuses to start while another run's objects are there).
const (
	SecretName  = "cnibench-agent-token"
	SecretKey   = "token"
	ContainerNm = "agent"
)

// PodName is the agent pod of an endpoint.
func PodName(endpoint string) string { return "cnibench-" + endpoint }

// ServiceName is the ClusterIP Service in front of a server endpoint.
func ServiceName(endpoint string) string { return "cnibench-" + endpoint }

// Layout is everything a run creates, resolved from the Config and the
// chosen nodes. Build turns it into typed objects.
type Layout struct {
	Namespace       string            `json:"namespace"`
	CreateNamespace bool              `json:"create_namespace"` // false when it exists and is not ours
	RunID           string            `json:"run_id"`
	Image           string            `json:"image"`
	PullPolicy      corev1.PullPolicy `json:"pull_policy"`
	Token           string            `json:"-"`
	Nodes           [2]string         `json:"nodes"`     // node0 (client side), node1 (server side)
	Endpoints       []string          `json:"endpoints"` // agents, in endpointSpecs order
	Services        []string          `json:"services"`  // server endpoints with a ClusterIP Service
	Resources       Resources         `json:"resources"`
	Probes          bool              `json:"probes,omitempty"` // a node probe per node (manifests_probe.go)
	// Sysctls every agent pod with its own network namespace sets.
	Sysctls []corev1.Sysctl `json:"sysctls,omitempty"`
	// NetPolCheck adds the NetworkPolicy check's denied prober and policy
	// (netpol.go).
	NetPolCheck bool `json:"network_policy_check,omitempty"`
}

// Manifests are the typed objects of a run, in the order they are created.
type Manifests struct {
	Namespace *corev1.Namespace // nil when the namespace is not ours
	Secret    *corev1.Secret
	Pods      []*corev1.Pod
	Services  []*corev1.Service
	// NetworkPolicies are created by the NetworkPolicy check once the
	// agents are up (netpol_check.go), not by create.
	NetworkPolicies []*networkingv1.NetworkPolicy
}

// Objects lists every object in creation order.
func (m *Manifests) Objects() []runtime.Object {
	var out []runtime.Object
	if m.Namespace != nil {
		out = append(out, m.Namespace)
	}
	out = append(out, m.Secret)
	for _, p := range m.Pods {
		out = append(out, p)
	}
	for _, s := range m.Services {
		out = append(out, s)
	}
	for _, np := range m.NetworkPolicies {
		out = append(out, np)
	}
	return out
}

// Build makes the typed objects of a layout.
func Build(l Layout) (*Manifests, error) {
	res, err := l.Resources.requirements()
	if err != nil {
		return nil, err
	}
	m := &Manifests{}
	if l.CreateNamespace {
		lbl := baseLabels(l.RunID, NameAgent)
		// Host-network agents (host-to-host) need the privileged Pod
		// Security level; a namespace of ours says so explicitly.
		lbl["pod-security.kubernetes.io/enforce"] = "privileged"
		m.Namespace = &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: l.Namespace, Labels: lbl},
		}
	}
	m.Secret = &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: SecretName, Namespace: l.Namespace, Labels: baseLabels(l.RunID, NameAgent)},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{SecretKey: []byte(l.Token)},
	}
	for _, name := range l.Endpoints {
		spec, ok := lookupEndpoint(name)
		if !ok {
			return nil, fmt.Errorf("unknown endpoint %q", name)
		}
		node := l.Nodes[spec.Node]
		if node == "" {
			return nil, fmt.Errorf("endpoint %s needs node%d, but none was chosen", name, spec.Node)
		}
		m.Pods = append(m.Pods, agentPod(l, spec, node, res))
	}
	m.Pods = append(m.Pods, probePods(l)...)
	if p := netPolDeniedPod(l, res); p != nil {
		m.Pods = append(m.Pods, p)
	}
	m.NetworkPolicies = networkPolicies(l)
	for _, name := range l.Services {
		m.Services = append(m.Services, agentService(l, name))
	}
	return m, nil
}

func (r Resources) requirements() (corev1.ResourceRequirements, error) {
	q := map[string]resource.Quantity{}
	for k, v := range map[string]string{"cpu": r.CPURequest, "mem": r.MemoryRequest, "limit": r.MemoryLimit} {
		parsed, err := resource.ParseQuantity(v)
		if err != nil {
			return corev1.ResourceRequirements{}, fmt.Errorf("agent resources: %s %q: %v", k, v, err)
		}
		q[k] = parsed
	}
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: q["cpu"], corev1.ResourceMemory: q["mem"]},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: q["limit"]},
	}, nil
}

// dataPorts are the ports the agent's engines listen on (kinds.ExposedPorts).
func dataPorts() []corev1.ContainerPort {
	var ports []corev1.ContainerPort
	for _, p := range enginekinds.ExposedPorts() {
		proto := corev1.ProtocolTCP
		if p.Proto == "udp" {
			proto = corev1.ProtocolUDP
		}
		ports = append(ports, corev1.ContainerPort{Name: p.Name, ContainerPort: int32(p.Number), Protocol: proto})
	}
	return ports
}

func agentPod(l Layout, spec endpointSpec, node string, res corev1.ResourceRequirements) *corev1.Pod {
	lbl := baseLabels(l.RunID, NameAgent)
	lbl[LabelEndpoint] = spec.Name
	lbl[LabelRole] = "server"
	if isClientEndpoint(spec.Name) {
		lbl[LabelRole] = "client"
	}
	nobody := int64(65534)
	yes, no := true, false
	grace := int64(2)
	dns := corev1.DNSClusterFirst
	if spec.Host {
		dns = corev1.DNSClusterFirstWithHostNet
	}
	ports := append([]corev1.ContainerPort{{Name: "control", ContainerPort: ControlPort, Protocol: corev1.ProtocolTCP}}, dataPorts()...)
	var sysctls []corev1.Sysctl
	if !spec.Host { // the node's namespace: the kubelet refuses net.* sysctls there
		sysctls = append(sysctls, l.Sysctls...)
	}
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: PodName(spec.Name), Namespace: l.Namespace, Labels: lbl},
		Spec: corev1.PodSpec{
			// Pinned through the scheduler (not spec.nodeName), so taints,
			// resources and host ports are checked and a pod that cannot
			// run says why (PodScheduled=False, Unschedulable).
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
						Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node},
					}}}},
				},
			}},
			NodeSelector:                  map[string]string{"kubernetes.io/os": "linux"},
			HostNetwork:                   spec.Host,
			DNSPolicy:                     dns,
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   &yes,
				RunAsUser:      &nobody,
				RunAsGroup:     &nobody,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				Sysctls:        sysctls,
			},
			Containers: []corev1.Container{{
				Name:            ContainerNm,
				Image:           l.Image,
				ImagePullPolicy: l.PullPolicy,
				Command:         []string{BinaryPath, "agent", "--control", "tcp::" + strconv.Itoa(ControlPort)},
				Env: []corev1.EnvVar{{Name: "CNIBENCH_AGENT_TOKEN", ValueFrom: &corev1.EnvVarSource{
					SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: SecretName}, Key: SecretKey},
				}}},
				Ports:     ports,
				Resources: res,
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(ControlPort)}},
					PeriodSeconds: 2,
				},
				// A crashing agent's last log lines become its termination
				// message, which the CLI shows.
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: &no,
					ReadOnlyRootFilesystem:   &yes,
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}

func agentService(l Layout, endpoint string) *corev1.Service {
	lbl := baseLabels(l.RunID, NameAgent)
	lbl[LabelEndpoint] = endpoint
	var ports []corev1.ServicePort
	for _, p := range dataPorts() {
		ports = append(ports, corev1.ServicePort{Name: p.Name, Port: p.ContainerPort, Protocol: p.Protocol, TargetPort: intstr.FromInt32(p.ContainerPort)})
	}
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName(endpoint), Namespace: l.Namespace, Labels: lbl},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{LabelRunID: l.RunID, LabelEndpoint: endpoint},
			Ports:    ports,
		},
	}
}

// WriteYAML writes objects as YAML documents separated by "---" lines,
// each with its apiVersion and kind, ready for kubectl apply -f.
func WriteYAML(w io.Writer, objs []runtime.Object) error {
	var buf bytes.Buffer
	for i, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			return fmt.Errorf("render manifest %d: %w", i, err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// Placeholders for nodes a dry run does not know: valid node names (an
// API server refuses an invalid one in the node affinity), under the
// reserved .invalid domain so that no real node has them.
const (
	PlaceholderClientNode = "client-node.invalid"
	PlaceholderServerNode = "server-node.invalid"
)

// OfflineLayout is the layout of a run decided without asking the cluster
// (for --dry-run): nodes come from the flags or are placeholders, the
// namespace is assumed to be created, and every placement is assumed
// possible.
func OfflineLayout(cfg Config, token string) (Layout, error) {
	if err := cfg.Validate(); err != nil {
		return Layout{}, err
	}
	l := Layout{
		Namespace: cfg.Namespace, CreateNamespace: true, RunID: cfg.RunID, Image: cfg.Image,
		PullPolicy: cfg.PullPolicy, Token: token, Resources: cfg.Resources,
		Nodes: [2]string{or(cfg.ClientNode, PlaceholderClientNode), or(cfg.ServerNode, PlaceholderServerNode)},
	}
	placements := cfg.Placements
	if cfg.Scale != nil && len(placements) > 1 {
		placements = placements[:1] // a sweep's first choice: both nodes are assumed
	}
	l.Endpoints, l.Services = endpointsFor(placements, cfg.Pairs)
	l.Probes = cfg.Scale.probes()
	l.Sysctls = cfg.podSysctls()
	l.NetPolCheck = cfg.deniedProber()
	return l, nil
}

// endpointsFor lists the agents and Services the placements' pairs need,
// in endpointSpecs order: a Service in front of each pod-to-service pair's
// server.
func endpointsFor(placements []string, pairs int) (endpoints, services []string) {
	eps, svcs := map[string]bool{}, map[string]bool{}
	for _, pl := range placements {
		for k := range max(1, pairs) {
			e, err := pairEndpoints(pl, k)
			if err != nil {
				continue // host-to-host has pair 0 only; an unknown placement is refused by Validate
			}
			eps[e[0]], eps[e[1]] = true, true
			if isServicePlacement(pl) {
				svcs[e[1]] = true
			}
		}
	}
	for _, e := range endpointSpecs(pairs) {
		if eps[e.Name] {
			endpoints = append(endpoints, e.Name)
		}
		if svcs[e.Name] {
			services = append(services, e.Name)
		}
	}
	return endpoints, services
}
