package fortioload

import (
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/stats"
)

// Result is what one fortio run measured, in the HTTP kind's terms
// (requests, errors, rate, latency, client CPU) with fortio's own
// summary beside them (Fortio). Counters cover the measured run only.
type Result struct {
	Options Options `json:"options"` // as run, defaults filled in
	URL     string  `json:"url"`
	// Engine names what measured the row: "fortio v1.63.0" (the module
	// version linked in).
	Engine string `json:"engine"`
	Mode   string `json:"mode"` // "max-rate" or "fixed-qps"
	kinds.RunnerResults
	Conns int `json:"conns"` // fortio's -c
	// Sockets is fortio's count of connections opened or tried, one
	// warm-up request per connection before the measured run included:
	// about Conns with keep-alive, one per request without.
	Sockets int64 `json:"sockets"`

	// Requests is the number of complete responses (any status); OK the
	// 2xx ones. StatusCodes is fortio's count per code, -1 for a socket
	// error (connect failed, reset, closed early, timed out).
	Requests    int64         `json:"requests"`
	OK          int64         `json:"ok"`
	StatusCodes map[int]int64 `json:"status_codes,omitempty"`
	Errors      Errors        `json:"errors"`
	// RPS is Requests / Seconds: responses per second, as the HTTP kind's.
	RPS float64 `json:"rps"`

	// Open loop only (QPS > 0), as the HTTP kind's.
	kinds.OpenLoop

	// Latency is every complete response's duration as fortio's runner
	// measured it (from the call's actual start, its connect included
	// without keep-alive), recorded exactly rather than in fortio's
	// buckets. At a fixed rate fortio does not correct for coordinated
	// omission: a stall delays the next calls, which then catch up, and
	// their latency does not count the wait.
	Latency *stats.Latency `json:"latency"`

	// CPU the process used around the run (fortio's client setup and its
	// warm-up request per connection included), as the HTTP kind's.
	kinds.ClientCPU

	// PortShareNote says the placement's port share was not applied
	// (fortio dials with its own dialer); empty when none was asked.
	PortShareNote string `json:"port_share_note,omitempty"`

	// Fortio is fortio's own summary of the run, as `fortio load` prints it.
	Fortio Summary `json:"fortio"`
}

// Errors counts failed requests within the measured run.
type Errors struct {
	// Socket: calls fortio returned -1 for (connect refused or timed out,
	// connection reset or closed before the full response, read timeout).
	Socket int64 `json:"socket"`
	// Status: complete responses that were not 2xx; also counted in
	// Requests, with their latency, as the HTTP kind does.
	Status int64 `json:"status"`
	Total  int64 `json:"total"`
	// First names the first failure seen ("HTTP 503", "socket error").
	First string `json:"first,omitempty"`
}

// Add counts o's errors into e (a pair's into the aggregate), keeping the
// first failure seen, as the HTTP kind's Errors.Add.
func (e *Errors) Add(o Errors) {
	e.Socket += o.Socket
	e.Status += o.Status
	e.Total += o.Total
	if e.First == "" {
		e.First = o.First
	}
}

// Summary is fortio's own view of the run: its actual QPS (every call,
// failed ones included) and its histogram's statistics and percentiles
// (interpolated in its buckets), in microseconds.
type Summary struct {
	RequestedQPS string       `json:"requested_qps"` // "max" or the rate
	ActualQPS    float64      `json:"actual_qps"`
	Calls        int64        `json:"calls"`
	Errors       int64        `json:"errors"` // calls fortio counts as failed (not 2xx or 418)
	AvgUs        float64      `json:"avg_us"`
	MinUs        float64      `json:"min_us"`
	MaxUs        float64      `json:"max_us"`
	Percentiles  []Percentile `json:"percentiles"`
}

// Percentile is one of fortio's percentiles.
type Percentile struct {
	Percentile float64 `json:"percentile"`
	Us         float64 `json:"us"`
}
