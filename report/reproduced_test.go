package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/datapath/sweep"
	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/published"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"

	"golang.org/x/net/html"
)

// base is a test's synthetic level: a rate (Gbit/s for streams) and a
// latency in µs.
var base = map[string]struct{ rate, latUs float64 }{
	"TCP_STREAM": {9, 0}, "TCP_STREAM_MULTI": {18, 0}, "UDP_STREAM": {1.5, 0}, "UDP_STREAM_MULTI": {3, 0},
	"TCP_RR": {30000, 30}, "UDP_RR": {32000, 28}, "TCP_CRR": {9000, 110},
	"HTTP_RPS_C64": {100000, 600}, "HTTP_RPS_SHORT_C64": {20000, 3000}, "HTTP_QPS_1000": {1000, 90},
	"FORTIO_RPS_C64": {4100, 15000}, "FORTIO_RPS_SHORT_C64": {2000, 30000}, "FORTIO_QPS_1000": {1000, 9000}, "FORTIO_QPS_5000": {4100, 30000}, "DNS_QPS_1000": {1000, 120},
}

// lossKey in a scenario's factors divides UDP_STREAM's loss (0.1% else):
// the loss moves on its own, not with the goodput.
const lossKey = "UDP_STREAM loss"

// factors scale a scenario's rates against the first scenario (latency
// by the inverse), per test; a test not listed is 1.
type factors map[string]map[string]float64

// atServices is the key of a scenario's factors for its rows at scale:
// its rates at n dummy Services against its own at none (1 if absent).
func atServices(n int) string { return fmt.Sprintf("@%d Services", n) }

