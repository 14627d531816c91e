// Package dnsapi holds the types of package dnsload that cross process
// and file boundaries: the Options the agent receives over its control API,
// the Result it returns and results.json stores, their defaults and their
// validation. It imports only the standard library, stats and engineapi
// (for Duration), so that results and report can read and write them
// without linking the engine; dnsload re-exports every name.
package dnsapi

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/cnibench/cnibench/engine/engineapi"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/stats"
)

// Defaults.
const (
	DefaultPort = 53
	// DefaultNameFormat and DefaultNames are the names a default client
	// queries and a default server answers: svc-0 .. svc-999, shaped like
	// Kubernetes Service names.
	DefaultNameFormat = "svc-%d.default.svc.cluster.local"
	DefaultNames      = 1000
	// DefaultOutstanding is the number of queries in flight in a closed
	// loop (dnsperf's -q default); DefaultOpenOutstanding is the cap in an
	// open loop, meant never to bind.
	DefaultOutstanding     = 100
	DefaultOpenOutstanding = 1000
	DefaultTimeout         = time.Second
	// MissedTargetRatio: an open-loop run whose achieved rate is below this
	// fraction of the target is flagged MissedTarget.
	MissedTargetRatio = 0.98
	// SaturatedUtil: the client is flagged ClientSaturated when its CPU use
	// over the measured interval reaches this fraction of the CPUs it may
	// use.
	SaturatedUtil = 0.90
)

// Limits, so that a typo cannot ask for something absurd. Each event loop
// has 65536 query IDs; MaxOutstanding keeps most of them free, so that an
// ID is reused long after its last answer (or timeout) was due.
const (
	MaxOutstanding = 16384
	maxNames       = 1 << 20
	maxThreads     = 1024
)

// Options configures one client run.
type Options struct {
	// Server is the DNS server's IP address (v4 or v6).
	Server string `json:"server"`
	// Port is the server's UDP port. 0: DefaultPort (53).
	Port int `json:"port,omitempty"`

	// Names are the names queried (A records), cycled through in order.
	// When empty, NameFormat and NameCount generate them:
	// fmt.Sprintf(NameFormat, i) for i in 0..NameCount-1.
	Names []string `json:"names,omitempty"`
	// NameFormat has exactly one %d. "": DefaultNameFormat (ignored when
	// Names is set).
	NameFormat string `json:"name_format,omitempty"`
	// NameCount is the number of generated names. 0: DefaultNames (1000),
	// the names a default Server answers.
	NameCount int `json:"name_count,omitempty"`

	kinds.RunnerOptions // measured time, warm-up

	// QPS is the total target rate. 0 runs at max rate in a closed loop:
	// Outstanding queries are always in flight, each answer (or timeout)
	// sending the next. > 0 runs an open loop: queries are sent at fixed
	// intended times, QPS/Threads per event loop, and latency is measured
	// from the intended send time (see Result.Latency).
	QPS float64 `json:"qps,omitempty"`
	// Outstanding is the number of queries in flight in a closed loop
	// (0: DefaultOutstanding, 100), and their cap in an open loop (0:
	// DefaultOpenOutstanding, 1000): when the cap binds, sends wait and
	// fall behind the schedule, which the corrected latency shows.
	Outstanding int `json:"outstanding,omitempty"`
	// Timeout is how long a query waits for its answer before it counts as
	// lost (Errors.Timeout, never as latency). 0: DefaultTimeout (1s).
	Timeout engineapi.Duration `json:"timeout,omitempty"`
	// Threads is the number of event loops (OS threads), each with its own
	// socket and source port. 0: the CPUs the process may use (affinity
	// mask, capped at GOMAXPROCS), at most Outstanding. More loops than
	// that share CPUs through Go's scheduler, and open-loop send times
	// lose precision.
	Threads int `json:"threads,omitempty"`
}

// Validate fills defaults and reports the first bad field as a one-line
// error.
func (o *Options) Validate() error {
	_, err := o.ValidateAddr()
	return err
}

// ValidateAddr is Validate that also returns the server's address, for
// the client that sends to it.
func (o *Options) ValidateAddr() (netip.AddrPort, error) {
	var ap netip.AddrPort
	if o.Server == "" {
		return ap, fmt.Errorf("dnsload: no server: give the DNS server's IP address")
	}
	ip, err := netip.ParseAddr(strings.Trim(o.Server, "[]"))
	if err != nil || ip.Zone() != "" {
		return ap, fmt.Errorf("dnsload: server %q is not an IP address", o.Server)
	}
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.Port < 1 || o.Port > 65535 {
		return ap, fmt.Errorf("dnsload: port %d out of range 1..65535", o.Port)
	}
	ap = netip.AddrPortFrom(ip.Unmap(), uint16(o.Port))

	if len(o.Names) == 0 {
		if o.NameFormat == "" {
			o.NameFormat = DefaultNameFormat
		}
		if err := CheckNameFormat(o.NameFormat); err != nil {
			return ap, err
		}
		if err := kinds.ValidateCount("dnsload", "name count", &o.NameCount, DefaultNames, maxNames); err != nil {
			return ap, err
		}
	} else if len(o.Names) > maxNames {
		return ap, fmt.Errorf("dnsload: at most %d names, got %d", maxNames, len(o.Names))
	}

	if err := o.RunnerOptions.Validate("dnsload"); err != nil {
		return ap, err
	}
	if err := kinds.ValidateRate("dnsload", o.QPS); err != nil {
		return ap, err
	}
	if o.Outstanding == 0 {
		o.Outstanding = DefaultOutstanding
		if o.QPS > 0 {
			o.Outstanding = DefaultOpenOutstanding
		}
	}
	if o.Outstanding < 1 || o.Outstanding > MaxOutstanding {
		return ap, fmt.Errorf("dnsload: outstanding must be in 1..%d, got %d", MaxOutstanding, o.Outstanding)
	}
	if err := kinds.ValidateTimeout("dnsload", &o.Timeout, DefaultTimeout); err != nil {
		return ap, err
	}
	if o.Threads < 0 || o.Threads > maxThreads {
		return ap, fmt.Errorf("dnsload: threads must be in 0..%d, got %d", maxThreads, o.Threads)
	}
	return ap, nil
}

