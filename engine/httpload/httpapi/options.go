// Package httpapi holds the types of package httpload that cross process
// and file boundaries: the Options the agent receives over its control API,
// the Result it returns and results.json stores, their defaults and their
// validation. It imports only the standard library, stats and engineapi
// (for Duration), so that results and report can read and write them
// without linking the engine; httpload re-exports every name.
package httpapi

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/engine/engineapi"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/stats"
)

// Defaults.
const (
	DefaultPort        = 8080
	DefaultConnections = 64
	DefaultTimeout     = 5 * time.Second
	// MissedTargetRatio: an open-loop run whose achieved rate is below this
	// fraction of the target is flagged MissedTarget.
	MissedTargetRatio = 0.98
	// SaturatedUtil: the client is flagged ClientSaturated when its CPU use
	// over the measured interval reaches this fraction of the CPUs it may
	// use.
	SaturatedUtil = 0.90
)

// Limits, so that a typo cannot ask for something absurd. MaxBodySize
// also bounds the server's response size.
const (
	maxConnections = 100000
	MaxBodySize    = 64 << 20
)

// Options configures one client run. The target is URL, or Host (+ Port,
// Path) when URL is empty.
type Options struct {
	// URL is the full target, "http://host[:port][/path]". Only plain
	// http is supported.
	URL  string `json:"url,omitempty"`
	Host string `json:"host,omitempty"` // server address (IP or name), when URL is empty
	Port int    `json:"port,omitempty"` // with Host; 0: DefaultPort (8080)
	Path string `json:"path,omitempty"` // with Host; default "/"

	kinds.RunnerOptions // measured time, warm-up

	// Connections is the concurrency c: the number of connections (each
	// with one request outstanding at a time) for keep-alive, or of
	// concurrent connect-request-close loops for short connections.
	// 0: DefaultConnections (64).
	Connections int `json:"connections,omitempty"`
	// KeepAlive reuses each connection for many requests. False is "short
	// connection" mode: every request opens a new connection, sends
	// "Connection: close", reads the full response and closes; its latency
	// then includes the connect.
	KeepAlive bool `json:"keep_alive"`
	// QPS is the total target rate. 0 runs at max rate in a closed loop
	// (each connection sends its next request as soon as the previous
	// response is in). > 0 runs an open loop: requests are scheduled at
	// fixed intended send times, QPS/Connections per connection, and
	// latency is measured from the intended send time (see Result.Latency).
	QPS float64 `json:"qps,omitempty"`
	// RequestSize is the request body size: 0 sends GET, > 0 sends POST
	// with that many bytes of body.
	RequestSize int `json:"request_size,omitempty"`
	// Timeout bounds one request (including its connect in short-connection
	// mode). 0: DefaultTimeout (5s).
	Timeout engineapi.Duration `json:"timeout,omitempty"`
	// Threads is the number of event loops (OS threads, like wrk -t) the
	// connections are spread over. 0: the CPUs the process may use
	// (affinity mask, capped at GOMAXPROCS), at most Connections.
	Threads int `json:"threads,omitempty"`
	// Headers are extra request headers, "Name: value" each.
	Headers []string `json:"headers,omitempty"`
	// PortShare takes the client's local ports from one share of its
	// namespace's ephemeral range (see engineapi.PortShare); nil: all of it.
	PortShare *engineapi.PortShare `json:"port_share,omitempty"`
}

// Target is the parsed destination of Options.
type Target struct {
	Host       string // as given (name or IP), without port
	Port       int
	Path       string
	HostHeader string // Host header value
	Display    string // http://host:port/path, for messages
	HostPort   string // host:port as given
}

// Validate fills defaults and reports the first bad field as a one-line
// error.
func (o *Options) Validate() error {
	_, err := o.ValidateTarget()
	return err
}

// ValidateTarget is Validate that also returns the parsed destination,
// for the client that connects to it.
func (o *Options) ValidateTarget() (Target, error) {
	t, err := o.target()
	if err != nil {
		return t, err
	}
	return t, o.validateRest()
}

