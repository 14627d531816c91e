// Package engine holds cnibench's native traffic engines: TCP_STREAM,
// UDP_STREAM, TCP_RR, UDP_RR and TCP_CRR. Each engine is a client (Run) and a
// server side (Server) listening on one fixed data port per test, so tests
// also work through a Service VIP. Options and Result are plain
// JSON-serialisable structs: the agent receives Options over its control API
// and returns Result. They live in engine/engineapi, which links no engine,
// so that results and report can use them; the names below re-export them.
package engine

import (
	"github.com/cnibench/cnibench/engine/engineapi"
	"github.com/cnibench/cnibench/engine/kinds"
)

type (
	// Test names a traffic pattern, spelled as netperf spells it.
	Test = engineapi.Test
	// Mode says how request/response engines wait for data.
	Mode = engineapi.Mode
	// Duration is a time.Duration that reads and writes JSON as "10s".
	Duration = engineapi.Duration
	// Options configures one client run of one test.
	Options = engineapi.Options
	// Result is what one client run measured.
	Result = engineapi.Result
	// PortShare is a client's share of its ephemeral port range.
	PortShare = engineapi.PortShare
	// RunnerOptions and RunnerResults are the base every kind's options
	// and results embed (package kinds): durations, measured interval.
	RunnerOptions = kinds.RunnerOptions
	RunnerResults = kinds.RunnerResults
)

const (
	TCPStream = engineapi.TCPStream
	UDPStream = engineapi.UDPStream
	TCPRR     = engineapi.TCPRR
	UDPRR     = engineapi.UDPRR
	TCPCRR    = engineapi.TCPCRR

	Blocking = engineapi.Blocking
	BusyPoll = engineapi.BusyPoll

	maxUDPRRSize = engineapi.MaxUDPRRSize

	// MinUDPStreamSize and MaxUDPStreamSize bound UDP_STREAM's datagram.
	MinUDPStreamSize = engineapi.MinUDPStreamSize
	MaxUDPStreamSize = engineapi.MaxUDPStreamSize
)

var (
	// Tests lists every engine test in a stable order.
	Tests = engineapi.Tests
	// DefaultPort is the fixed data port the server listens on for each
	// test.
	DefaultPort = engineapi.DefaultPort
)
