package k8starget

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// deathCause says, on one line naming the pod, why the agent the run
// started in pod was (as it was when it became ready) can no longer
// measure, or "" while it lives. now is the pod as the API server holds it
// now (nil: not found); seen is the last state the death watch saw of it
// (nil: none), all that is left of a pod deleted since. Every cause is
// read from the API: the pod gone, its deletion and disruption condition,
// a kubelet eviction, the agent container's termination (reason such as
// OOMKilled, exit code, signal, last log lines).
func deathCause(was, now, seen *corev1.Pod) string {
	who := fmt.Sprintf("agent pod %s (%s on %s)", was.Name, was.Labels[LabelEndpoint], was.Spec.NodeName)
	if now != nil && now.UID != was.UID {
		now = nil // another pod under the same name: ours is gone
	}
	if seen != nil && seen.UID != was.UID {
		seen = nil
	}
	if now == nil {
		return who + " was deleted" + deletionDetail(was, seen)
	}
	switch {
	case now.Status.Phase == corev1.PodFailed && now.Status.Reason == "Evicted":
		return who + " was evicted by the kubelet: " + oneLine(now.Status.Message) + endDetail(was, now)
	case now.Status.Phase == corev1.PodFailed || now.Status.Phase == corev1.PodSucceeded:
		return fmt.Sprintf("%s is %s: %s%s", who, now.Status.Phase, or(join(now.Status.Reason, now.Status.Message), "no reason given"), endDetail(was, now))
	case now.DeletionTimestamp != nil:
		return who + " is being deleted" + deletionDetail(was, now)
	}
	if end := containerEnd(was, now); end != "" {
		return who + ": " + end
	}
	return ""
}

// deletionDetail is what a deleted or terminating pod said of it: its
// disruption condition (evicted through the Eviction API, preempted, the
// taint manager, …) and its agent's end, when seen.
func deletionDetail(was, p *corev1.Pod) string {
	if p == nil {
		return ""
	}
	s := ""
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			s += " (" + join(c.Reason, c.Message) + ")"
		}
	}
	return s + endDetail(was, p)
}

func endDetail(was, p *corev1.Pod) string {
	if end := containerEnd(was, p); end != "" {
		return "; " + end
	}
	return ""
}

// containerEnd describes the agent container's end since the pod was
// ready: terminated now, or restarted in place (restartPolicy Always)
// after a termination; "" when it ran on.
func containerEnd(was, p *corev1.Pod) string {
	before := int32(0)
	for _, c := range was.Status.ContainerStatuses {
		if c.Name == ContainerNm {
			before = c.RestartCount
		}
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.Name != ContainerNm {
			continue
		}
		switch {
		case c.State.Terminated != nil:
			return "container " + ContainerNm + " terminated: " + termination(c.State.Terminated)
		case c.RestartCount > before && c.LastTerminationState.Terminated != nil:
			return fmt.Sprintf("container %s terminated: %s; restarted in place, restart count %d", ContainerNm, termination(c.LastTerminationState.Terminated), c.RestartCount)
		case c.RestartCount > before:
			return fmt.Sprintf("container %s restarted in place, restart count %d", ContainerNm, c.RestartCount)
		}
	}
	return ""
}

// termination is a container's end: reason (OOMKilled, Error), exit code,
// the signal behind a code above 128, the end of its message (the last
// log lines: FallbackToLogsOnError).
func termination(t *corev1.ContainerStateTerminated) string {
	parts := []string{}
	if t.Reason != "" {
		parts = append(parts, t.Reason)
	}
	code := fmt.Sprintf("exit code %d", t.ExitCode)
	sig := t.Signal
	if sig == 0 && t.ExitCode > 128 && t.ExitCode < 128+65 {
		sig = t.ExitCode - 128
	}
	if name := unix.SignalName(unix.Signal(sig)); sig > 0 && name != "" {
		code += " (" + name + ")"
	}
	parts = append(parts, code)
	s := strings.Join(parts, ", ")
	if msg := strings.TrimSpace(t.Message); msg != "" {
		if len(msg) > 200 {
			msg = "…" + msg[len(msg)-200:]
		}
		s += ": " + oneLine(msg)
	}
	return s
}
