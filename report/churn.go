package report

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/cnibench/cnibench/datapath/churn"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// Churn analyses a churn run (run --tests churn): per churned scenario
// what the churn did (requested and achieved rate, changes held, the
// programming latency of every change pooled over the samples, the sync
// loop's syncs and CPU) and what it cost the traffic against the same
// datapath without churn, with the overhead columns' paired verdicts.
type Churn struct {
	Options   churn.Options   `json:"options"`
	Scenarios []ChurnScenario `json:"scenarios"`
	// Cluster: the churn ran on a Kubernetes cluster, its changes written
	// to the API server and their programming read by the node probes.
	Cluster bool `json:"cluster,omitempty"`
}

// ChurnScenario is one churned scenario.
type ChurnScenario struct {
	Scenario string `json:"scenario"`
	Against  string `json:"against,omitempty"` // the scenario without churn
	Datapath string `json:"datapath"`
	Partial  bool   `json:"partial_syncs"`
	MinSync  string `json:"min_sync_interval"`
	Windows  int    `json:"windows"` // samples churned
	// Confirmed are the windows after which a read-back of every node
	// found exactly the last spec synced.
	Confirmed int `json:"windows_confirmed"`

	Requested   Num            `json:"requested_rate"`
	AchievedMed Num            `json:"achieved_rate_median"`
	AchievedMin Num            `json:"achieved_rate_min"`
	Made        int            `json:"changes_made"`
	Held        int            `json:"changes_held"`
	Pending     int            `json:"changes_pending"`
	Kinds       map[string]int `json:"kinds"`
	ShortBy     []string       `json:"short_by,omitempty"`

	P50Ms Num `json:"programming_latency_p50_ms"`
	P99Ms Num `json:"programming_latency_p99_ms"`
	MaxMs Num `json:"programming_latency_max_ms"`

	SyncsPerSec      Num    `json:"syncs_per_second"`
	SyncCPUPerChange Num    `json:"sync_cpu_per_change_ms"`
	SyncCPUShare     Num    `json:"sync_cpu_share_pct"` // of one CPU over the windows
	Failures         int    `json:"sync_failures"`
	FirstError       string `json:"first_error,omitempty"`

	Effects []ChurnEffect  `json:"effects"`
	PerCore []ChurnPerCore `json:"per_core,omitempty"`
	// Idle is the churn window without traffic before the rounds.
	IdleP50Ms        Num `json:"idle_programming_latency_p50_ms,omitempty"`
	IdleP99Ms        Num `json:"idle_programming_latency_p99_ms,omitempty"`
	IdleCPUPerChange Num `json:"idle_sync_cpu_per_change_ms,omitempty"`
	IdleAchieved     Num `json:"idle_achieved_rate,omitempty"`
	// MemoryBytes is the datapath's state (ruleset or BPF maps) at the
	// steady state.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// Timeline is one round's HTTP sample with and without churn, bucket
	// by bucket, beside the churn's changes.
	Timeline *ChurnTimeline `json:"timeline,omitempty"`
}

// ChurnPerCore is a test's work per CPU-second of the CPUs the client and
// server were pinned to, with and without churn: all they spent (kernel
// time included, as a node's CPU is), and with softirq left out (the view
// of a report that counts only the processes' own CPU).
type ChurnPerCore struct {
	Test         string `json:"test"`
	Unit         string `json:"unit"` // per core-second: "requests", "ops"
	Without      Num    `json:"without"`
	With         Num    `json:"with"`
	WithoutNoIRQ Num    `json:"without_softirq_left_out"`
	WithNoIRQ    Num    `json:"with_softirq_left_out"`
}

// ChurnEffect is one headline metric with and without churn.
type ChurnEffect struct {
	Test    string `json:"test"`
	Metric  string `json:"metric"`
	Unit    string `json:"unit"`
	Without Num    `json:"without"`
	With    Num    `json:"with"`
	Delta   *Delta `json:"delta,omitempty"`
	// Failed are the churned samples that failed (an error, a reset).
	Failed int `json:"failed_samples"`
}

// churnEffectMetrics are shown per test: the rate, its tail latency and
// errors.
var churnEffectMetrics = []string{kinds.MetricRPS, kinds.MetricRate, kinds.MetricP99, kinds.MetricErrors}

