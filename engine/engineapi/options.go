// Package engineapi holds the types of package engine that cross process
// and file boundaries: the Options the agent receives over its control API,
// the Result it returns and results.json stores, and the small types they
// are made of. It imports only the standard library, stats and kinds (the
// base every kind's options and results embed), so that results and
// report can read and write them without linking the engines (their epoll
// loops and sockets); engine re-exports every name.
package engineapi

import (
	"fmt"

	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/stats"
)

// Test names a traffic pattern, spelled as netperf spells it.
type Test string

const (
	TCPStream Test = "TCP_STREAM"
	UDPStream Test = "UDP_STREAM"
	TCPRR     Test = "TCP_RR"
	UDPRR     Test = "UDP_RR"
	TCPCRR    Test = "TCP_CRR"
)

// Tests lists every engine test in a stable order.
var Tests = []Test{TCPStream, UDPStream, TCPRR, UDPRR, TCPCRR}

// DefaultPort is the fixed data port the server listens on for each test.
var DefaultPort = map[Test]int{
	TCPStream: 5201,
	UDPStream: 5202,
	TCPRR:     5203,
	UDPRR:     5204,
	TCPCRR:    5205,
}

// Mode says how request/response engines wait for data.
type Mode string

const (
	// Blocking waits in a blocking recv() on a dedicated OS thread, paying a
	// sleep and wakeup per transaction as netperf does. Published reports use
	// these semantics, so it is the default.
	Blocking Mode = "blocking"
	// BusyPoll spins on non-blocking recv(): lower latency, one CPU burnt per
	// flow. Only on explicit request. Only the client spins: the server
	// always blocks, as netserver does.
	BusyPoll Mode = "busy-poll"
)

// Duration is a time.Duration that reads and writes JSON as "10s"
// (kinds.Duration, which every kind's options use).
type Duration = kinds.Duration

// MinUDPStreamSize and MaxUDPStreamSize bound a UDP_STREAM datagram: room
// for the engine's header, and one datagram.
const (
	MinUDPStreamSize = 32
	MaxUDPStreamSize = 65000
)

// MaxUDPRRSize keeps a UDP_RR request (and its setup probe, one byte
// longer) within one UDP datagram.
const MaxUDPRRSize = 65000

// Options configures one client run of one test.
type Options struct {
	Test Test   `json:"test"`
	Host string `json:"host"`           // server address (IP or name)
	Port int    `json:"port,omitempty"` // 0: DefaultPort[Test]
	kinds.RunnerOptions
	// Streams is the number of parallel flows (connections for TCP, sockets
	// for UDP), each on its own OS thread.
	Streams int `json:"streams"`
	// MessageSize: for streams the size of one write (default 128 KiB for
	// TCP, 1400 B for UDP); for RR/CRR the request and response size
	// (default 1 B, as netperf).
	MessageSize int `json:"message_size,omitempty"`
	// RateBitsPerSec caps the offered UDP_STREAM rate; 0 sends as fast as the
	// sender can.
	RateBitsPerSec int64 `json:"rate_bits_per_sec,omitempty"`
	// UDPGSO (UDP_STREAM) hands the kernel runs of datagrams to split late
	// (UDP_SEGMENT): the same datagrams on the wire, a cheaper path through
	// the sender's stack than one datagram per send (iperf3 3.12's way).
	UDPGSO bool `json:"udp_gso,omitempty"`
	Mode   Mode `json:"mode,omitempty"` // RR/CRR/UDP_RR only; default Blocking
	// PortShare (TCP_CRR) takes the client's local ports from one share of
	// its namespace's ephemeral range; nil: the whole range.
	PortShare *PortShare `json:"port_share,omitempty"`
}

// PortShare is one share of the client namespace's ephemeral ports
// (kinds.PortShare, which the plan gives each placement).
type PortShare = kinds.PortShare

