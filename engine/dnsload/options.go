// Package dnsload is cnibench's DNS load engine, in the spirit of dnsperf:
// a client Run that sends A queries over UDP to a DNS server, either with
// a fixed number of queries outstanding as fast as answers come back
// (closed loop, the server's "QPS capacity") or at a fixed total rate (open
// loop, latency corrected for coordinated omission), and a Server that runs
// a real DNS daemon (dnsmasq) answering Kubernetes-shaped Service names
// from memory.
//
// The client is a few epoll event loops, one connected UDP socket each,
// with precomputed query packets and responses matched by ID, so that it
// is not the bottleneck before dnsperf would be (bench/dns.sh compares
// them). Options and Result are plain JSON-serialisable structs, shaped
// like engine/httpload's; they live in engine/dnsload/dnsapi, which links
// no engine, so that results and report can use them, and the names below
// re-export them.
package dnsload

import "github.com/cnibench/cnibench/engine/dnsload/dnsapi"

type (
	// Options configures one client run.
	Options = dnsapi.Options
	// Errors counts failed queries and odd packets, within the measured
	// interval.
	Errors = dnsapi.Errors
	// Result is what one client run measured.
	Result = dnsapi.Result
)

// Defaults the bench command reads through this package; the others are
// dnsapi's.
const (
	DefaultPort    = dnsapi.DefaultPort
	DefaultNames   = dnsapi.DefaultNames
	DefaultTimeout = dnsapi.DefaultTimeout
)
