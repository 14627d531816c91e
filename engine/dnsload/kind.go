package dnsload

import (
	"fmt"

	"github.com/cnibench/cnibench/engine/kinds"
)

// The DNS kind, against dnsmasq in the server pod answering 1,000
// Service-like names: capacity (closed loop, 100 queries in flight) and
// latency at a fixed 1,000 queries/s (open loop, CO corrected). A test's
// Template is its *Options.
func init() {
	perQuery := kinds.PerWork{Client: kinds.MetricClientCPUQuery, Server: kinds.MetricServerCPUQuery,
		Datapath: kinds.MetricDatapathCPUQuery, Unit: "µs", Head: "DP CPU µs/query"}
	kinds.Register(kinds.LoadKind(kinds.Kind{
		Name: "dns", Order: 40, PerWork: perQuery, Check: checkAnswered,
		Key: "dns", OptionsKey: "dns_options",
		NewResult: kinds.New[Result](), NewOptions: kinds.New[Options](),
		Options: options, Run: kinds.RunWith(Run), Merge: kinds.MergeWith(merge),
		Tests: []kinds.Test{
			{Name: "DNS_QPS_MAX", Template: &Options{}, About: "DNS queries/s a dnsmasq server answers (closed loop, 100 in flight)"},
			{Name: "DNS_QPS_1000", Template: &Options{QPS: 1000}, About: "DNS latency at a fixed 1,000 queries/s (open loop, CO corrected)"},
		},
		// dnsmasq, run by the server agent, listens on it: not the agent's.
		Ports: []kinds.Port{{Name: "dns", Number: DefaultPort, Proto: "udp"}},
		Table: kinds.Table{Order: 30, Columns: kinds.LoadColumns("Queries/s", kinds.MetricQPS, "Lost %", kinds.MetricDNSLoss,
			perQuery, "CPU µs/query (cli+srv)")},
	}, "q/s", load, own))
}

// options are a test's Options (its Template with the plan's times) on
// one server: the server agent's dnsmasq.
func options(t kinds.Test, host string, p kinds.Plan) any {
	o := *t.Template.(*Options)
	o.Server, o.Port, o.RunnerOptions = host, p.Port("dns", DefaultPort), p.Runner()
	return &o
}

// checkAnswered fails a sample without a single answer.
func checkAnswered(r any) error {
	if d := r.(*Result); d.Responses == 0 {
		return fmt.Errorf("no DNS answer to %d queries: %s (the server agent runs dnsmasq: is dnsmasq-base installed?)", d.Sent, d.Errors.First)
	}
	return nil
}

func load(d *Result) kinds.Load {
	return kinds.Load{Rate: d.QPS, RateName: kinds.MetricQPS, RateUnit: "queries/s", Latency: d.Latency, Uncorrected: d.LatencyUncorrected,
		Ops: d.Responses, Seconds: d.Seconds, OpenLoop: d.OpenLoop, ClientCPU: d.ClientCPU,
		Errors: d.Errors.Total, FirstError: d.Errors.First}
}

// own is the share of lost queries (timeouts), judged on the answered
// share.
func own(d *Result) (vs []kinds.Value, line string) {
	vs = []kinds.Value{{Name: kinds.MetricDNSLoss, Unit: "%", Better: kinds.LowerIsBetter, V: d.LossPercent, Complement: "answered share"}}
	if d.LossPercent > 0 {
		line = fmt.Sprintf("  lost %.2f%%", d.LossPercent)
	}
	return vs, line
}
