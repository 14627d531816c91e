package k8starget

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Release stops the forwards of one pod only: a deleted or replaced pod's
// would otherwise retry every second until Close.
func TestPortForwardRelease(t *testing.T) {
	a := &PortForward{}
	mk := func(pod string) *forward {
		f := &forward{stop: make(chan struct{}), done: make(chan struct{}), pod: pod}
		go func() { <-f.stop; close(f.done) }() // as supervise does
		return f
	}
	gone1, kept, gone2 := mk("ns/a"), mk("ns/b"), mk("ns/a")
	a.forwards = []*forward{gone1, kept, gone2}
	a.Release(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	for _, f := range []*forward{gone1, gone2} {
		select {
		case <-f.done:
		default:
			t.Error("a forward of the released pod still runs")
		}
	}
	select {
	case <-kept.stop:
		t.Error("another pod's forward was stopped")
	default:
	}
	if len(a.forwards) != 1 || a.forwards[0] != kept {
		t.Errorf("%d forwards kept, want the other pod's", len(a.forwards))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	<-kept.done
}
