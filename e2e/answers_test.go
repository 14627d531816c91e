package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	res "github.com/cnibench/cnibench/results"
)

// The quickstart's profile compares the iptables and eBPF Service
// datapaths in two labs, rounds interleaved, and answers its questions:
// the terminal ends with one line per question and the correction they
// were held to, and report.md starts with their table, for the Service
// placement and for pod-to-pod (what the datapath costs traffic without a
// Service). Short samples keep it quick; the verdict lines are there
// whatever they say.
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
	var answers, notes []string
	for _, line := range strings.Split(strings.TrimSpace(stdout[i+len("\nAnswers:\n"):]), "\n") {
		if a, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok {
			answers = append(answers, a)
		} else {
			notes = append(notes, line)
		}
	}
	// The profile's six questions, each in its orientation (ebpf vs
	// iptables), effect and interval first.
	for _, want := range []string{
		"pod-to-service connection rate (TCP_CRR rate, pod-to-service/other-node), ebpf vs iptables: ",
		"pod-to-service short-connection HTTP (HTTP_RPS_SHORT_C64 request rate, pod-to-service/other-node), ebpf vs iptables: ",
		"pod-to-service request-response rate (TCP_RR rate, pod-to-service/other-node), ebpf vs iptables: ",
		"pod-to-pod connection rate (TCP_CRR rate, pod-to-pod/other-node), ebpf vs iptables: ",
	} {
		found := false
		for _, a := range answers {
			found = found || strings.HasPrefix(a, want)
		}
		if !found {
			t.Errorf("no answer line %q in:\n%s", want, strings.Join(answers, "\n"))
		}
	}
	if len(answers) != 6 {
		t.Errorf("%d answers, want the profile's 6 questions:\n%s", len(answers), strings.Join(answers, "\n"))
	}
	for _, a := range answers {
		if !strings.Contains(a, "% CI ") && !strings.Contains(a, "not enough rounds") {
			t.Errorf("an answer without its effect and interval: %s", a)
		}
	}
	tested := 0
	for _, a := range answers {
		if strings.Contains(a, "% CI ") {
			tested++
		}
	}
	// Every question with a verdict is in the questions' family (one whose
	// samples failed below 5 rounds has none).
	if n := strings.Join(notes, "\n"); tested > 0 && !regexp.MustCompile(`\b`+strconv.Itoa(tested)+` questions, held among themselves`).MatchString(n) {
		t.Errorf("the terminal does not say how the questions were corrected:\n%s", n)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(md), "# cnibench datapaths: what the eBPF Service datapath changes against kube-proxy-style iptables\n\n## Answers\n\n| Question |") ||
		!strings.Contains(string(md), "| pod-to-service short-connection HTTP · ebpf vs iptables |") {
		t.Errorf("report.md does not start with the answers table:\n%.1500s", md)
	}
	for _, sl := range append(labs, l) {
		if left := sl.leftovers(); len(left) > 0 {
			t.Errorf("lab %s left: %v", sl.name, left)
		}
	}
}

// --rounds auto:6 on the quickstart's profile: the rounds stop at the
// first round from the fifth at which every question is conclusive, or at
// 6; results.json records the level and when each question was clear, and
// every answer says after how many rounds it was (or that it was not).
func TestDatapathsProfileAutoRounds(t *testing.T) {
	l := newLab(t)
	labs := scenarioLabs(t, l, "ipt", "ebpf")
	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := l.run("run", "--profile", "datapaths", "--rounds", "auto:6", "--duration", "300ms", "--warmup", "0s", "--out", out)
	if code != 0 {
		if strings.Contains(stderr, "unsupported") {
			t.Skipf("a datapath is unsupported here: %s", stderr)
		}
		t.Fatalf("run exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	run, err := res.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	auto := run.Plan.Auto
	if auto == nil || auto.Max != 6 || auto.Level < 0.95 || auto.Stopped == "" || run.Plan.Rounds < 5 || run.Plan.Rounds > 6 {
		t.Fatalf("plan %+v, auto %+v", run.Plan, auto)
	}
	for _, r := range run.Results {
		if len(r.Samples) != run.Plan.Rounds && r.Skipped == "" {
			t.Errorf("%s %s %s: %d samples for %d rounds", r.Scenario, r.Test, r.Placement.Name(), len(r.Samples), run.Plan.Rounds)
		}
	}
	i := strings.LastIndex(stdout, "\nAnswers:\n")
	if i < 0 {
		t.Fatalf("no answers:\n%s", stdout)
	}
	n := 0
	for _, line := range strings.Split(stdout[i:], "\n") {
		if a, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok {
			n++
			if !strings.Contains(a, "; conclusive after ") && !strings.HasSuffix(a, "; not conclusive within 6 rounds") {
				t.Errorf("an answer without the rounds it needed: %s", a)
			}
		}
	}
	if n != 6 {
		t.Errorf("%d answers, want 6:\n%s", n, stdout[i:])
	}
	for _, sl := range append(labs, l) {
		if left := sl.leftovers(); len(left) > 0 {
			t.Errorf("lab %s left: %v", sl.name, left)
		}
	}
}
