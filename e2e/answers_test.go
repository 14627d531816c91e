package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The quickstart's profile compares the iptables and eBPF Service
// datapaths in two labs, rounds interleaved, and answers: the terminal
// ends with one line per question and report.md starts with them, for the
// Service placement and for pod-to-pod (what the datapath costs traffic
// without a Service). Short samples keep it quick; the verdict lines are
// there whatever they say.
func TestDatapathsProfileAnswers(t *testing.T) {
	l := newLab(t)
	labs := scenarioLabs(t, l, "ipt", "ebpf")
	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := l.run("run", "--profile", "datapaths", "--duration", "300ms", "--warmup", "0s", "--out", out)
	if code != 0 {
		if strings.Contains(stderr, "unsupported") {
			t.Skipf("a datapath is unsupported here: %s", stderr)
		}
		t.Fatalf("run exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	i := strings.LastIndex(stdout, "\nAnswers:\n")
	if i < 0 {
		t.Fatalf("the terminal output does not end with answers:\n%s", stdout)
	}
	answers := strings.Split(strings.TrimSpace(stdout[i+len("\nAnswers:\n"):]), "\n")
	for _, want := range []string{"pod-to-service/other-node TCP_RR, rate: ", "pod-to-service/other-node TCP_CRR, rate: ",
		"pod-to-service/other-node HTTP_RPS_SHORT_C64, request rate: ", "pod-to-pod/other-node TCP_CRR, rate: "} {
		found := false
		for _, a := range answers {
			found = found || strings.HasPrefix(strings.TrimSpace(a), "- "+want)
		}
		if !found {
			t.Errorf("no answer line %q in:\n%s", want, strings.Join(answers, "\n"))
		}
	}
	for _, a := range answers {
		if !strings.Contains(a, "iptables") || !strings.Contains(a, "ebpf") {
			if !strings.Contains(a, "not enough rounds") {
				t.Errorf("an answer that does not name both scenarios as given: %s", a)
			}
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "\n## Answers\n\n- pod-to-service/other-node") || strings.Index(string(md), "## Answers") > strings.Index(string(md), "## Environment") {
		t.Errorf("report.md does not start with the answers:\n%.1500s", md)
	}
	for _, sl := range append(labs, l) {
		if left := sl.leftovers(); len(left) > 0 {
			t.Errorf("lab %s left: %v", sl.name, left)
		}
	}
}