// target parses the destination: URL, or Host, Port and Path.
func (o *Options) target() (Target, error) {
	var t Target
	if o.URL != "" {
		u, err := url.Parse(o.URL)
		if err != nil {
			return t, fmt.Errorf("httpload: bad url %q: %v", o.URL, unwrapURLErr(err))
		}
		if u.Scheme != "http" {
			return t, fmt.Errorf("httpload: url %q: only http:// is supported", o.URL)
		}
		if u.Hostname() == "" {
			return t, fmt.Errorf("httpload: url %q has no host", o.URL)
		}
		if u.User != nil || u.Fragment != "" {
			return t, fmt.Errorf("httpload: url %q: user info and fragments are not supported", o.URL)
		}
		t.Host = u.Hostname()
		t.Port = DefaultPort
		if p := u.Port(); p != "" {
			n, err := strconv.Atoi(p)
			if err != nil {
				return t, fmt.Errorf("httpload: url %q: bad port %q", o.URL, p)
			}
			t.Port = n
		}
		t.Path = u.RequestURI()
	} else {
		if o.Host == "" {
			return t, fmt.Errorf("httpload: no target: give url or host")
		}
		t.Host = o.Host
		t.Port = o.Port
		if t.Port == 0 {
			t.Port = DefaultPort
		}
		t.Path = o.Path
		if t.Path == "" {
			t.Path = "/"
		}
		if t.Path[0] != '/' {
			return t, fmt.Errorf("httpload: path %q must start with /", t.Path)
		}
	}
	if strings.ContainsAny(t.Path, " \r\n") {
		return t, fmt.Errorf("httpload: path %q contains spaces or line breaks", t.Path)
	}
	if t.Port < 1 || t.Port > 65535 {
		return t, fmt.Errorf("httpload: port %d out of range 1..65535", t.Port)
	}
	t.HostPort = net.JoinHostPort(t.Host, strconv.Itoa(t.Port))
	t.HostHeader = t.HostPort
	if t.Port == 80 {
		t.HostHeader = t.Host
		if strings.Contains(t.Host, ":") {
			t.HostHeader = "[" + t.Host + "]"
		}
	}
	t.Display = "http://" + t.HostPort + t.Path
	return t, nil
}

// validateRest checks and defaults every field but the destination.
func (o *Options) validateRest() error {
	if err := o.RunnerOptions.ValidateWithShare("httpload", o.PortShare); err != nil {
		return err
	}
	if err := kinds.ValidateCount("httpload", "connections", &o.Connections, DefaultConnections, maxConnections); err != nil {
		return err
	}
	if err := kinds.ValidateRate("httpload", o.QPS); err != nil {
		return err
	}
	if o.RequestSize < 0 || o.RequestSize > MaxBodySize {
		return fmt.Errorf("httpload: request size must be in 0..%d, got %d", MaxBodySize, o.RequestSize)
	}
	if o.Threads < 0 || o.Threads > 1024 {
		return fmt.Errorf("httpload: threads must be in 0..1024, got %d", o.Threads)
	}
	if err := kinds.ValidateTimeout("httpload", &o.Timeout, DefaultTimeout); err != nil {
		return err
	}
	for _, h := range o.Headers {
		name, _, ok := strings.Cut(h, ":")
		if !ok || name == "" || strings.ContainsAny(h, "\r\n") || strings.ContainsAny(name, " \t") {
			return fmt.Errorf("httpload: bad header %q (want \"Name: value\")", h)
		}
		switch strings.ToLower(name) {
		case "host", "content-length", "connection", "transfer-encoding":
			return fmt.Errorf("httpload: header %q is set by the engine", name)
		}
	}
	return nil
}