// buildChurn analyses run's churn, nil for another kind of run.
func buildChurn(rep *Report, run *results.Run) *Churn {
	if run.Churn == nil {
		return nil
	}
	c := &Churn{Options: run.Churn.Options, Cluster: run.Target.Kind == "k8s"}
	for _, sc := range run.Churn.Scenarios {
		if !sc.Churned {
			continue
		}
		cs := ChurnScenario{Scenario: sc.Scenario, Datapath: sc.Datapath, Kinds: map[string]int{}}
		var achieved, lat []float64
		var span, cpu time.Duration
		syncs := 0
		for _, res := range run.Results {
			if res.Scenario != sc.Scenario {
				continue
			}
			for _, smp := range res.Samples {
				w := smp.Churn
				if w == nil {
					continue
				}
				cs.Windows++
				if w.Confirmed {
					cs.Confirmed++
				}
				cs.Partial, cs.MinSync, cs.Requested = w.Partial, w.MinSync.String(), Num(w.Requested)
				achieved = append(achieved, w.Achieved)
				lat = append(lat, w.LatenciesMs...)
				cs.Made, cs.Held, cs.Pending = cs.Made+w.Made, cs.Held+w.Held, cs.Pending+w.Pending
				for k, n := range w.Kinds {
					cs.Kinds[string(k)] += n
				}
				if w.ShortBy != "" && !slices.Contains(cs.ShortBy, w.ShortBy) {
					cs.ShortBy = append(cs.ShortBy, w.ShortBy)
				}
				if w.Span > 0 {
					span += w.Span
				} else {
					span += w.Elapsed // results written before span_ns
				}
				cpu += w.SyncCPU
				syncs += w.Syncs
				cs.Failures += w.Failures
				if cs.FirstError == "" {
					cs.FirstError = w.FirstError
				}
			}
		}
		if len(achieved) > 0 {
			cs.AchievedMed, cs.AchievedMin = Num(stats.Quantile(achieved, 0.5)), Num(slices.Min(achieved))
		}
		if len(lat) > 0 {
			cs.P50Ms, cs.P99Ms, cs.MaxMs = Num(stats.Quantile(lat, 0.5)), Num(stats.Quantile(lat, 0.99)), Num(slices.Max(lat))
		}
		if s := span.Seconds(); s > 0 {
			cs.SyncsPerSec, cs.SyncCPUShare = Num(float64(syncs)/s), Num(100*cpu.Seconds()/s)
		}
		if cs.Held > 0 {
			cs.SyncCPUPerChange = Num(float64(cpu) / float64(cs.Held) / float64(time.Millisecond))
		}
		cs.Effects, cs.PerCore, cs.Against = churnEffects(rep, sc.Scenario)
		if cs.Against != "" {
			cs.Timeline = churnTimeline(run, sc.Scenario, cs.Against)
		}
		if cs.Failures > 0 || cs.Confirmed < cs.Windows {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: the churn's datapath was not as asked in %d of %d samples (%d failed syncs or read-backs; first: %s): those samples measured a churn that did not fully happen",
				sc.Scenario, cs.Windows-cs.Confirmed, cs.Windows, cs.Failures, cs.FirstError))
		}
		if w := sc.Idle; w != nil {
			cs.IdleP50Ms, cs.IdleP99Ms, cs.IdleAchieved = Num(w.P50Ms), Num(w.P99Ms), Num(w.Achieved)
			cs.IdleCPUPerChange = Num(float64(w.SyncCPUPerChange) / float64(time.Millisecond))
		}
		cs.MemoryBytes = sc.Memory.RulesetBytes + sc.Memory.BPFMapBytes
		c.Scenarios = append(c.Scenarios, cs)
	}
	return c
}

// churnEffects are a churned scenario's headline metrics against the
// column it is compared with (its scenario without churn).
func churnEffects(rep *Report, scenario string) ([]ChurnEffect, []ChurnPerCore, string) {
	ci := slices.IndexFunc(rep.Columns, func(c Column) bool { return c.Scenario == scenario })
	if ci < 0 {
		return nil, nil, ""
	}
	ai := rep.Columns[ci].Against
	if rep.Columns[ci].Adds == "" {
		return nil, nil, "" // no scenario without churn to compare with
	}
	var out []ChurnEffect
	var perCore []ChurnPerCore
	for _, sec := range rep.Sections {
		if pc, ok := perCoreOf(sec, ci, ai); ok {
			perCore = append(perCore, pc)
		}
		failed := 0
		if ci < len(sec.Samples) && sec.Samples[ci] != nil {
			failed = sec.Samples[ci].Failed
		}
		for _, row := range sec.Metrics {
			if !slices.Contains(churnEffectMetrics, row.Metric) || ci >= len(row.Values) {
				continue
			}
			e := ChurnEffect{Test: sec.Test, Metric: row.Metric, Unit: row.Unit, Failed: failed}
			if v := row.Values[ci]; v != nil {
				e.With = v.Display
			}
			if v := row.Values[rep.Columns[ci].Against]; v != nil {
				e.Without = v.Display
			}
			e.Delta = row.VsBaseline[ci]
			out = append(out, e)
		}
	}
	return out, perCore, rep.Columns[ai].Scenario
}

