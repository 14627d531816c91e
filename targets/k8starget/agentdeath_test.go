package k8starget

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// agentPodAt is node1-pod0's agent pod as the API server shows it: mut
// changes its state.
func agentPodAt(mut ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "cnibench-node1-pod0", Namespace: testNS, UID: types.UID("uid-1"),
			Labels: map[string]string{LabelEndpoint: "node1-pod0"}},
		Spec:   corev1.PodSpec{NodeName: "worker-b"},
		Status: *running("10.244.2.10"),
	}
	for _, m := range mut {
		m(p)
	}
	return p
}

func terminated(reason string, code int32, msg string) *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code, Message: msg}
}

// Every way an agent pod dies reads as one line naming the pod, with the
// cause the API server gives; a live one (not ready for a moment, or
// never restarted) is not dead.
func TestDeathCause(t *testing.T) {
	now := metav1.Now()
	was := agentPodAt()
	const who = "agent pod cnibench-node1-pod0 (node1-pod0 on worker-b)"
	cases := []struct {
		name      string
		now, seen *corev1.Pod
		want      string
	}{
		{"alive", agentPodAt(), agentPodAt(), ""},
		{"readiness failing only", agentPodAt(func(p *corev1.Pod) { p.Status.ContainerStatuses[0].Ready = false }), nil, ""},
		{"deleted, nothing seen", nil, nil, who + " was deleted"},
		{"deleted after an Eviction API call seen", nil, agentPodAt(func(p *corev1.Pod) {
			p.DeletionTimestamp = &now
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
				Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"})
		}), who + " was deleted (EvictionByEvictionAPI: Eviction API: evicting)"},
		{"another pod under its name", agentPodAt(func(p *corev1.Pod) { p.UID = "uid-2" }), nil, who + " was deleted"},
		{"being deleted", agentPodAt(func(p *corev1.Pod) { p.DeletionTimestamp = &now }), nil, who + " is being deleted"},
		{"evicted by the kubelet", agentPodAt(func(p *corev1.Pod) {
			p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Evicted"
			p.Status.Message = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 92Mi. Container agent was using 900Mi, request is 64Mi, has larger consumption of memory. "
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: terminated("ContainerStatusUnknown", 137, "")}
		}), nil, who + " was evicted by the kubelet: The node was low on resource: memory. Threshold quantity: 100Mi, available: 92Mi. Container agent was using 900Mi, request is 64Mi, has larger consumption of memory.; container agent terminated: ContainerStatusUnknown, exit code 137 (SIGKILL)"},
		{"OOM-killed, restarted in place", agentPodAt(func(p *corev1.Pod) {
			c := &p.Status.ContainerStatuses[0]
			c.RestartCount, c.LastTerminationState = 1, corev1.ContainerState{Terminated: terminated("OOMKilled", 137, "")}
		}), nil, who + ": container agent terminated: OOMKilled, exit code 137 (SIGKILL); restarted in place, restart count 1"},
		{"killed, not yet restarted", agentPodAt(func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: terminated("Error", 143, "")}
		}), nil, who + ": container agent terminated: Error, exit code 143 (SIGTERM)"},
		{"exited with its log", agentPodAt(func(p *corev1.Pod) {
			c := &p.Status.ContainerStatuses[0]
			c.RestartCount = 2
			c.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
			c.LastTerminationState = corev1.ContainerState{Terminated: terminated("Error", 1, "agent: listen tcp :5201:\naddress already in use\n")}
		}), nil, who + ": container agent terminated: Error, exit code 1: agent: listen tcp :5201: address already in use; restarted in place, restart count 2"},
		{"failed for another reason", agentPodAt(func(p *corev1.Pod) {
			p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "NodeShutdown", "Pod was terminated in response to imminent node shutdown."
		}), nil, who + " is Failed: NodeShutdown: Pod was terminated in response to imminent node shutdown."},
	}
	for _, c := range cases {
		got := deathCause(was, c.now, c.seen)
		if got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
		if strings.Contains(got, "\n") {
			t.Errorf("%s: not one line", c.name)
		}
	}
	// A pod that was ready after restarts is judged from there.
	restarted := agentPodAt(func(p *corev1.Pod) {
		p.Status.ContainerStatuses[0].RestartCount = 3
		p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: terminated("Error", 1, "")}
	})
	if got := deathCause(restarted, restarted, nil); got != "" {
		t.Errorf("restarts before it was ready: %q, want alive", got)
	}
}
