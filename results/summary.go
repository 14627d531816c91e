package results

import (
	"sort"

	"github.com/cnibench/cnibench/stats"
)

// Summary condenses a Result's samples: medians across rounds for rates and
// throughput, and one merged histogram for latency (never averaged
// percentiles).
type Summary struct {
	Samples         int            `json:"samples"`
	Failed          int            `json:"failed"`
	ThroughputBits  float64        `json:"throughput_bits_per_sec,omitempty"` // median
	OfferedBits     float64        `json:"offered_bits_per_sec,omitempty"`    // median
	LossPercent     float64        `json:"loss_percent,omitempty"`            // median
	RatePerSec      float64        `json:"rate_per_sec,omitempty"`            // median
	Latency         *stats.Latency `json:"latency,omitempty"`                 // merged
	ClientCPUPerOp  float64        `json:"client_cpu_us_per_op,omitempty"`    // µs CPU per transaction, RR tests
	ServerCPUPerOp  float64        `json:"server_cpu_us_per_op,omitempty"`
	ClientCPUPerGB  float64        `json:"client_cpu_sec_per_gbyte,omitempty"` // CPU seconds per GB delivered, stream tests
	ServerCPUPerGB  float64        `json:"server_cpu_sec_per_gbyte,omitempty"`
	IsRequestReply  bool           `json:"is_request_reply"`
	FirstSampleErr  string         `json:"first_error,omitempty"`
	TotalOperations int64          `json:"total_operations,omitempty"`
	// HTTP tests: samples whose client used (nearly) all its CPU, so the
	// rate may be the client's limit; and, at a fixed QPS, samples that
	// missed the target rate with the median shortfall.
	ClientSaturated int     `json:"client_saturated_samples,omitempty"`
	MissedTarget    int     `json:"missed_target_samples,omitempty"`
	MissedByPercent float64 `json:"missed_by_percent,omitempty"` // median over samples that missed
}

// Summarize computes a Result's Summary.
func Summarize(r Result) (Summary, error) {
	var s Summary
	var tput, offered, loss, rate, missed []float64
	var lats []*stats.Latency
	var ccpu, scpu float64
	var ops int64
	var bytes float64
	for _, smp := range r.Samples {
		s.Samples++
		if ld, ok := asLoad(smp); ok && smp.Error == "" {
			s.IsRequestReply = true
			rate = append(rate, ld.Rate)
			if ld.Latency != nil {
				lats = append(lats, ld.Latency)
			}
			ops += ld.Ops
			f := measuredShare(smp, ld.Seconds)
			ccpu += smp.ClientCPUSec * f
			scpu += smp.ServerCPUSec * f
			if ld.ClientSaturated {
				s.ClientSaturated++
			}
			if ld.MissedTarget {
				s.MissedTarget++
				missed = append(missed, ld.MissedByPercent)
			}
			continue
		}
		e, ok := asEngine(smp)
		if smp.Error != "" || !ok {
			s.Failed++
			if s.FirstSampleErr == "" {
				s.FirstSampleErr = smp.Error
			}
			continue
		}
		// The cgroup CPU spans the whole sample (warmup, setup); scale it to
		// the measured interval, assuming steady load throughout.
		f := measuredShare(smp, e.Seconds)
		ccpu += smp.ClientCPUSec * f
		scpu += smp.ServerCPUSec * f
		if e.Latency != nil && e.Transactions > 0 {
			s.IsRequestReply = true
			rate = append(rate, e.RatePerSec)
			lats = append(lats, e.Latency)
			ops += e.Transactions
			continue
		}
		tput = append(tput, e.ThroughputBitsSec)
		bytes += float64(e.BytesReceived)
		if e.PacketsSent > 0 {
			offered = append(offered, e.OfferedBitsSec)
			loss = append(loss, e.LossPercent)
		}
	}
	s.ThroughputBits = Median(tput)
	s.OfferedBits = Median(offered)
	s.LossPercent = Median(loss)
	s.RatePerSec = Median(rate)
	s.MissedByPercent = Median(missed)
	s.TotalOperations = ops
	if len(lats) > 0 {
		l, err := stats.Merge(lats...)
		if err != nil {
			return s, err
		}
		s.Latency = l
	}
	if ops > 0 {
		s.ClientCPUPerOp = ccpu * 1e6 / float64(ops)
		s.ServerCPUPerOp = scpu * 1e6 / float64(ops)
	}
	if bytes > 0 {
		s.ClientCPUPerGB = ccpu / (bytes / 1e9)
		s.ServerCPUPerGB = scpu / (bytes / 1e9)
	}
	return s, nil
}

// Median of xs (0 for none); xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	c := append([]float64(nil), xs...)
	sort.Float64s(c)
	m := len(c) / 2
	if len(c)%2 == 1 {
		return c[m]
	}
	return (c[m-1] + c[m]) / 2
}
