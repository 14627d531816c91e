package fortioload

import (
	"fmt"
	"time"

	"fortio.org/fortio/fhttp"

	"github.com/cnibench/cnibench/engine/internal/window"
	"github.com/cnibench/cnibench/engine/kinds"
)

// result maps a measured fortio run onto the HTTP kind's terms.
func (m measured) result(o Options) (*Result, error) {
	f := m.fortio
	start := f.StartTime
	res := &Result{
		Options: o, URL: o.URL(), Engine: engineName(), Mode: "max-rate",
		RunnerResults: kinds.RunnerResults{Start: start, End: start.Add(f.ActualDuration), Seconds: f.ActualDuration.Seconds()},
		Conns:         o.Connections, Sockets: f.SocketCount, StatusCodes: map[int]int64{},
	}
	if res.Seconds <= 0 {
		return nil, fmt.Errorf("fortio %s: the run measured no time", res.URL)
	}
	for code, n := range f.RetCodes {
		res.StatusCodes[code] += n
		switch {
		case code < 0:
			res.Errors.Socket += n
		case is2xx(code):
			res.Requests += n
			res.OK += n
		default:
			res.Requests += n
			res.Errors.Status += n
		}
	}
	res.Errors.Total = res.Errors.Socket + res.Errors.Status
	res.Errors.First = m.rec.firstFailure()
	res.RPS = float64(res.Requests) / res.Seconds
	if o.QPS > 0 {
		res.Mode, res.OpenLoop = "fixed-qps", window.Achieved(res.RPS, o.QPS, MissedTargetRatio)
	}
	var err error
	if res.Latency, err = m.rec.latency(); err != nil {
		return nil, err
	}
	if res.Latency.Count != res.Requests {
		return nil, fmt.Errorf("fortio %s: %d latencies recorded for %d responses (bug)", res.URL, res.Latency.Count, res.Requests)
	}
	res.ClientCPU = m.win.CPU(SaturatedUtil)
	if o.PortShare != nil {
		res.PortShareNote = fmt.Sprintf("port share %d of %d not applied: fortio's client dials with its own dialer, from all of ip_local_port_range",
			o.PortShare.Index, o.PortShare.Count)
	}
	res.Fortio = summary(f)
	return res, nil
}

// summary is fortio's own view of the run, its seconds in microseconds.
func summary(f *fhttp.HTTPRunnerResults) Summary {
	h := f.DurationHistogram
	us := func(s float64) float64 { return s * float64(time.Second/time.Microsecond) }
	s := Summary{RequestedQPS: f.RequestedQPS, ActualQPS: f.ActualQPS,
		Calls: h.Count, AvgUs: us(h.Avg), MinUs: us(h.Min), MaxUs: us(h.Max)}
	if e := f.ErrorsDurationHistogram; e != nil {
		s.Errors = e.Count
	}
	for _, p := range h.Percentiles {
		s.Percentiles = append(s.Percentiles, Percentile{Percentile: p.Percentile, Us: us(p.Value)})
	}
	return s
}
