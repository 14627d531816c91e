package httpload

import (
	"fmt"

	"github.com/cnibench/cnibench/engine/kinds"
)

// The HTTP kind, as the TKE and EKS reports measure it: max RPS over
// keep-alive connections (c64, c256) and with a new connection per request,
// and latency at fixed rates (open loop, corrected for coordinated
// omission). HTTP_QPS_1000, HTTP_QPS_5000 and HTTP_RPS_C64 (max) make the
// QPS ladder. A test's Template is its *Options.
func init() {
	kinds.Register(kinds.LoadKind(kinds.Kind{
		Name: "http", Order: 30, PerWork: kinds.PerRequest, Check: checkAnswered,
		Key: "http", OptionsKey: "http_options",
		NewResult: kinds.New[Result](), NewOptions: kinds.New[Options](),
		Options: options, Run: kinds.RunWith(Run), Merge: kinds.MergeWith(merge),
		Tests: []kinds.Test{
			{Name: "HTTP_RPS_C64", Template: &Options{Connections: 64, KeepAlive: true}, About: "HTTP requests/s at max rate, 64 keep-alive connections"},
			{Name: "HTTP_RPS_C256", Template: &Options{Connections: 256, KeepAlive: true}, About: "HTTP requests/s at max rate, 256 keep-alive connections"},
			{Name: "HTTP_RPS_SHORT_C64", Template: &Options{Connections: 64}, About: "HTTP requests/s, a new connection per request, 64 concurrent"},
			{Name: "HTTP_QPS_1000", Template: &Options{Connections: 64, KeepAlive: true, QPS: 1000}, About: "HTTP latency at a fixed 1,000 requests/s (open loop, CO corrected)"},
			{Name: "HTTP_QPS_5000", Template: &Options{Connections: 64, KeepAlive: true, QPS: 5000}, About: "HTTP latency at a fixed 5,000 requests/s (open loop, CO corrected)"},
		},
		Ports: []kinds.Port{{Name: "http", Number: DefaultPort, Proto: "tcp", Exposed: true}},
		Table: kinds.Table{Order: 20, Columns: kinds.LoadColumns("Req/s", kinds.MetricRPS, "Errors %", kinds.MetricErrors,
			kinds.PerRequest, "CPU µs/req (cli+srv)")},
	}, "req/s", load, own))
}

// options are a test's Options (its Template with the plan's times) on
// one server, with the placement's share of the client's ports.
func options(t kinds.Test, host string, p kinds.Plan) any {
	o := *t.Template.(*Options)
	o.Host, o.Port, o.RunnerOptions, o.PortShare = host, p.Port("http", DefaultPort), p.Runner(), p.PortShare
	return &o
}

// checkAnswered fails a sample without a single response.
func checkAnswered(r any) error {
	if h := r.(*Result); h.Requests == 0 {
		return kinds.NoAnswer("HTTP response", h.Seconds, h.Errors.Total, h.Errors.First)
	}
	return nil
}

func load(h *Result) kinds.Load {
	return kinds.Load{Rate: h.RPS, RateName: kinds.MetricRPS, RateUnit: "req/s", Latency: h.Latency, Uncorrected: h.LatencyUncorrected,
		Ops: h.Requests, Seconds: h.Seconds, OpenLoop: h.OpenLoop, ClientCPU: h.ClientCPU,
		Errors: h.Errors.Total, FirstError: h.Errors.First}
}

// own is the share of failed requests, judged on the successful share.
// A non-200 response is both a request (complete) and an error (Status),
// so the attempts are the requests plus the errors that are not responses.
func own(h *Result) (vs []kinds.Value, line string) {
	if n := h.Requests + h.Errors.Total - h.Errors.Status; n > 0 {
		vs = append(vs, kinds.Value{Name: kinds.MetricErrors, Unit: "%", Better: kinds.LowerIsBetter,
			V: 100 * float64(h.Errors.Total) / float64(n), Complement: "success share"})
	}
	if h.Errors.Total > 0 {
		line = fmt.Sprintf("  %d errors", h.Errors.Total)
	}
	return vs, line
}
