package k8starget

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// deathWatch lists the run's pods every pollInterval while the run
// measures and closes an agent's channel when its pod dies (deathCause):
// the runner then ends a sample whose client is gone at once instead of
// at its deadline, and waits for the death of a server that broke one. It
// lists (which the run may do already) rather than watches, so `k8s rbac`
// grants nothing more, at one small request a second.
type deathWatch struct {
	cs       kubernetes.Interface
	ns, sel  string
	interval time.Duration

	mu     sync.Mutex
	agents map[string]*watched // endpoint → its pod

	stop, done chan struct{}
}

// watched is one agent pod: as it was when ready, as last listed.
type watched struct {
	was, seen *corev1.Pod
	dead      chan struct{}
	closed    bool
}

// startDeathWatch watches the agents in pods (endpoint → pod) until Stop.
func startDeathWatch(cs kubernetes.Interface, ns, runID string, pods map[string]*corev1.Pod) *deathWatch {
	w := &deathWatch{cs: cs, ns: ns, sel: RunSelector(runID), interval: pollInterval,
		agents: map[string]*watched{}, stop: make(chan struct{}), done: make(chan struct{})}
	for ep, p := range pods {
		w.watch(ep, p)
	}
	go w.loop()
	return w
}

// watch (re)starts watching endpoint's agent in pod p (a replacement).
func (w *deathWatch) watch(endpoint string, p *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.agents[endpoint] = &watched{was: p, seen: p, dead: make(chan struct{})}
}

// deadChan is closed when endpoint's agent dies (nil: not watched).
func (w *deathWatch) deadChan(endpoint string) <-chan struct{} {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if a, ok := w.agents[endpoint]; ok {
		return a.dead
	}
	return nil
}

// lastSeen is the endpoint's pod as last listed (nil: not watched).
func (w *deathWatch) lastSeen(endpoint string) *corev1.Pod {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if a, ok := w.agents[endpoint]; ok {
		return a.seen
	}
	return nil
}

func (w *deathWatch) loop() {
	defer close(w.done)
	for {
		select {
		case <-w.stop:
			return
		case <-time.After(w.interval):
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		list, err := w.cs.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{LabelSelector: w.sel})
		cancel()
		if err == nil { // an API hiccup: the next round sees it, ReplaceDead reads anyway
			w.check(list.Items)
		}
	}
}

// check updates every agent from a listing and closes the channel of
// each that died.
func (w *deathWatch) check(pods []corev1.Pod) {
	byName := map[string]*corev1.Pod{}
	for i := range pods {
		byName[pods[i].Name] = &pods[i]
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range w.agents {
		now := byName[a.was.Name]
		if now != nil && now.UID == a.was.UID {
			a.seen = now
		}
		if !a.closed && deathCause(a.was, now, a.seen) != "" {
			a.closed = true
			close(a.dead)
		}
	}
}

// Stop ends the watch (before Close deletes the pods it watches).
func (w *deathWatch) Stop() {
	if w == nil {
		return
	}
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}
