package fortioload

import (
	"fmt"

	"github.com/cnibench/cnibench/engine/kinds"
)

// The fortio kind: the HTTP kind's max-rate, short-connection and
// fixed-rate tests (the QPS ladder 1,000 / 5,000 / max of the EKS report), measured by fortio's client against the same server
// (the agent's, on the http port). Names start FORTIO_ where the HTTP
// kind's start HTTP_, so every row says which client measured it.
func init() {
	kinds.Register(kinds.LoadKind(kinds.Kind{
		Name: "fortio", Order: 35, PerWork: kinds.PerRequest, Check: checkAnswered,
		Key: "fortio", OptionsKey: "fortio_options",
		NewResult: kinds.New[Result](), NewOptions: kinds.New[Options](),
		Options: options, Run: kinds.RunWith(Run), Merge: kinds.MergeWith(merge),
		Tests: []kinds.Test{
			{Name: "FORTIO_RPS_C64", Template: &Options{Connections: 64, KeepAlive: true}, About: "HTTP requests/s at max rate, 64 keep-alive connections, fortio's client"},
			{Name: "FORTIO_RPS_SHORT_C64", Template: &Options{Connections: 64}, About: "HTTP requests/s, a new connection per request, 64 concurrent, fortio's client"},
			{Name: "FORTIO_QPS_1000", Template: &Options{Connections: 64, KeepAlive: true, QPS: 1000}, About: "HTTP latency at a fixed 1,000 requests/s, fortio's client (not CO corrected)"},
			{Name: "FORTIO_QPS_5000", Template: &Options{Connections: 64, KeepAlive: true, QPS: 5000}, About: "HTTP latency at a fixed 5,000 requests/s, fortio's client (not CO corrected)"},
		},
		// No server of its own: it measures the http kind's.
		Dials: "http",
		Table: kinds.Table{Order: 25, Columns: kinds.LoadColumns("Req/s", kinds.MetricRPS, "Errors %", kinds.MetricErrors,
			kinds.PerRequest, "CPU µs/req (cli+srv)")},
	}, "req/s", load, own))
}

// options are a test's Options (its Template with the plan's times) on
// one server's http port.
func options(t kinds.Test, host string, p kinds.Plan) any {
	o := *t.Template.(*Options)
	o.Host, o.Port, o.RunnerOptions, o.PortShare = host, p.Port("http", DefaultPort), p.Runner(), p.PortShare
	return &o
}

// checkAnswered fails a sample without a single response.
func checkAnswered(r any) error {
	if f := r.(*Result); f.Requests == 0 {
		return kinds.NoAnswer("HTTP response to fortio", f.Seconds, f.Errors.Total, f.Errors.First)
	}
	return nil
}

func load(f *Result) kinds.Load {
	return kinds.Load{Rate: f.RPS, RateName: kinds.MetricRPS, RateUnit: "req/s", Latency: f.Latency,
		Ops: f.Requests, Seconds: f.Seconds, OpenLoop: f.OpenLoop, ClientCPU: f.ClientCPU,
		Errors: f.Errors.Total, FirstError: f.Errors.First}
}

// own is the share of failed requests, judged on the successful share, as
// the HTTP kind's.
func own(f *Result) (vs []kinds.Value, line string) {
	if n := f.Requests + f.Errors.Socket; n > 0 {
		vs = append(vs, kinds.Value{Name: kinds.MetricErrors, Unit: "%", Better: kinds.LowerIsBetter,
			V: 100 * float64(f.Errors.Total) / float64(n), Complement: "success share"})
	}
	if f.Errors.Total > 0 {
		line = fmt.Sprintf("  %d errors", f.Errors.Total)
	}
	return vs, line
}