// recordedRun is a results file of a profile as its run writes it: the
// plan resolved by the suite (so it carries the profile's reproduction),
// five rounds of every test on every placement in every scenario, each
// round a little off the level by a scenario's own jitter; saved and
// loaded back as `cnibench report` reads it.
func recordedRun(t *testing.T, profile string, f factors) *results.Run {
	t.Helper()
	plan, err := suite.Options{Profile: profile}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	prof, _ := suite.LookupProfile(profile)
	scenarios := prof.Scenarios
	if len(scenarios) == 0 {
		scenarios = []string{"default"}
	}
	run := &results.Run{SchemaVersion: results.SchemaVersion, RunID: "20261202-140000-" + profile, Status: results.StatusComplete,
		Start: t0, End: t0.Add(time.Hour), Tool: results.Tool{Name: "cnibench", Version: "test"}, Plan: plan.Plan,
		Target: results.Target{Kind: "lab", Details: map[string]any{"lab": scenarios[0]}}}
	for si, sc := range scenarios {
		run.Scenarios = append(run.Scenarios, results.Scenario{Name: sc, Target: results.Target{Kind: "lab", Details: map[string]any{"lab": sc}}})
		jitter := []float64{0, 0.01, -0.01, 0.005, -0.005}
		if si%2 == 1 {
			jitter = []float64{0.004, -0.006, 0.008, -0.002, 0}
		}
		for _, test := range plan.Tests {
			if !plan.Measures(sc, test) {
				continue // as the run: an added-part scenario runs its row's test only
			}
			for _, pl := range plan.Placements {
				k := f[sc][test]
				if kp := f[sc][test+" "+pl]; kp != 0 {
					k = kp // this placement's own
				}
				if k == 0 {
					k = 1
				}
				b := base[test]
				var rates, lats []float64
				for _, j := range jitter {
					rates, lats = append(rates, b.rate*k*(1+j)), append(lats, b.latUs/k*(1-j))
				}
				r := recordedResult(t, sc, test, pl, rates, lats)
				if lk := f[sc][lossKey]; lk != 0 && test == "UDP_STREAM" {
					var loss []float64
					for _, j := range jitter {
						loss = append(loss, 0.1/lk*(1-j))
					}
					r.Samples = streamSamples(rates, loss)
				}
				run.Results = append(run.Results, r)
			}
		}
	}
	if prof.Scale != nil {
		recordedSweeps(t, run, prof.Scale, f)
	}
	dir := t.TempDir()
	if err := results.Save(dir, run); err != nil {
		t.Fatal(err)
	}
	back, err := results.Load(filepath.Join(dir, results.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// recordedSweeps adds the sweep a profile's rows at scale run after the
// rounds: every step recorded (eBPF scenarios with their maps' memory),
// the rows' tests measured at every step past 0 on each of its scenarios.
func recordedSweeps(t *testing.T, run *results.Run, rows *suite.ScaleRows, f factors) {
	steps := rows.StepsFromZero()
	for si, sc := range rows.Scenarios {
		sw := results.Sweep{Scenario: sc, Datapath: sc, Placement: suite.PodToServiceOtherNode, AfterRounds: true,
			Options: sweep.Options{Steps: steps, Endpoints: rows.Endpoints, Position: "last"}}
		for _, n := range steps {
			st := results.SweepStep{Step: sweep.Step{Services: n, Position: n}, Conntrack: -1}
			if strings.Contains(sc, "ebpf") {
				st.Memory.BPFMapBytes = int64(40e6 + 1000*n)
			} else {
				st.Memory.RulesetBytes = int64(500 * n)
			}
			sw.Steps = append(sw.Steps, st)
			if n == 0 {
				continue // the rounds measured it
			}
			jitter := []float64{0, 0.01, -0.01, 0.005, -0.005}
			if si%2 == 1 {
				jitter = []float64{0.004, -0.006, 0.008, -0.002, 0}
			}
			for _, test := range rows.Tests {
				k := f[sc][test]
				if k == 0 {
					k = 1
				}
				if at := f[sc][atServices(n)]; at != 0 {
					k *= at
				}
				var rates, lats []float64
				for _, j := range jitter {
					rates, lats = append(rates, base[test].rate*k*(1+j)), append(lats, base[test].latUs/k*(1-j))
				}
				r := recordedResult(t, sc, test, suite.PodToServiceOtherNode, rates, lats)
				r.Services = n
				run.Results = append(run.Results, r)
			}
		}
		run.Sweeps = append(run.Sweeps, sw)
	}
}

// recordedResult is one test on one placement, five rounds.
func recordedResult(t *testing.T, sc, test, placement string, rates, lats []float64) results.Result {
	path, node, _ := strings.Cut(placement, "/")
	p := results.Placement{Path: path, Node: node, Client: "node0-pod0", Server: "node1-pod0", ServerAddr: "198.19.1.10"}
	r := results.Result{Scenario: sc, Test: test, Placement: p,
		Options: &engine.Options{Host: p.ServerAddr, RunnerOptions: kinds.RunnerOptions{Duration: engine.Duration(2 * time.Second)}, Streams: 1}}
	switch {
	case strings.HasPrefix(test, "FORTIO"), strings.HasPrefix(test, "DNS"):
		r.Options, r.Samples = loadSamples(t, test, p.ServerAddr, rates, lats)
	case strings.HasPrefix(test, "HTTP"):
		qps := 0.0
		if test == "HTTP_QPS_1000" {
			qps = 1000
		}
		r.Options = &httpload.Options{Host: p.ServerAddr, Connections: 64, KeepAlive: test != "HTTP_RPS_SHORT_C64", RunnerOptions: kinds.RunnerOptions{Duration: engine.Duration(2 * time.Second)}}
		r.Samples = httpSamples(t, rates, lats, qps, 0, 0)
	case strings.HasPrefix(test, "UDP_STREAM"):
		r.Samples = streamSamples(rates, []float64{0.1, 0.1, 0.1, 0.1, 0.1})
	case strings.Contains(test, "STREAM"):
		r.Samples = streamSamples(rates, nil)
	default:
		r.Samples = rrSamples(t, map[string]engine.Test{"TCP_RR": engine.TCPRR, "UDP_RR": engine.UDPRR, "TCP_CRR": engine.TCPCRR}[test], rates, lats, 0)
	}
	return r
}

// reproducedReport builds and renders a recorded run's report.
func reproducedReport(t *testing.T, run *results.Run) (*Reproduced, map[string]string) {
	t.Helper()
	rep, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := rep.reproduced()
	if m == nil {
		t.Fatal("no reproduced section")
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	return m, renderMDHTML(t, rep)
}

// checkOriginalLayout: the report opens with the original's table, its
// rows in the original's order, every published figure in its cell.
func checkOriginalLayout(t *testing.T, id string, m *Reproduced, out map[string]string) {
	t.Helper()
	pub, err := published.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	md := out["md"]
	at := strings.Index(md, "## Reproduced: "+pub.Title)
	if at < 0 || (strings.Contains(md, "## Answers") && strings.Index(md, "## Answers") < at) {
		t.Fatalf("%s: the report does not open with the original's table:\n%s", id, md)
	}
	if !strings.Contains(out["html"], `<h2 id="reproduced">Reproduced: `) {
		t.Errorf("%s: no reproduced section in report.html", id)
	}
	checkBalanced(t, out["html"])
	rowIndex := map[string]int{}
	for i, r := range pub.Rows {
		rowIndex[r] = i
	}
	last := -1
	present := map[string]bool{}
	for _, l := range m.Cells {
		i, ok := rowIndex[l.Row]
		if !ok {
			t.Errorf("%s: row %q is none of the original's", id, l.Row)
		}
		if i < last {
			t.Errorf("%s: row %q after a later row of the original", id, l.Row)
		}
		last, present[l.Row] = i, true
	}
	for _, r := range pub.Rows {
		if !present[r] {
			t.Errorf("%s: the original's row %q is not in the table", id, r)
		}
	}
	for _, c := range pub.Cells {
		line := ""
		for _, l := range strings.Split(md, "\n") {
			if strings.HasPrefix(l, "| "+mdText(c.Row)+" | "+mdText(c.Column)+" |") {
				line = l
			}
		}
		want := publishedText(&c)
		if line == "" || !strings.Contains(line, want) {
			t.Errorf("%s: %s / %s: published %q not in its line %q", id, c.Row, c.Column, want, line)
		}
	}
}

// shapeVerdicts are the section's shapes' answers by their question.
func shapeVerdicts(m *Reproduced) map[string]string {
	out := map[string]string{}
	for _, s := range m.Shapes {
		out[s.Ask] = s.Holds
	}
	return out
}

func TestReproducedConnectivityPerf(t *testing.T) {
	run := recordedRun(t, "connectivity-perf", nil)
	m, out := reproducedReport(t, run)
	checkOriginalLayout(t, "connectivity-perf", m, out)
	// TCP_CRR at 9,000/s against TCP_RR at 30,000/s: 0.3×, the example's
	// 0.325× direction, significant.
	if got := shapeVerdicts(m)["TCP_CRR ÷ TCP_RR transaction rate, pod-to-pod same-node"]; got != ShapeHolds {
		t.Errorf("CRR ÷ RR shape: %q, want %q\n%s", got, ShapeHolds, out["md"])
	}
	for _, l := range m.Cells {
		switch {
		case strings.HasPrefix(l.Row, "host-to-host same-node"):
			if !strings.Contains(l.NotMeasured, "no host-to-host/same-node placement") {
				t.Errorf("%s: %q, want why it has no equivalent", l.Row, l.NotMeasured)
			}
		case l.NotMeasured != "" || l.Ours == nil:
			t.Errorf("%s / %s: not measured (%s) though the run has it", l.Row, l.Column, l.NotMeasured)
		}
	}
	// The example's TCP_RR p50 of 46 µs against ours near 30 µs.
	for _, l := range m.Cells {
		if l.Row == "pod-to-pod same-node TCP_RR" && l.Column == "P50" {
			if r := float64(l.Ratio); math.IsNaN(r) || r < 0.3 || r > 1 {
				t.Errorf("TCP_RR P50 ours ÷ published = %v (%s)", r, l.RatioText)
			}
		}
	}
}

func TestReproducedCilium2021(t *testing.T) {
	run := recordedRun(t, "cilium-2021", factors{"native+wireguard": {"TCP_STREAM": 0.6, "TCP_STREAM_MULTI": 0.6}})
	m, out := reproducedReport(t, run)
	checkOriginalLayout(t, "cilium-2021", m, out)
	ask := m.Shapes[0].Ask
	if got := shapeVerdicts(m)[ask]; got != ShapeHolds {
		t.Errorf("%s: %q, want %q (18 against 9 Gbit/s)\n%s", ask, got, ShapeHolds, out["md"])
	}
	if !strings.Contains(out["md"], "no equivalent here: no multi-flow TCP_RR or TCP_CRR test yet") {
		t.Errorf("the 32-process rows do not say why they are not measured:\n%s", out["md"])
	}
}

func TestReproducedTKE(t *testing.T) {
	f := factors{
		"ebpf":       {"FORTIO_RPS_SHORT_C64": 0.5, "FORTIO_RPS_C64": 0.9},
		"vxlan+ebpf": {"FORTIO_RPS_SHORT_C64": 0.5, "FORTIO_RPS_C64": 0.9},
		// The parts, against their datapath's 0.9: policy and flows free
		// on native, L7 −86%; on overlay L7 −50% and flows −20%.
		"ebpf+policy": {"FORTIO_RPS_C64": 0.9}, "ebpf+l7-node": {"FORTIO_RPS_C64": 0.9 * 0.14}, "ebpf+flows": {"FORTIO_RPS_C64": 0.9},
		"vxlan+ebpf+policy": {"FORTIO_RPS_C64": 0.9}, "vxlan+ebpf+l7-node": {"FORTIO_RPS_C64": 0.45}, "vxlan+ebpf+flows": {"FORTIO_RPS_C64": 0.72},
	}
	// At scale iptables falls to 0.3 of itself at 30,000 Services, native
	// eBPF to 0.8 (0.4 of iptables at none: ahead of iptables there),
	// overlay to 0.95.
	for sc, at := range map[string][]float64{"iptables-legacy": {0.8, 0.6, 0.45, 0.3}, "ebpf": {0.95, 0.9, 0.85, 0.8}, "vxlan+ebpf": {1, 0.98, 0.97, 0.95}} {
		if f[sc] == nil {
			f[sc] = map[string]float64{}
		}
		for i, n := range []int{5000, 10000, 20000, 30000} {
			f[sc][atServices(n)] = at[i]
		}
	}
	// Pod-to-pod short connections at thrice the rate: the sweep's step 0
	// must be the rounds' pod-to-service result, not another placement's.
	f["iptables-legacy"]["FORTIO_RPS_SHORT_C64 "+suite.PodToPodOtherNode] = 3
	run := recordedRun(t, "tke", f)
	m, out := reproducedReport(t, run)
	checkOriginalLayout(t, "tke", m, out)
	want := map[string]string{
		"short-connection HTTP through a Service, Cilium native ÷ iptables":                 ShapeHolds,   // 0.5× here, 0.44× published
		"keep-alive HTTP through a Service, Cilium native ÷ iptables":                       ShapeHolds,   // 0.9× here, 0.87× published
		"pod-to-pod throughput, Cilium native ÷ iptables":                                   ShapeHolds,   // even both
		"short-connection HTTP through a Service, Cilium overlay ÷ native":                  ShapeHolds,   // even both (+2.7% published)
		"TCP_RR p50, Cilium overlay ÷ native":                                               ShapeDoesNot, // +12% published, even here
		"L3/L4 policy on keep-alive HTTP through a Service, Cilium native":                  ShapeHolds,   // −0.0% published, even here
		"L3/L4 policy on keep-alive HTTP through a Service, Cilium overlay":                 ShapeHolds,   // −2.2%: about even both
		"L7 policy (a per-node proxy) on keep-alive HTTP through a Service, Cilium native":  ShapeHolds,   // −86.1%, −86% here
		"L7 policy (a per-node proxy) on keep-alive HTTP through a Service, Cilium overlay": ShapeHolds,   // −88.7%, −50% here: same direction
		"flow log (Hubble) on keep-alive HTTP through a Service, Cilium native":             ShapeHolds,   // −0.3%, even here
		"flow log (Hubble) on keep-alive HTTP through a Service, Cilium overlay":            ShapeDoesNot, // −0.2% published, −20% here
		"short-connection HTTP at 30,000 Services, Cilium native ÷ iptables":                ShapeHolds,   // 1.14× published, 1.33× here
		"short-connection HTTP, 30,000 Services ÷ none, iptables":                           ShapeHolds,   // 0.29× published, 0.3× here
		"short-connection HTTP, 10,000 Services ÷ none, iptables":                           ShapeHolds,   // 0.55× published, 0.6× here
		"short-connection HTTP, 30,000 Services ÷ none, Cilium native":                      ShapeHolds,   // 0.74×, 0.8× here
		"short-connection HTTP, 30,000 Services ÷ none, Cilium overlay":                     ShapeHolds,   // 0.91×, 0.95× here
	}
	got := shapeVerdicts(m)
	for _, s := range m.Shapes {
		// B against A as asked: native's short connections half iptables'.
		if strings.HasPrefix(s.Ask, "short-connection HTTP through a Service, Cilium native") && (s.EffectPct > -45 || s.EffectPct < -55) {
			t.Errorf("%s: effect %v%%, want about -50%%", s.Ask, s.EffectPct)
		}
	}
	for ask, w := range want {
		if got[ask] != w {
			t.Errorf("%s: %q, want %q", ask, got[ask], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d shapes, want %d: %v", len(got), len(want), got)
	}
	if !strings.Contains(out["md"], "| HTTP RPS short connection, c64 | Cilium native |") || !strings.Contains(out["md"], "vs iptables-legacy: published -55.9%") {
		t.Errorf("the short-connection row does not show the published change against iptables:\n%s", out["md"])
	}
	// An overhead row: the part's column against its datapath's, beside
	// the published change; TKE has no iptables cell in it.
	for _, l := range m.Cells {
		switch {
		case l.Row == "L7 policy overhead" && l.Column == "Cilium native":
			if l.Against != "ebpf" || l.VsAgainst == nil || float64(l.PublishedPct) != -86.1 || math.Abs(float64(l.VsAgainst.DeltaPct)+86) > 0.5 {
				t.Errorf("L7 native: against %q, published %v%%, ours %+v", l.Against, l.PublishedPct, l.VsAgainst)
			}
		case l.Row == "Hubble overhead" && l.Column == "Cilium overlay":
			if l.Against != "vxlan+ebpf" || l.VsAgainst == nil {
				t.Errorf("Hubble overlay: against %q, ours %+v", l.Against, l.VsAgainst)
			}
		case strings.HasSuffix(l.Row, " overhead") && l.Column == "iptables":
			t.Errorf("%s: an iptables cell, where TKE has none (–)", l.Row)
		}
	}
	// The added-part scenarios ran FORTIO_RPS_C64 only: the other tests'
	// sections leave their columns out, the glance says "not planned".
	md := out["md"]
	rr := md[strings.Index(md, "## TCP_RR · pod-to-pod/other-node"):]
	rr = rr[:strings.Index(rr, "\n## ")]
	if strings.Contains(rr, "ebpf+policy") || !strings.Contains(rr, "| Metric | iptables-legacy | ebpf | vxlan+ebpf | ebpf vs iptables-legacy | vxlan+ebpf vs ebpf |") {
		t.Errorf("TCP_RR's section shows the added-part columns it never planned:\n%s", rr)
	}
	ka := md[strings.Index(md, "## FORTIO_RPS_C64 · pod-to-service/other-node"):]
	ka = ka[:strings.Index(ka, "\n## ")]
	if !strings.Contains(ka, "| ebpf+l7-node vs ebpf |") {
		t.Errorf("the keep-alive section lacks the parts' columns")
	}
	if !strings.Contains(md, "| TCP_RR | pod-to-pod/other-node | rate (trans/s) ↑ |") || !strings.Contains(md, "| "+notPlannedText+" |") || strings.Contains(md, "| missing |") {
		t.Errorf("the glance does not mark unplanned cells %q (or calls some missing)", notPlannedText)
	}
	if !strings.Contains(out["md"], "vs ebpf: published -86.1%; ours") {
		t.Errorf("the L7 row does not show the published change beside ours:\n%s", out["md"])
	}
	// The rows at scale: the step's section, the maps' memory of the
	// largest step (one reading: no interval), the sweep's own table.
	for _, l := range m.Cells {
		switch {
		case l.Row == "Service scale 30,000: short-connection RPS" && l.Column == "iptables":
			if l.Ours == nil || math.Abs(float64(l.Ours.Median)-600) > 10 || !strings.Contains(l.As, "FORTIO_RPS_SHORT_C64 · pod-to-service/other-node · iptables-legacy · request rate") {
				t.Errorf("iptables at 30,000: %+v (want 0.3 × 2,000 req/s)", l)
			}
		case l.Row == "BPF map memory per node (LB map 1.02M)" && l.Column == "Cilium overlay":
			if l.Ours == nil || float64(l.Ours.Median) != 70 || l.Unit != "MB" || l.Ours.N != 1 || l.RatioText != "0.242×" {
				t.Errorf("map memory, overlay: %+v ratio %q (want 70 MB, one reading, 70 ÷ 289.7)", l.Ours, l.RatioText)
			}
		}
	}
	if !strings.Contains(md, "## FORTIO_RPS_SHORT_C64 · pod-to-service/other-node @ 30,000 Services") || !strings.Contains(md, "## FORTIO_RPS_SHORT_C64 · pod-to-service/other-node\n") {
		t.Errorf("the sweep's steps are not sections of their own beside the rounds' plain one")
	}
	built, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ss := built.ServiceScale; ss == nil || len(ss.Datapaths) != 3 || len(ss.Datapaths[0].Metrics) != 1 || ss.Datapaths[0].Metrics[0].Test != "FORTIO_RPS_SHORT_C64" ||
		len(ss.Datapaths[0].Steps) != 5 || ss.Datapaths[0].Steps[0].Metrics[0].Value == nil {
		t.Errorf("the sweep's table: want 3 datapaths, the one fortio track, step 0 from the rounds: %+v", ss)
	} else if v := float64(ss.Datapaths[0].Steps[0].Metrics[0].Value.Median); math.Abs(v-2000) > 30 {
		t.Errorf("iptables' step 0: %.0f req/s, want the rounds' 2,000 through the Service", v)
	}
}

// A run that measured less than the profile (other --tests) says, per
// cell, why it has no number; the shapes on it are not judged.
func TestReproducedSaysWhatWasNotMeasured(t *testing.T) {
	run := recordedRun(t, "tke", nil)
	var kept []results.Result
	for _, r := range run.Results {
		if r.Test != "FORTIO_RPS_SHORT_C64" {
			kept = append(kept, r)
		}
		if r.Test == "FORTIO_RPS_C64" && r.Scenario == "ebpf" {
			kept[len(kept)-1] = results.Result{Scenario: r.Scenario, Test: r.Test, Placement: r.Placement, Skipped: "the target has no Service datapath"}
		}
	}
	run.Results = kept
	m, out := reproducedReport(t, run)
	if !strings.Contains(out["md"], "not measured in this run: FORTIO_RPS_SHORT_C64 on pod-to-service/other-node was not in the plan") {
		t.Errorf("no reason for the short-connection row:\n%s", out["md"])
	}
	if !strings.Contains(out["md"], "not measured on this target: the target has no Service datapath") {
		t.Errorf("no reason for the skipped keep-alive cell:\n%s", out["md"])
	}
	if got := shapeVerdicts(m)["short-connection HTTP through a Service, Cilium native ÷ iptables"]; got != ShapeNotJudged {
		t.Errorf("a shape on an unmeasured row: %q, want %q", got, ShapeNotJudged)
	}
}

// A run of a profile of our own has no reproduced section.
func TestNoReproductionWithoutAPublishedReport(t *testing.T) {
	rep := buildFixture(t)
	if rep.reproduced() != nil {
		t.Fatal("a reproduced section for the standard profile")
	}
	if md := renderMDHTML(t, rep)["md"]; strings.Contains(md, "## Reproduced") {
		t.Error("report.md has a reproduced section")
	}
}

// The terminal's answers are preceded by the shapes' lines.
func TestShapesInTheTerminal(t *testing.T) {
	run := recordedRun(t, "connectivity-perf", nil)
	rep, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	WriteAnswers(&b, rep)
	out := b.String()
	shapes, answers := strings.Index(out, "Shapes of cilium connectivity perf"), strings.Index(out, "Answers:")
	if shapes < 0 || answers < shapes || !strings.Contains(out, "  - TCP_CRR ÷ TCP_RR transaction rate, pod-to-pod same-node: published 0.325×") {
		t.Errorf("terminal:\n%s", out)
	}
}

// checkBalanced: every element report.html opens is closed in order.
func checkBalanced(t *testing.T, page string) {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(page))
	var stack []string
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				t.Fatalf("tokenizer: %v", z.Err())
			}
			break
		}
		tok := z.Token()
		switch {
		case tt == html.StartTagToken && !voidElements[tok.Data]:
			stack = append(stack, tok.Data)
		case tt == html.EndTagToken:
			if len(stack) == 0 || stack[len(stack)-1] != tok.Data {
				t.Fatalf("</%s> closes %v", tok.Data, stack)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		t.Errorf("left open: %v", stack)
	}
}

// A results file naming a report this build does not hold still reports,
// with a warning instead of the table.
func TestUnknownPublishedReportIsAWarning(t *testing.T) {
	run := recordedRun(t, "connectivity-perf", nil)
	run.Plan.Reproduces.Report = "gone"
	rep, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.reproduced() != nil {
		t.Error("a reproduced table for an unknown report")
	}
	found := false
	for _, w := range rep.Warnings {
		found = found || strings.Contains(w, `no published report "gone"`)
	}
	if !found {
		t.Errorf("no warning naming the report: %v", rep.Warnings)
	}
}
