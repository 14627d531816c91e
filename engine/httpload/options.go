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
// are plain JSON-serialisable structs, like the other engines'.
package httpload

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/stats"
)

// Defaults.
const (
	DefaultPort         = 8080
	DefaultConnections  = 64
	DefaultResponseSize = 512
	DefaultTimeout      = 5 * time.Second
	// MissedTargetRatio: an open-loop run whose achieved rate is below this
	// fraction of the target is flagged MissedTarget.
	MissedTargetRatio = 0.98
	// SaturatedUtil: the client is flagged ClientSaturated when its CPU use
	// over the measured interval reaches this fraction of the CPUs it may
	// use.
	SaturatedUtil = 0.90
)

// Limits, so that a typo cannot ask for something absurd.
const (
	maxConnections = 100000
	maxBodySize    = 64 << 20
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

	Duration engine.Duration `json:"duration"`         // measured time, after warmup
	Warmup   engine.Duration `json:"warmup,omitempty"` // run but not counted

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
	Timeout engine.Duration `json:"timeout,omitempty"`
	// Threads is the number of event loops (OS threads, like wrk -t) the
	// connections are spread over. 0: the CPUs the process may use
	// (affinity mask, capped at GOMAXPROCS), at most Connections.
	Threads int `json:"threads,omitempty"`
	// Headers are extra request headers, "Name: value" each.
	Headers []string `json:"headers,omitempty"`
}

// target is the parsed destination of Options.
type target struct {
	host     string // as given (name or IP), without port
	port     int
	path     string
	hostHdr  string // Host header value
	display  string // http://host:port/path, for messages
	hostPort string // host:port as given
}

// Validate fills defaults and reports the first bad field as a one-line
// error.
func (o *Options) Validate() error {
	_, err := o.validate()
	return err
}

// Long on purpose: a flat list of independent checks, one per field, each with its own message.
func (o *Options) validate() (target, error) {
	var t target
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
		t.host = u.Hostname()
		t.port = DefaultPort
		if p := u.Port(); p != "" {
			n, err := strconv.Atoi(p)
			if err != nil {
				return t, fmt.Errorf("httpload: url %q: bad port %q", o.URL, p)
			}
			t.port = n
		}
		t.path = u.RequestURI()
	} else {
		if o.Host == "" {
			return t, fmt.Errorf("httpload: no target: give url or host")
		}
		t.host = o.Host
		t.port = o.Port
		if t.port == 0 {
			t.port = DefaultPort
		}
		t.path = o.Path
		if t.path == "" {
			t.path = "/"
		}
		if t.path[0] != '/' {
			return t, fmt.Errorf("httpload: path %q must start with /", t.path)
		}
	}
	if strings.ContainsAny(t.path, " \r\n") {
		return t, fmt.Errorf("httpload: path %q contains spaces or line breaks", t.path)
	}
	if t.port < 1 || t.port > 65535 {
		return t, fmt.Errorf("httpload: port %d out of range 1..65535", t.port)
	}
	t.hostPort = net.JoinHostPort(t.host, strconv.Itoa(t.port))
	t.hostHdr = t.hostPort
	if t.port == 80 {
		t.hostHdr = t.host
		if strings.Contains(t.host, ":") {
			t.hostHdr = "[" + t.host + "]"
		}
	}
	t.display = "http://" + t.hostPort + t.path

	if o.Duration <= 0 {
		return t, fmt.Errorf("httpload: duration must be positive, got %s", time.Duration(o.Duration))
	}
	if o.Warmup < 0 {
		return t, fmt.Errorf("httpload: warmup must not be negative, got %s", time.Duration(o.Warmup))
	}
	if o.Connections == 0 {
		o.Connections = DefaultConnections
	}
	if o.Connections < 1 || o.Connections > maxConnections {
		return t, fmt.Errorf("httpload: connections must be in 1..%d, got %d", maxConnections, o.Connections)
	}
	if o.QPS < 0 || math.IsNaN(o.QPS) || math.IsInf(o.QPS, 0) {
		return t, fmt.Errorf("httpload: qps must be 0 (max rate) or a positive rate, got %v", o.QPS)
	}
	if o.RequestSize < 0 || o.RequestSize > maxBodySize {
		return t, fmt.Errorf("httpload: request size must be in 0..%d, got %d", maxBodySize, o.RequestSize)
	}
	if o.Threads < 0 || o.Threads > 1024 {
		return t, fmt.Errorf("httpload: threads must be in 0..1024, got %d", o.Threads)
	}
	if o.Timeout < 0 {
		return t, fmt.Errorf("httpload: timeout must not be negative, got %s", time.Duration(o.Timeout))
	}
	if o.Timeout == 0 {
		o.Timeout = engine.Duration(DefaultTimeout)
	}
	for _, h := range o.Headers {
		name, _, ok := strings.Cut(h, ":")
		if !ok || name == "" || strings.ContainsAny(h, "\r\n") || strings.ContainsAny(name, " \t") {
			return t, fmt.Errorf("httpload: bad header %q (want \"Name: value\")", h)
		}
		switch strings.ToLower(name) {
		case "host", "content-length", "connection", "transfer-encoding":
			return t, fmt.Errorf("httpload: header %q is set by the engine", name)
		}
	}
	return t, nil
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

// Result is what one client run measured. Counters cover the measured
// interval only (warmup excluded): a request counts when its response (or
// its failure) comes within the interval.
type Result struct {
	Options  Options   `json:"options"`  // as run, defaults filled in
	URL      string    `json:"url"`      // the target, http://host:port/path
	Address  string    `json:"address"`  // the IP:port connected to
	Mode     string    `json:"mode"`     // "max-rate" or "fixed-qps"
	Start    time.Time `json:"start"`    // start of the measured interval
	End      time.Time `json:"end"`      // end of the measured interval
	Seconds  float64   `json:"seconds"`  // measured interval length
	Conns    int       `json:"conns"`    // concurrency (Options.Connections)
	Connects int64     `json:"connects"` // connections opened in the interval

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

	// Open loop only (QPS > 0). TargetQPS is Options.QPS; AchievedRatio is
	// RPS / TargetQPS. MissedTarget is set when AchievedRatio is below
	// MissedTargetRatio (0.98): the client, the server or the path could
	// not keep up, and MissedByPercent says by how much,
	// 100 × (1 − AchievedRatio).
	TargetQPS       float64 `json:"target_qps,omitempty"`
	AchievedRatio   float64 `json:"achieved_ratio,omitempty"`
	MissedTarget    bool    `json:"missed_target"`
	MissedByPercent float64 `json:"missed_by_percent,omitempty"`

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

	// CPU the client process used during the measured interval
	// (getrusage(RUSAGE_SELF): with a Server in the same process, the
	// server's CPU is included).
	ClientCPUUserSec float64 `json:"client_cpu_user_sec"`
	ClientCPUSysSec  float64 `json:"client_cpu_sys_sec"`
	// ClientCPUs is the number of CPUs the client could use: the CPUs in
	// its affinity mask (sched_getaffinity), capped at GOMAXPROCS.
	ClientCPUs int `json:"client_cpus"`
	// ClientCPUUtil is (user + sys) / (Seconds × ClientCPUs).
	ClientCPUUtil float64 `json:"client_cpu_util"`
	// ClientSaturated is ClientCPUUtil ≥ SaturatedUtil (0.90): the client
	// used (nearly) all the CPU it had, so the rate may be the client's
	// limit rather than the server's or the datapath's.
	ClientSaturated bool `json:"client_saturated"`
}