// perCoreOf reads a section's total and softirq CPU per unit of work on
// the pinned CPUs (µs) in the churned column ci and its twin ai.
func perCoreOf(sec Section, ci, ai int) (ChurnPerCore, bool) {
	var total, irq *Row
	unit := ""
	for i := range sec.Metrics {
		row := &sec.Metrics[i]
		if u, ok := strings.CutPrefix(row.Metric, kinds.PinnedTotal+" CPU per "); ok && row.Unit == "µs" {
			total, unit = row, u
		}
		if strings.HasPrefix(row.Metric, kinds.PinnedSoftirq+" CPU per ") {
			irq = row
		}
	}
	if total == nil || irq == nil {
		return ChurnPerCore{}, false
	}
	per := func(row *Row, c int, less *Row) Num {
		if c >= len(row.Values) || row.Values[c] == nil {
			return Num(nanNum())
		}
		us := float64(row.Values[c].Display)
		if less != nil && c < len(less.Values) && less.Values[c] != nil {
			us -= float64(less.Values[c].Display)
		}
		if us <= 0 {
			return Num(nanNum())
		}
		return Num(1e6 / us)
	}
	return ChurnPerCore{Test: sec.Test, Unit: unit + "s",
		Without: per(total, ai, nil), With: per(total, ci, nil),
		WithoutNoIRQ: per(total, ai, irq), WithNoIRQ: per(total, ci, irq)}, true
}

// lines are the section's bullet points: one head line per churned
// scenario and its details.
func (c *Churn) lines() (heads []string, bodies [][]string) {
	for _, s := range c.Scenarios {
		sync := "full syncs"
		if s.Partial {
			sync = "partial syncs"
		}
		interval := "minimum interval " + s.MinSync
		if s.MinSync == "0s" {
			interval = "a sync per change"
		}
		held, readBack, loop := "every node's kernel", "datapaths held exactly the last sync", "sync loop"
		if c.Cluster {
			sync, interval = "changes written to the API server as they come", "the nodes' proxy syncs on its own"
			held, readBack, loop = "every node's datapath as its probe read it", "API server held exactly the last write and every node at least its counts", "API writer (cnibench's own CPU: writes and probe reads; the proxies' CPU is in the samples' datapath usage)"
		}
		heads = append(heads, fmt.Sprintf("%s (%s, %s, %s): %s changes/s achieved (median of %d samples, lowest %s) of %s asked",
			s.Scenario, s.Datapath, sync, interval, fn(s.AchievedMed), s.Windows, fn(s.AchievedMin), fn(s.Requested)))
		var body []string
		body = append(body, fmt.Sprintf("programming latency, change made → held by %s: p50 %s ms, p99 %s ms, max %s ms over %d changes held (%d made, %d not held when their sample ended); read back after each sample: %d of %d samples' %s",
			held, fn(s.P50Ms), fn(s.P99Ms), fn(s.MaxMs), s.Held, s.Made, s.Pending, s.Confirmed, s.Windows, readBack))
		body = append(body, fmt.Sprintf("%s: %s syncs/s, %s ms of CPU per change held (%s%% of one CPU), %d failed syncs", loop, fn(s.SyncsPerSec), fn(s.SyncCPUPerChange), fn(s.SyncCPUShare), s.Failures))
		if s.FirstError != "" {
			body = append(body, "first failed sync: "+s.FirstError)
		}
		for _, why := range s.ShortBy {
			body = append(body, "the achieved rate fell more than 10% short in some samples: "+why)
		}
		var made []string
		for _, k := range churn.Kinds() {
			made = append(made, fmt.Sprintf("%s %d", k, s.Kinds[string(k)]))
		}
		body = append(body, "changes made: "+strings.Join(made, ", "))
		if s.IdleAchieved > 0 {
			body = append(body, fmt.Sprintf("without traffic (before the rounds): %s changes/s, programmed in p50 %s ms, p99 %s ms, %s ms of sync CPU per change",
				fn(s.IdleAchieved), fn(s.IdleP50Ms), fn(s.IdleP99Ms), fn(s.IdleCPUPerChange)))
		}
		if s.MemoryBytes > 0 {
			body = append(body, fmt.Sprintf("the datapath's state at the steady state: %s KiB (ruleset or BPF maps, as the kernel reports it)", fn(Num(float64(s.MemoryBytes)/1024))))
		}
		for _, p := range s.PerCore {
			body = append(body, fmt.Sprintf("%s per core-second of the client's and server's CPUs: %s without churn, %s with (kernel time included); %s and %s with softirq left out",
				p.Test+" "+p.Unit, fn(p.Without), fn(p.With), fn(p.WithoutNoIRQ), fn(p.WithNoIRQ)))
		}
		if s.Timeline != nil {
			body = append(body, s.Timeline.line())
		}
		for _, e := range s.Effects {
			d := "no verdict"
			if e.Delta != nil {
				d = e.Delta.Text
			}
			line := fmt.Sprintf("%s %s: %s %s without churn, %s %s with: %s", e.Test, e.Metric, fn(e.Without), e.Unit, fn(e.With), e.Unit, d)
			if e.Failed > 0 && e.Metric != kinds.MetricErrors {
				line += fmt.Sprintf(" (%d churned samples failed)", e.Failed)
			}
			body = append(body, line)
		}
		bodies = append(bodies, body)
	}
	return heads, bodies
}

