package results

import (
	"github.com/cnibench/cnibench/engine/dnsload/dnsapi"
	"github.com/cnibench/cnibench/engine/engineapi"
	"github.com/cnibench/cnibench/engine/httpload/httpapi"
	"github.com/cnibench/cnibench/engine/kinds"
)

// asLoad returns the load-engine view of an HTTP or DNS sample, for
// Summarize (metrics read it through the kinds' Read).
func asLoad(s Sample) (kinds.Load, bool) {
	switch r := s.Result.(type) {
	case *httpapi.Result:
		return kinds.Load{Rate: r.RPS, Latency: r.Latency, Ops: r.Requests, Seconds: r.Seconds,
			OpenLoop: r.OpenLoop, ClientCPU: r.ClientCPU}, true
	case *dnsapi.Result:
		return kinds.Load{Rate: r.QPS, Latency: r.Latency, Ops: r.Responses, Seconds: r.Seconds,
			OpenLoop: r.OpenLoop, ClientCPU: r.ClientCPU}, true
	}
	return kinds.Load{}, false
}

// asEngine returns a stream or request/response sample's engine result.
func asEngine(s Sample) (*engineapi.Result, bool) {
	e, ok := s.Result.(*engineapi.Result)
	return e, ok && e != nil
}
