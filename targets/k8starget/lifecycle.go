package k8starget

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// pollInterval is how often pod states are read while waiting; tests
// shorten it.
var pollInterval = time.Second

// create makes every object of m, in order (pods through fb, which drops
// sysctls admission refuses). It stops at the first error, which names the
// object.
func create(ctx context.Context, cs kubernetes.Interface, m *Manifests, fb *sysctlFallback) error {
	opts := metav1.CreateOptions{FieldManager: ManagedBy}
	if m.Namespace != nil {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, m.Namespace, opts); err != nil {
			return fmt.Errorf("create Namespace %s: %w", m.Namespace.Name, err)
		}
	}
	if _, err := cs.CoreV1().Secrets(m.Secret.Namespace).Create(ctx, m.Secret, opts); err != nil {
		return fmt.Errorf("create Secret %s/%s: %w", m.Secret.Namespace, m.Secret.Name, err)
	}
	for _, p := range m.Pods {
		if err := fb.createPod(ctx, p, opts); err != nil {
			return fmt.Errorf("create Pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	for _, s := range m.Services {
		if _, err := cs.CoreV1().Services(s.Namespace).Create(ctx, s, opts); err != nil {
			return fmt.Errorf("create Service %s/%s: %w", s.Namespace, s.Name, err)
		}
	}
	return nil
}

// ErrAgentFailed is wrapped by waitReady when an agent pod can never
// become ready (crash, bad image name, bad config), as opposed to a
// timeout on a pod that might still have come up.
var ErrAgentFailed = errors.New("agent pod failed")

// waitReady polls the run's pods until every wanted one is Running, Ready
// and has an IP. A pod the kubelet refused for an unsafe sysctl is created
// again without it (fb, nil: never). A pod that can never run (crashed,
// an image name that cannot work) fails at once; one that is still
// unschedulable, pulling its image or waiting for the kubelet to retry
// something when timeout passes fails with the last reason. It never waits
// longer than timeout.
func waitReady(ctx context.Context, cs kubernetes.Interface, ns, runID string, want []string, timeout time.Duration, fb *sysctlFallback) (map[string]*corev1.Pod, error) {
	deadline := time.Now().Add(timeout)
	var states map[string]string
	for {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: RunSelector(runID)})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("list agent pods: %w", err)
		}
		byName := map[string]*corev1.Pod{}
		for i := range list.Items {
			byName[list.Items[i].Name] = &list.Items[i]
		}
		ready := map[string]*corev1.Pod{}
		states = map[string]string{}
		for _, name := range want {
			p, ok := byName[name]
			if !ok {
				return nil, fmt.Errorf("%w: pod %s/%s disappeared (deleted by someone else?)", ErrAgentFailed, ns, name)
			}
			if fb != nil {
				redone, err := fb.retry(ctx, p)
				if err != nil {
					return nil, fmt.Errorf("%w: %v", ErrAgentFailed, err)
				}
				if redone {
					states[name] = "created again without its unsafe sysctls"
					continue
				}
			}
			if fatal := crashed(p); fatal != "" {
				return nil, fmt.Errorf("%w: %s", ErrAgentFailed, fatal)
			}
			if podReady(p) && p.Status.PodIP != "" {
				ready[name] = p
				continue
			}
			states[name] = pending(p)
		}
		if len(ready) == len(want) {
			return ready, nil
		}
		if !time.Now().Before(deadline) {
			return nil, fmt.Errorf("agents not ready after %s: %s", timeout, describeStates(ns, states))
		}
		wait := min(pollInterval, time.Until(deadline))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

func describeStates(ns string, states map[string]string) string {
	var parts []string
	for name, s := range states {
		parts = append(parts, ns+"/"+name+": "+s)
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// crashed says why a pod can never become ready, or "". An agent never
// exits on its own, so any terminated agent container is a crash. Errors
// the kubelet retries (CreateContainerConfigError while the node
// authorizer has not yet linked the token Secret to the node, a failed
// container create) are not final: waitReady reports them as the pod's
// state when its timeout passes.
func crashed(p *corev1.Pod) string {
	where := p.Name
	if p.Spec.NodeName != "" {
		where += " on " + p.Spec.NodeName
	}
	switch p.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		return fmt.Sprintf("pod %s is %s: %s", where, p.Status.Phase, join(p.Status.Reason, p.Status.Message))
	}
	for _, c := range p.Status.ContainerStatuses {
		if w := c.State.Waiting; w != nil {
			switch w.Reason {
			case "CrashLoopBackOff":
				return fmt.Sprintf("agent in pod %s is crash-looping (CrashLoopBackOff, %d restarts)%s", where, c.RestartCount, lastExit(c.LastTerminationState.Terminated))
			case "InvalidImageName", "ErrImageNeverPull":
				return fmt.Sprintf("agent in pod %s cannot start: %s", where, join(w.Reason, w.Message))
			}
		}
		if t := c.State.Terminated; t != nil {
			return fmt.Sprintf("agent in pod %s exited%s", where, lastExit(t))
		}
		if c.RestartCount > 0 && c.LastTerminationState.Terminated != nil {
			return fmt.Sprintf("agent in pod %s crashed and was restarted (%d restarts)%s", where, c.RestartCount, lastExit(c.LastTerminationState.Terminated))
		}
	}
	return ""
}

func lastExit(t *corev1.ContainerStateTerminated) string {
	if t == nil {
		return ""
	}
	s := fmt.Sprintf("; last exit code %d", t.ExitCode)
	if t.Reason != "" {
		s += " (" + t.Reason + ")"
	}
	if msg := strings.TrimSpace(t.Message); msg != "" {
		if len(msg) > 400 {
			msg = "…" + msg[len(msg)-400:]
		}
		s += ": " + oneLine(msg)
	}
	return s
}

// pending describes a pod that is not ready yet.
func pending(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return join(or(c.Reason, "not scheduled"), c.Message)
		}
	}
	for _, c := range p.Status.ContainerStatuses {
		if w := c.State.Waiting; w != nil && w.Reason != "" {
			return "on " + p.Spec.NodeName + ": " + join(w.Reason, w.Message)
		}
	}
	switch {
	case p.Status.Phase == corev1.PodRunning && p.Status.PodIP == "":
		return "Running on " + p.Spec.NodeName + " without a pod IP yet"
	case p.Status.Phase == corev1.PodRunning:
		return "Running on " + p.Spec.NodeName + " but not Ready (readiness probe on the control port failing)"
	case p.Status.Phase == "":
		return "Pending (no status yet)"
	}
	return string(p.Status.Phase)
}

func join(reason, msg string) string {
	msg = oneLine(msg)
	switch {
	case reason == "":
		return msg
	case msg == "":
		return reason
	}
	return reason + ": " + msg
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// namespaceState says whether ns exists and whether cnibench made it.
func namespaceState(ctx context.Context, cs kubernetes.Interface, ns string) (exists, ours bool, err error) {
	n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, false, nil
	case err != nil:
		return false, false, fmt.Errorf("read namespace %s: %w", ns, err)
	}
	return true, n.Labels[LabelManagedBy] == ManagedBy, nil
}
