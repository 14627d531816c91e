package k8starget

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/cnibench/cnibench/lab"
)

// Sysctls agent pods set, with the lab's values (lab.DefaultSysctls): with
// kernel defaults (ports 32768-60999, tcp_tw_reuse 2) TCP_CRR and
// HTTP_RPS_SHORT run out of ephemeral ports within seconds and measure
// that instead of the datapath.
const (
	SysctlPortRange = "net.ipv4.ip_local_port_range"
	SysctlTWReuse   = "net.ipv4.tcp_tw_reuse"
)

// SysctlForbiddenReason is the status reason of a pod the kubelet refused
// because of a sysctl its allowlist does not hold.
const SysctlForbiddenReason = "SysctlForbidden"

// safeSysctls are the kubelet's safe sysctls (Kubernetes 1.34,
// pkg/kubelet/sysctl/safe_sysctls.go; the Pod Security baseline level
// allows the same): a pod may set them on any kubelet. Any other sysctl
// needs the kubelet's --allowed-unsafe-sysctls (allowedUnsafeSysctls in
// its config file).
var safeSysctls = map[string]bool{
	"kernel.shm_rmid_forced": true, "net.ipv4.ip_local_port_range": true, "net.ipv4.tcp_syncookies": true,
	"net.ipv4.ping_group_range": true, "net.ipv4.ip_unprivileged_port_start": true, "net.ipv4.ip_local_reserved_ports": true,
	"net.ipv4.tcp_keepalive_time": true, "net.ipv4.tcp_fin_timeout": true, "net.ipv4.tcp_keepalive_intvl": true,
	"net.ipv4.tcp_keepalive_probes": true, "net.ipv4.tcp_rmem": true, "net.ipv4.tcp_wmem": true,
}

// DefaultPodSysctls are what every agent pod that has its own network
// namespace sets (hostNetwork pods share the node's: the kubelet refuses
// net.* sysctls there).
func DefaultPodSysctls() []corev1.Sysctl {
	d := lab.DefaultSysctls()
	return []corev1.Sysctl{{Name: SysctlPortRange, Value: d[SysctlPortRange]}, {Name: SysctlTWReuse, Value: d[SysctlTWReuse]}}
}

// SysctlDrop is a pod that runs without some of its sysctls, and why.
type SysctlDrop struct {
	Endpoint string   `json:"endpoint"`
	Node     string   `json:"node,omitempty"`
	Sysctls  []string `json:"sysctls"`
	Reason   string   `json:"reason"`
}

// String is the note the results and the progress carry.
func (d SysctlDrop) String() string {
	where := "pod " + PodName(d.Endpoint)
	if d.Node != "" {
		where += " on node " + d.Node
	}
	return fmt.Sprintf("%s runs without %s (%s): the kernel default applies there, so connection-per-transaction tests (TCP_CRR, HTTP_RPS_SHORT_*) may measure port exhaustion; allow it with the kubelet flag --allowed-unsafe-sysctls=%s (allowedUnsafeSysctls in the kubelet config)",
		where, strings.Join(d.Sysctls, ", "), d.Reason, strings.Join(d.Sysctls, ","))
}

// sysctlFallback recreates agent pods without the unsafe sysctls a node
// or the namespace's Pod Security level refused, and records each drop.
type sysctlFallback struct {
	cs    kubernetes.Interface
	pods  map[string]*corev1.Pod // name → the pod as built
	mu    sync.Mutex
	drops []SysctlDrop
}

func newSysctlFallback(cs kubernetes.Interface, m *Manifests) *sysctlFallback {
	f := &sysctlFallback{cs: cs, pods: map[string]*corev1.Pod{}}
	for _, p := range m.Pods {
		f.pods[p.Name] = p
	}
	return f
}

// unsafeSysctls are a pod's sysctls outside the kubelet's safe set.
func unsafeSysctls(p *corev1.Pod) []string {
	var out []string
	if p.Spec.SecurityContext != nil {
		for _, s := range p.Spec.SecurityContext.Sysctls {
			if !safeSysctls[s.Name] {
				out = append(out, s.Name)
			}
		}
	}
	return out
}

// withoutUnsafe is a copy of the pod as built, its unsafe sysctls left out.
func withoutUnsafe(p *corev1.Pod) *corev1.Pod {
	q := p.DeepCopy()
	var keep []corev1.Sysctl
	for _, s := range q.Spec.SecurityContext.Sysctls {
		if safeSysctls[s.Name] {
			keep = append(keep, s)
		}
	}
	q.Spec.SecurityContext.Sysctls = keep
	return q
}

