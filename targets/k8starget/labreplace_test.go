package k8starget

import (
	"context"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/suite"
)

// killAt is a progress writer that, once the runner starts the sample
// labelled mark, calls kill after a delay: an agent killed mid-sample.
type killAt struct {
	t     *testing.T
	mark  string
	delay time.Duration
	kill  func()
	once  sync.Once
}

func (k *killAt) Write(p []byte) (int, error) {
	if strings.Contains(string(p), k.mark) {
		k.once.Do(func() { time.AfterFunc(k.delay, k.kill) })
	}
	return testWriter{k.t}.Write(p)
}

// A real agent killed mid-sample (its process SIGKILLed, as the kernel's
// OOM killer or `kill -9` in the container does, and the kubelet's report
// of it): real TCP_RR between lab namespaces through real agents, the
// sample in progress fails naming the pod and the kill, a new pod's real
// agent measures the next rounds, nothing is left.
func TestLabBackedServerKilledMidSample(t *testing.T) {
	l := newLab(t, 2, 1)
	cs := newFakeCluster(labNode("lab-node0"), labNode("lab-node1"))
	dir, err := os.MkdirTemp("", "cnbk8s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	kl := &labKubelet{t: t, lab: l, cs: cs, dir: dir}
	t.Cleanup(kl.stop)
	startKubelet(t, cs, testNS, kl.behave)

	cfg := Config{Namespace: testNS, Image: "ghcr.io/cnibench/cnibench:test", RunID: "labkill-" + l.Config.Name,
		Placements: []string{suite.PodToPodOtherNode}, Timeout: 20 * time.Second, Progress: testWriter{t}}
	tgt, err := Open(context.Background(), cfg, cs, unixAccess{dir}, "fake-clientset-over-lab-"+l.Config.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	plan, err := suite.Options{Tests: []string{"TCP_RR"}, Placements: cfg.Placements, Rounds: 4, Duration: time.Second}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	plan.Warmup = 0
	kill := func() {
		if err := kl.signal("cnibench-node1-pod0", syscall.SIGKILL); err != nil {
			t.Error(err)
		}
		setStatus(t, cs, "cnibench-node1-pod0", func(st *corev1.PodStatus) {
			c := &st.ContainerStatuses[0]
			c.Ready, c.State = false, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 137}}
		})
	}
	progress := &killAt{t: t, mark: "[2/4]", delay: 300 * time.Millisecond, kill: kill}
	runner := &suite.Runner{Scenarios: []suite.Scenario{{Name: "k8s", Target: tgt}}, Plan: plan, OutDir: t.TempDir(), RunID: cfg.RunID, Progress: progress}
	run, err := runner.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ss := run.Results[0].Samples
	want := "agent pod cnibench-node1-pod0 (node1-pod0 on lab-node1): container agent terminated: Error, exit code 137 (SIGKILL); pod cnibench-node1-pod0-r1 replaces it"
	if len(ss) != 4 || ss[1].Error != want {
		t.Fatalf("samples %+v\nwant round 2 failed with %q", ss, want)
	}
	for _, i := range []int{0, 2, 3} {
		if ss[i].Error != "" || ss[i].Result == nil || ss[i].Result.(*engine.Result).Transactions < 100 || ss[i].Result.(*engine.Result).Errors != 0 {
			t.Errorf("round %d: %+v", i+1, ss[i])
		}
	}
	if err := tgt.Close(); err != nil {
		t.Fatal(err)
	}
	assertClean(t, cs)
}

// signal sends sig to the real agent of a pod.
func (k *labKubelet) signal(pod string, sig syscall.Signal) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	c, ok := k.byPod[pod]
	if !ok {
		return os.ErrNotExist
	}
	return c.Process.Signal(sig)
}
