// Package httpload is cnibench's HTTP/1.1 load engine, in the spirit of
// fortio's fhttp and periodic packages and of wrk/wrk2: a Server answering
// every request with a fixed-size body, and a client Run that drives it with
// c connections either as fast as they go (closed loop) or at a fixed total
// rate (open loop, latency corrected for coordinated omission), over
// keep-alive connections or one new connection per request.
//
// Both sides are epoll event loops on non-blocking sockets speaking a
// minimal HTTP/1.1 with precomputed request and response bytes: the point
// is to measure the datapath, so neither side may be the bottleneck before
// wrk or nginx would be (bench/http.sh compares them). Options and Result
// are plain JSON-serialisable structs, like the other engines'; they live
// in engine/httpload/httpapi, which links no engine, so that results and
// report can use them, and the names below re-export them.
package httpload

import "github.com/cnibench/cnibench/engine/httpload/httpapi"

type (
	// Options configures one client run.
	Options = httpapi.Options
	// Errors counts failed requests by kind, within the measured interval.
	Errors = httpapi.Errors
	// Result is what one client run measured.
	Result = httpapi.Result
	// Timeline is a Result's measured interval in buckets.
	Timeline = httpapi.Timeline
	// target is the parsed destination of Options.
	target = httpapi.Target
)

// Defaults (httpapi's, but the server's response size).
const (
	DefaultPort         = httpapi.DefaultPort
	DefaultConnections  = httpapi.DefaultConnections
	DefaultResponseSize = 512
	DefaultTimeout      = httpapi.DefaultTimeout
	MissedTargetRatio   = httpapi.MissedTargetRatio
	SaturatedUtil       = httpapi.SaturatedUtil

	maxBodySize = httpapi.MaxBodySize
)
