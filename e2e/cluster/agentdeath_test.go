package cluster

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine"
)

// inProgress is the sample the run's progress shows started and not yet
// finished: "[3/8] round 2 TCP_RR  pod-to-pod/other-node " without its
// result line.
var inProgress = regexp.MustCompile(`\[(\d+)/(\d+)\] round (\d+) TCP_RR\s+(\S+)\s*$`)

// An agent pod deleted mid-run (kubectl delete --grace-period=0 --force),
// the server and then the client: exactly the sample in progress fails,
// with a cause naming the pod; a new pod on the same node takes the next
// samples, which all succeed (pod-to-pod at the new pod's IP, the Service
// forwarding to it); the run ends with exit status 5 (some samples
// failed), the results name the replacement, and nothing is left.
func TestAgentPodKilledMidRun(t *testing.T) {
	e := getEnv(t)
	for _, c := range []struct{ pod, endpoint string }{
		{"cnibench-node1-pod0", "node1-pod0"}, // the server of both placements
		{"cnibench-node0-pod0", "node0-pod0"}, // the client
	} {
		t.Run(c.endpoint, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			cmd := exec.Command(e.bin, "run", "--target", "k8s", "--kubeconfig", e.kubeconfig, "--image", e.image,
				"--tests", "TCP_RR", "--placements", "pod-to-pod/other-node,pod-to-service/other-node",
				"--rounds", "4", "--duration", "10s", "--warmup", "0s", "--out", out)
			log := &syncBuffer{}
			cmd.Stdout, cmd.Stderr = log, log
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

			// Into round 2's first sample (the third of eight), a second in.
			deadline := time.Now().Add(4 * time.Minute)
			var at []string
			for at == nil || at[1] != "3" {
				if time.Now().After(deadline) {
					t.Fatalf("sample 3 of 8 not started after 4 min; cnibench said:\n%s", tail(log.String(), 40))
				}
				time.Sleep(100 * time.Millisecond)
				at = inProgress.FindStringSubmatch(log.String())
			}
			time.Sleep(time.Second)
			if at = inProgress.FindStringSubmatch(log.String()); at == nil || at[1] != "3" {
				t.Fatalf("sample 3 ended within a second of its start:\n%s", tail(log.String(), 20))
			}
			round, placement := at[3], at[4]
			// Without waiting for the deletion to finish (kubectl's default),
			// which took 6 s here: the kubelet kills the container within
			// the 10 s sample, whose failure is the one expected.
			mustOK(t, e.k(t, "delete", "pod", c.pod, "-n", "cnibench", "--grace-period=0", "--force", "--wait=false"), "kubectl delete pod")

			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(5 * time.Minute):
				t.Fatalf("run not done 5 min after the kill:\n%s", tail(log.String(), 40))
			}
			if code := cmd.ProcessState.ExitCode(); code != 5 {
				t.Errorf("exit status %d, want 5 (some samples failed):\n%s", code, tail(log.String(), 30))
			}
			res := readResults(t, out)
			failed := 0
			for _, r := range res.Results {
				for _, s := range r.Samples {
					switch {
					case s.Error == "":
						if e, ok := s.Result.(*engine.Result); !ok || e == nil || e.RatePerSec <= 0 || e.Errors > 0 {
							t.Errorf("round %d %s: a sample without a rate, or with errors: %+v", s.Round, r.Placement.Name(), s.Result)
						}
					case strconv.Itoa(s.Round) == round && r.Placement.Name() == placement:
						failed++
						if !strings.HasPrefix(s.Error, "agent pod "+c.pod+" ("+c.endpoint+" on ") || !strings.Contains(s.Error, "was deleted") ||
							!strings.Contains(s.Error, "pod "+c.pod+"-r1 replaces it") {
							t.Errorf("the killed sample's cause: %q, want it to name %s, deleted, and its replacement", s.Error, c.pod)
						}
					default:
						t.Errorf("round %d %s failed too: %s", s.Round, r.Placement.Name(), s.Error)
					}
				}
			}
			if failed != 1 {
				t.Errorf("%d failed samples in round %s %s, want exactly the one killed", failed, round, placement)
			}
			var details struct {
				Endpoints    map[string]struct{ Pod, Node string }
				Replacements []struct {
					Endpoint, Node, Cause, Error string
					OldPod                       string `json:"old_pod"`
					NewPod                       string `json:"new_pod"`
				} `json:"agent_replacements"`
			}
			raw, _ := json.Marshal(res.Target.Details)
			if err := json.Unmarshal(raw, &details); err != nil {
				t.Fatal(err)
			}
			ep := details.Endpoints[c.endpoint]
			if r := details.Replacements; len(r) != 1 || r[0].OldPod != c.pod || r[0].NewPod != c.pod+"-r1" || r[0].Node != ep.Node ||
				r[0].Error != "" || ep.Pod != c.pod+"-r1" {
				t.Errorf("replacements %+v, endpoint %s %+v: want %s replaced by %s-r1 on the same node", r, c.endpoint, ep, c.pod, c.pod)
			}
			e.waitGone(t, "cnibench", false)
		})
	}
}