const churnAbout = "Each churned scenario kept the same Services as its twin without churn (the test Service among the dummies) while the churn scaled dummy Services up and down, replaced endpoints and added and removed a Service during its samples, synced as its Service proxy does (kube-proxy: at most once per minimum interval, partially; eBPF: per change). A change is programmed when the first sync that carried it has been committed by every node's kernel (the restore tools and map updates return only then), and after each sample the whole datapath of every node is read back and must hold exactly the last sync. The effects are the paired verdicts of the churned column against its twin."

// churnAboutLine is the section's paragraph: what was asked, then how.
const churnAboutCluster = "Each churned scenario kept the same Services as its twin without churn (dummy Services with EndpointSlices in the run's namespace, beside the test Service) while the churn scaled them up and down, replaced endpoints and added and removed a Service during its samples, each change written to the API server as it came. A change is programmed when every node's Service proxy holds it as its node probe reads it: a Service added or removed by its key, a changed Service by the chain of every endpoint it has and none it lost (kube-proxy; Cilium's by the counts); late by up to one probe read interval. The effects are the paired verdicts of the churned column against its twin."

func churnAboutLine(c *Churn) string {
	about := churnAbout
	if c.Cluster {
		about = churnAboutCluster
	}
	return fmt.Sprintf("%d Services × %d endpoints, %s changes/s asked. %s", c.Options.Services, c.Options.Endpoints, fn(Num(c.Options.Rate)), about)
}

// churnSection is what a churn run's churn did and what it cost the
// traffic against the same datapath without churn (one run only).
type churnSection struct{}

const churnHeading = "Churn"

func (churnSection) stage() buildStage { return afterControl } // its verdicts as the tables show them

func (churnSection) build(rep *Report, in []Input) error {
	if len(in) == 1 {
		rep.Churn = buildChurn(rep, in[0].Run)
	}
	return nil
}

func (churnSection) markdown(b *strings.Builder, rep *Report) {
	if c := rep.Churn; c != nil {
		heads, bodies := c.lines()
		markdownBullets(b, churnHeading, churnAboutLine(c), heads, bodies)
	}
}

func (churnSection) html(b *strings.Builder, rep *Report) error {
	b.WriteString(string(htmlChurn(rep.Churn)) + "\n")
	return nil
}

func htmlChurn(c *Churn) template.HTML {
	if c == nil {
		return ""
	}
	heads, bodies := c.lines()
	out := htmlBullets(churnHeading, churnAboutLine(c), heads, bodies)
	for _, s := range c.Scenarios {
		if s.Timeline == nil {
			continue
		}
		var b strings.Builder
		if err := lineChartsTmpl.Execute(&b, struct{ Charts []lineChart }{s.Timeline.charts(s.Scenario, s.Against)}); err == nil {
			out += template.HTML("<h3>" + template.HTMLEscapeString(s.Scenario+": timeline") + "</h3>" + b.String())
		}
	}
	return out
}

func fn(n Num) string { return fmtNum(float64(n)) }

func nanNum() float64 { return math.NaN() }