// createPod creates p; when admission refuses it for its sysctls (the Pod
// Security baseline and restricted levels allow only the safe ones) it is
// created again without the unsafe ones, and the drop is recorded.
func (f *sysctlFallback) createPod(ctx context.Context, p *corev1.Pod, opts metav1.CreateOptions) error {
	f.pods[p.Name] = p // a replacement's, too: retry finds what it was built as
	_, err := f.cs.CoreV1().Pods(p.Namespace).Create(ctx, p, opts)
	unsafe := unsafeSysctls(p)
	if err == nil || !apierrors.IsForbidden(err) || len(unsafe) == 0 || !strings.Contains(err.Error(), "sysctl") {
		return err
	}
	q := withoutUnsafe(p)
	if _, err2 := f.cs.CoreV1().Pods(p.Namespace).Create(ctx, q, opts); err2 != nil {
		return fmt.Errorf("%w (and again without %s: %v)", err, strings.Join(unsafe, ", "), err2)
	}
	f.pods[p.Name] = q
	f.record(SysctlDrop{Endpoint: p.Labels[LabelEndpoint], Sysctls: unsafe, Reason: "refused by admission: " + oneLine(err.Error())})
	return nil
}

// retry handles a pod the kubelet refused for an unsafe sysctl
// (SysctlForbidden, phase Failed): it is deleted and created again without
// the unsafe sysctls. It reports whether it did so; a refusal it cannot
// fix (a safe sysctl refused) is left to the caller as a failed pod.
func (f *sysctlFallback) retry(ctx context.Context, p *corev1.Pod) (bool, error) {
	if p.Status.Phase != corev1.PodFailed || p.Status.Reason != SysctlForbiddenReason {
		return false, nil
	}
	built := f.pods[p.Name]
	if built == nil {
		return false, nil
	}
	unsafe := unsafeSysctls(built)
	if len(unsafe) == 0 {
		return false, nil
	}
	// A Failed pod is deleted at once (no grace period for terminal pods).
	if err := f.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("delete pod %s refused for its sysctls: %w", p.Name, err)
	}
	if err := waitGone(ctx, f.cs, p.Namespace, p.Name); err != nil {
		return false, err
	}
	q := withoutUnsafe(built)
	if _, err := f.cs.CoreV1().Pods(p.Namespace).Create(ctx, q, metav1.CreateOptions{FieldManager: ManagedBy}); err != nil {
		return false, fmt.Errorf("create pod %s again without %s: %w", p.Name, strings.Join(unsafe, ", "), err)
	}
	f.pods[p.Name] = q
	f.record(SysctlDrop{Endpoint: p.Labels[LabelEndpoint], Node: p.Spec.NodeName, Sysctls: unsafe,
		Reason: "the kubelet refused it: " + join(p.Status.Reason, p.Status.Message)})
	return true, nil
}

// waitGone polls until the pod is deleted (bounded by 30 s).
func waitGone(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
	return waitPodGone(ctx, cs, ns, name, "")
}

// waitPodGone polls until the pod of that UID is deleted ("": any pod of
// that name), bounded by 30 s: a node that is down never confirms a
// deletion, and its pod is then left to the run's cleanup.
func waitPodGone(ctx context.Context, cs kubernetes.Interface, ns, name string, uid types.UID) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && uid != "" && p.UID != uid) {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("pod %s/%s still there 30s after its deletion", ns, name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(pollInterval, 200*time.Millisecond)):
		}
	}
}

// built is the pod as created under name, after any drop (nil: unknown).
func (f *sysctlFallback) built(name string) *corev1.Pod {
	if f == nil {
		return nil
	}
	return f.pods[name]
}

func (f *sysctlFallback) record(d SysctlDrop) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drops = append(f.drops, d)
}

// Drops are the recorded drops, by endpoint.
func (f *sysctlFallback) Drops() []SysctlDrop {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := append([]SysctlDrop(nil), f.drops...)
	sort.Slice(out, func(i, j int) bool { return out[i].Endpoint < out[j].Endpoint })
	return out
}

// podSysctls is what a pod as created asks for, as a map (nil: nothing).
func podSysctls(p *corev1.Pod) map[string]string {
	if p == nil || p.Spec.SecurityContext == nil || len(p.Spec.SecurityContext.Sysctls) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, s := range p.Spec.SecurityContext.Sysctls {
		m[s.Name] = s.Value
	}
	return m
}