// QueryNames returns the names to query, generated from NameFormat when
// Names is empty; o must be validated.
func (o *Options) QueryNames() []string {
	if len(o.Names) > 0 {
		return o.Names
	}
	out := make([]string, o.NameCount)
	for i := range out {
		out[i] = fmt.Sprintf(o.NameFormat, i)
	}
	return out
}

// CheckNameFormat accepts a name format with exactly one %d and no other
// verb (the server's ServerSpec checks its own with it too).
func CheckNameFormat(f string) error {
	if strings.Count(f, "%") != 1 || !strings.Contains(f, "%d") {
		return fmt.Errorf("dnsload: name format %q must contain exactly one %%d and no other %%", f)
	}
	return nil
}

// Errors counts failed queries and odd packets, within the measured
// interval. Every query sent ends one way: a response (Result.Responses:
// OK, Rcode or NoAnswer), a Timeout, or a Send error. The last four
// counters are packets or events that end no query and are not in Total.
type Errors struct {
	// Timeout: queries without a response within Options.Timeout: lost.
	// Never recorded as latency.
	Timeout int64 `json:"timeout"`
	// Rcode: responses whose RCODE is not NOERROR (Result.Rcodes has them
	// by code). They count in Result.Responses and their latency is
	// recorded, as dnsperf does.
	Rcode int64 `json:"rcode"`
	// NoAnswer: NOERROR responses without an A record (NODATA).
	NoAnswer int64 `json:"no_answer"`
	// Send: queries that could not be sent (the socket refused them).
	Send int64 `json:"send"`
	// Total is Timeout + Rcode + NoAnswer + Send.
	Total int64 `json:"total"`

	// Late: answers that came after their query had timed out.
	Late int64 `json:"late"`
	// Stray: responses matching no query in flight (unknown ID, or a
	// question that is not the query's).
	Stray int64 `json:"stray"`
	// Malformed: packets that are not DNS responses or do not parse.
	Malformed int64 `json:"malformed"`
	// ICMP: errors the kernel reported on the sockets, such as "port
	// unreachable" (ECONNREFUSED) when nothing listens on the server port.
	// The queries concerned end as timeouts.
	ICMP int64 `json:"icmp"`

	// First is the first error seen, in one line, for diagnosis.
	First string `json:"first,omitempty"`
}

// Add counts o's errors into e (a pair's into the aggregate), keeping the
// first message seen, as the HTTP kind's Errors.Add.
func (e *Errors) Add(o Errors) {
	e.Timeout += o.Timeout
	e.Rcode += o.Rcode
	e.NoAnswer += o.NoAnswer
	e.Send += o.Send
	e.Total += o.Total
	e.Late += o.Late
	e.Stray += o.Stray
	e.Malformed += o.Malformed
	e.ICMP += o.ICMP
	if e.First == "" {
		e.First = o.First
	}
}

// Result is what one client run measured. Counters cover the measured
// interval only (warmup excluded): a query counts as sent when it is sent
// within the interval, and as answered (or lost) when its response (or
// its timeout) comes within the interval.
type Result struct {
	Options Options `json:"options"` // as run, defaults filled in
	Address string  `json:"address"` // the server, IP:port
	Mode    string  `json:"mode"`    // "max-rate" or "fixed-qps"
	kinds.RunnerResults
	Outstanding int `json:"outstanding"` // Options.Outstanding
	Threads     int `json:"threads"`     // event loops (= sockets) used
	Names       int `json:"names"`       // distinct names cycled through

	// Sent is the number of queries sent.
	Sent int64 `json:"sent"`
	// Responses is the number of responses to queries in flight, within
	// Timeout, whatever their RCODE.
	Responses int64 `json:"responses"`
	// OK is the number of NOERROR responses with at least one A record.
	OK int64 `json:"ok"`
	// Rcodes counts Responses by RCODE name ("NOERROR", "NXDOMAIN",
	// "SERVFAIL", "REFUSED", ... or "RCODE<n>").
	Rcodes map[string]int64 `json:"rcodes,omitempty"`
	Errors Errors           `json:"errors"`
	// QPS is Responses / Seconds: answered queries per second.
	QPS float64 `json:"qps"`
	// LossPercent is 100 × Errors.Timeout / (Responses + Errors.Timeout).
	LossPercent   float64 `json:"loss_percent"`
	BytesSent     int64   `json:"bytes_sent"`     // query bytes (DNS payload)
	BytesReceived int64   `json:"bytes_received"` // response bytes (DNS payload) of Responses

	// Open loop only (QPS > 0): TargetQPS is Options.QPS, the achieved
	// rate is QPS (lost queries count against it).
	kinds.OpenLoop

	// Latency is the query latency corrected for coordinated omission: in
	// an open loop, from the query's intended send time on the schedule to
	// the arrival of its response, so a stall counts against every query
	// it delayed. In a closed loop there is no schedule: it is the same as
	// LatencyUncorrected. Only Responses are recorded, never timeouts.
	Latency *stats.Latency `json:"latency"`
	// LatencyUncorrected is measured from the actual send to the response.
	LatencyUncorrected *stats.Latency `json:"latency_uncorrected"`

	kinds.ClientCPU
}