func unwrapURLErr(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// Errors counts failed requests by kind, within the measured interval.
type Errors struct {
	// Connect: connection attempts that failed (refused, unreachable, or
	// not established within Timeout).
	Connect int64 `json:"connect"`
	// Timeout: requests without a complete response within Timeout.
	Timeout int64 `json:"timeout"`
	// Status: complete responses whose status was not 200. They are also
	// counted in Result.Requests and their latencies recorded (as wrk and
	// fortio do).
	Status int64 `json:"status"`
	// ShortRead: the connection closed or reset before the full response
	// (or the request could not be written).
	ShortRead int64 `json:"short_read"`
	// Protocol: responses that were not valid HTTP/1.x.
	Protocol int64 `json:"protocol"`
	// Total is the sum of the above.
	Total int64 `json:"total"`
	// First is the first error message seen, for diagnosis.
	First string `json:"first,omitempty"`
}

// Add counts o's errors into e (a worker's into a run's, a pair's into the
// aggregate), keeping the first message seen.
func (e *Errors) Add(o Errors) {
	e.Connect += o.Connect
	e.Timeout += o.Timeout
	e.Status += o.Status
	e.ShortRead += o.ShortRead
	e.Protocol += o.Protocol
	e.Total += o.Total
	if e.First == "" {
		e.First = o.First
	}
}

// Result is what one client run measured. Counters cover the measured
// interval only (warmup excluded): a request counts when its response (or
// its failure) comes within the interval.
type Result struct {
	Options Options `json:"options"` // as run, defaults filled in
	URL     string  `json:"url"`     // the target, http://host:port/path
	Address string  `json:"address"` // the IP:port connected to
	Mode    string  `json:"mode"`    // "max-rate" or "fixed-qps"
	kinds.RunnerResults
	Conns    int   `json:"conns"`    // concurrency (Options.Connections)
	Connects int64 `json:"connects"` // connections opened in the interval
	// LocalPorts and PortShareNote: as engineapi.Result's.
	LocalPorts    string `json:"local_ports,omitempty"`
	PortShareNote string `json:"port_share_note,omitempty"`

	// Requests is the number of complete responses (any status).
	Requests int64 `json:"requests"`
	// OK is the number of complete responses with status 200.
	OK int64 `json:"ok"`
	// StatusCodes counts complete responses by status code.
	StatusCodes map[int]int64 `json:"status_codes,omitempty"`
	Errors      Errors        `json:"errors"`
	// RPS is Requests / Seconds: completed responses per second.
	RPS           float64 `json:"rps"`
	BytesSent     int64   `json:"bytes_sent"`     // request bytes written
	BytesReceived int64   `json:"bytes_received"` // response bytes read (headers and body)

	// Open loop only (QPS > 0): TargetQPS is Options.QPS, the achieved
	// rate is RPS.
	kinds.OpenLoop

	// Latency is the request latency corrected for coordinated omission:
	// in an open loop, from the request's intended send time on the
	// schedule to the end of its response, so a stall counts against every
	// request it delayed (as wrk2 and HdrHistogram's correction do). In a
	// closed loop there is no schedule: it is the same as
	// LatencyUncorrected. In short-connection mode it includes the
	// connect.
	Latency *stats.Latency `json:"latency"`
	// LatencyUncorrected is measured from the actual send time (or connect
	// start) to the end of the response, as a closed-loop tool would.
	LatencyUncorrected *stats.Latency `json:"latency_uncorrected"`

	kinds.ClientCPU

	// Timeline is the measured interval in buckets, to plot against what
	// happened meanwhile (a churn's changes and syncs).
	Timeline *Timeline `json:"timeline,omitempty"`
}

// Timeline is a measured interval cut in buckets of BucketMs from its
// start: requests completed and failed in each, and the p99 of the
// completed ones' (corrected) latency, at 2 significant digits (0 where
// none completed).
type Timeline struct {
	BucketMs float64   `json:"bucket_ms"`
	Requests []int64   `json:"requests"`
	Errors   []int64   `json:"errors"`
	P99Ms    []float64 `json:"p99_ms"`
}