// Result is what one client run measured. Throughput is always the
// receiver's view (delivered goodput), never the offered rate.
type Result struct {
	Test    Test    `json:"test"`
	Options Options `json:"options"`
	kinds.RunnerResults
	Mode     Mode   `json:"mode,omitempty"`
	Streams  int    `json:"streams"`
	Errors   int64  `json:"errors"` // failed connects, timeouts, short reads
	ErrorMsg string `json:"error_msg,omitempty"`
	// ErrorsByCause splits Errors by cause: the errno's name
	// ("EADDRNOTAVAIL", "ECONNREFUSED", "ETIMEDOUT", ...), "timeout", "eof"
	// or "other".
	ErrorsByCause map[string]int64 `json:"errors_by_cause,omitempty"`
	// PortExhaustion: a connect() in the measured interval failed with
	// EADDRNOTAVAIL, so the client ran out of local ports for the server's
	// address (TIME_WAIT, a small ip_local_port_range): the rate is the
	// client's limit, not the datapath's.
	PortExhaustion bool `json:"port_exhaustion,omitempty"`
	// Stalled: a TCP_RR or TCP_CRR flow completed no transaction for a
	// second or more (LongestGapSec, the longest such hole in any flow).
	Stalled       bool    `json:"stalled,omitempty"`
	LongestGapSec float64 `json:"longest_gap_sec,omitempty"`
	// ClientTimeWait (TCP_CRR) is the number of TCP sockets in TIME_WAIT in
	// the client's network namespace when the run ended (/proc/net/sockstat);
	// absent if unreadable. The server closes first, so it stays near 0
	// unless something else in the namespace closes first.
	ClientTimeWait *int64 `json:"client_time_wait,omitempty"`
	// LocalPorts is the span of local ports the client's connections were
	// taken from when Options.PortShare asked for one ("40060-45705");
	// empty: the whole ephemeral range (no share asked, or a kernel before
	// 6.3, then ErrorMsg-free and noted in PortShareNote).
	LocalPorts    string `json:"local_ports,omitempty"`
	PortShareNote string `json:"port_share_note,omitempty"`

	// Stream tests.
	BytesSent          int64   `json:"bytes_sent,omitempty"`
	BytesReceived      int64   `json:"bytes_received,omitempty"` // counted by the server
	ThroughputBitsSec  float64 `json:"throughput_bits_per_sec,omitempty"`
	OfferedBitsSec     float64 `json:"offered_bits_per_sec,omitempty"` // UDP: what the sender pushed
	PacketsSent        int64   `json:"packets_sent,omitempty"`
	PacketsReceived    int64   `json:"packets_received,omitempty"`
	LossPercent        float64 `json:"loss_percent,omitempty"`
	PacketsOutOfOrder  int64   `json:"packets_out_of_order,omitempty"`
	ReceiverSecondsRaw float64 `json:"receiver_seconds,omitempty"` // server-side receive interval

	// Request/response tests.
	Transactions int64          `json:"transactions,omitempty"`
	RatePerSec   float64        `json:"rate_per_sec,omitempty"`
	Latency      *stats.Latency `json:"latency,omitempty"`

	// CPU the client process used during the measured interval (getrusage).
	ClientCPUUserSec float64 `json:"client_cpu_user_sec"`
	ClientCPUSysSec  float64 `json:"client_cpu_sys_sec"`
}

// Validate fills defaults and reports the first bad field as a one-line error.
func (o *Options) Validate() error {
	known := false
	for _, t := range Tests {
		if o.Test == t {
			known = true
		}
	}
	if !known {
		return fmt.Errorf("unknown test %q (known: TCP_STREAM, UDP_STREAM, TCP_RR, UDP_RR, TCP_CRR)", o.Test)
	}
	if o.Host == "" {
		return fmt.Errorf("%s: no server host given", o.Test)
	}
	if o.Port == 0 {
		o.Port = DefaultPort[o.Test]
	}
	if o.Port < 1 || o.Port > 65535 {
		return fmt.Errorf("%s: port %d out of range 1..65535", o.Test, o.Port)
	}
	if o.Streams == 0 {
		o.Streams = 1
	}
	if o.Streams < 1 {
		return fmt.Errorf("%s: streams must be at least 1, got %d", o.Test, o.Streams)
	}
	if err := o.RunnerOptions.ValidateWithShare(string(o.Test), o.PortShare); err != nil {
		return err
	}
	if o.MessageSize < 0 {
		return fmt.Errorf("%s: message size must not be negative", o.Test)
	}
	if o.MessageSize == 0 {
		switch o.Test {
		case TCPStream:
			o.MessageSize = 128 << 10
		case UDPStream:
			o.MessageSize = 1400
		default:
			o.MessageSize = 1
		}
	}
	if o.Test == UDPStream && (o.MessageSize < MinUDPStreamSize || o.MessageSize > MaxUDPStreamSize) {
		return fmt.Errorf("UDP_STREAM: message size %d out of range %d..%d", o.MessageSize, MinUDPStreamSize, MaxUDPStreamSize)
	}
	if o.Test == UDPRR && o.MessageSize > MaxUDPRRSize {
		return fmt.Errorf("UDP_RR: message size %d out of range 1..%d", o.MessageSize, MaxUDPRRSize)
	}
	if o.UDPGSO && o.Test != UDPStream {
		return fmt.Errorf("%s: UDP GSO applies to UDP_STREAM only", o.Test)
	}
	if o.RateBitsPerSec < 0 {
		return fmt.Errorf("%s: rate must not be negative", o.Test)
	}
	switch o.Mode {
	case "":
		o.Mode = Blocking
	case Blocking, BusyPoll:
	default:
		return fmt.Errorf("%s: unknown mode %q (blocking or busy-poll)", o.Test, o.Mode)
	}
	return nil
}
