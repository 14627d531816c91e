package suite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/results"
)

// fakeToggle is a part that switches at once; refuse fails its Check.
type fakeToggle struct {
	part     string
	restarts bool
	refuse   error
	mu       sync.Mutex
	on       bool
	sets     []bool
}

func (f *fakeToggle) Part() string   { return f.part }
func (f *fakeToggle) How() string    { return "flips " + f.part }
func (f *fakeToggle) Restarts() bool { return f.restarts }
func (f *fakeToggle) Check(context.Context) (bool, string, error) {
	if f.refuse != nil {
		return false, "", f.refuse
	}
	return f.isOn(), f.part + " can be switched", nil
}
func (f *fakeToggle) Set(_ context.Context, on bool) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.on = on
	f.sets = append(f.sets, on)
	return fmt.Sprintf("%s proved %v", f.part, on), nil
}
func (f *fakeToggle) isOn() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.on }

// stateTarget records, at every sample, which scenario was measured with
// which parts on.
type stateTarget struct {
	loopTarget
	toggles []*fakeToggle
	seen    *[]string
}

func (t stateTarget) Agent(ep string) (*agent.Client, error) {
	var on []string
	for _, tg := range t.toggles {
		if tg.isOn() {
			on = append(on, tg.part)
		}
	}
	*t.seen = append(*t.seen, t.name+"["+strings.Join(on, ",")+"]")
	return t.loopTarget.Agent(ep)
}

// Each round measures every twin once with only its own part on and the
// base with none, the segments' order reversed every round (round 1
// starts with the restarting part, already on), so the restarting part
// is switched once a round and the cheap one around its segment; a
// refused twin is not measured and its question, like those the caller
// knows cannot apply, says why instead of being dropped silently.
func TestTwinsSchedule(t *testing.T) {
	c := startAgent(t)
	policy := &fakeToggle{part: "policy"}
	flows := &fakeToggle{part: "flows", restarts: true, on: true}
	l7 := &fakeToggle{part: "l7-node", refuse: errors.New("no L7 proxy:\nenable-l7-proxy=false")}
	var calls, seen []string
	tgt := func(name string) Target {
		return stateTarget{loopTarget{c, &calls, name}, []*fakeToggle{policy, flows, l7}, &seen}
	}
	plan, err := Options{Profile: "security", Tests: []string{"TCP_RR"}, Rounds: 4, Duration: 100 * time.Millisecond}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	plan.Warmup = 0
	plan.Questions = TwinQuestions("c")
	sched := &Twins{Base: "c", Twins: []Twin{{"c+flows", flows}, {"c+policy", policy}, {"c+l7-node", l7}},
		NotMeasured: []results.NotMeasured{{Part: "l7-egress", Reason: "no egress proxy"}, {Part: "l7-sidecar", Reason: "no sidecars"}}}
	r := &Runner{Scenarios: []Scenario{{Name: "c", Target: tgt("c")}, {Name: "c+policy", Target: tgt("c+policy")}, {Name: "c+l7-node", Target: tgt("c+l7-node")}, {Name: "c+flows", Target: tgt("c+flows")}},
		Plan: plan, OutDir: t.TempDir(), RunID: "twins", Schedule: sched}
	run, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"c+flows[flows] c+policy[policy] c[]",
		"c[] c+policy[policy] c+flows[flows]",
		"c+flows[flows] c+policy[policy] c[]",
		"c[] c+policy[policy] c+flows[flows]",
	}, " ")
	if got := strings.Join(seen, " "); got != want {
		t.Errorf("samples with parts on:\n%s\nwant\n%s", got, want)
	}
	if fmt.Sprint(flows.sets) != "[false true false true]" {
		t.Errorf("flows switched %v: want once a round", flows.sets)
	}
	if len(policy.sets) != 8 || policy.isOn() {
		t.Errorf("policy switched %v, on at the end %v: want on and off around each segment, off at the end", policy.sets, policy.isOn())
	}
	if len(run.Scenarios) != 3 || len(run.Results) != 3 {
		t.Fatalf("%d scenarios, %d results: the refused twin is measured", len(run.Scenarios), len(run.Results))
	}
	tw := run.Twins
	if tw == nil || len(tw.Parts) != 2 || len(tw.NotMeasured) != 3 || !strings.Contains(tw.Design, "c+flows c+policy c | c c+policy c+flows") {
		t.Fatalf("twins record: %+v", tw)
	}
	if p := tw.Parts[0]; p.Part != "flows" || !p.Original || !p.Restarts || len(p.Switches) != 5 || p.Switches[0].Round != 0 || p.Switches[4].Proof != "flows proved true" {
		t.Errorf("flows record: %+v", p)
	}
	if nm := tw.NotMeasured[2]; nm.Part != "l7-node" || nm.Reason != "no L7 proxy: enable-l7-proxy=false" {
		t.Errorf("refusal: %+v", nm)
	}
	reasons := map[string]string{}
	for _, q := range run.Plan.Questions {
		reasons[strings.TrimPrefix(q.B, "c+")] = q.NotMeasured
	}
	if reasons["policy"] != "" || reasons["flows"] != "" || reasons["l7-node"] != "no L7 proxy: enable-l7-proxy=false" || reasons["l7-sidecar"] != "no sidecars" || len(reasons) != 5 {
		t.Errorf("questions not measured: %v", reasons)
	}
	for _, q := range TwinQuestions("c") {
		if q.NotMeasured != "" {
			t.Error("the profile's questions were changed in place")
		}
	}

	// No twin left: refused in one line naming every part's reason.
	flows.refuse, policy.refuse = errors.New("no Cilium"), errors.New("this CNI does not enforce NetworkPolicy")
	r = &Runner{Scenarios: []Scenario{{Name: "c", Target: tgt("c")}, {Name: "c+policy", Target: tgt("c+policy")}, {Name: "c+flows", Target: tgt("c+flows")}},
		Plan: plan, OutDir: t.TempDir(), RunID: "twins2", Schedule: &Twins{Base: "c", Twins: []Twin{{"c+flows", flows}, {"c+policy", policy}}}}
	if _, err := r.Run(context.Background()); err == nil || err.Error() != "no twin of c can be measured: flows: no Cilium; policy: this CNI does not enforce NetworkPolicy" {
		t.Errorf("no twin: %v", err)
	}
}
