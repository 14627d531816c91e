package churn

import (
	"fmt"
	"time"

	"github.com/cnibench/cnibench/stats"
)

// Result is what one churn window (Start to Stop) did and measured.
// Latencies keeps every change's programming latency, so a report can pool
// windows; the percentiles are this window's.
type Result struct {
	Datapath string `json:"datapath"`
	// Partial says the datapath synced only what changed (kube-proxy's
	// partial syncs, Cilium's per-change updates); MinSync is the sync
	// loop's minimum interval.
	Partial bool          `json:"partial_syncs"`
	MinSync time.Duration `json:"min_sync_interval_ns"`
	// Elapsed is the window in which changes were made (Start to Stop);
	// Span runs on until the last of them was synced: the time syncs and
	// sync CPU are counted over.
	Elapsed time.Duration `json:"elapsed_ns"`
	Span    time.Duration `json:"span_ns"`

	Requested float64 `json:"requested_rate"` // changes per second asked for
	Made      int     `json:"changes_made"`
	Achieved  float64 `json:"achieved_rate"` // Made / Elapsed
	// Held are the changes confirmed in every node's kernel; Pending were
	// made but not yet confirmed when the window closed (the next window's
	// first sync carries them, and they are not counted in Latencies).
	Held    int `json:"changes_held"`
	Pending int `json:"changes_pending"`
	// Carried are changes an earlier window left pending that this
	// window's first sync held (not in Held or the latencies).
	Carried int          `json:"changes_carried,omitempty"`
	Kinds   map[Kind]int `json:"kinds"`
	// ShortBy says why Achieved fell short of Requested by more than 10%,
	// from MaxLate: how late the generator made its latest change.
	ShortBy string        `json:"short_by,omitempty"`
	MaxLate time.Duration `json:"max_late_ns"`

	// LatenciesMs is, per change held, the time from the change being
	// made until the first sync that carried it was held by every node's
	// kernel (Program returned; for an asynchronous datapath, its wait).
	LatenciesMs []float64 `json:"programming_latency_ms"`
	// Start is when the window began and ChangesAtMs, per change held (as
	// LatenciesMs), when it was made, in ms from Start: a report's
	// timeline puts them beside the traffic's.
	Start       time.Time `json:"start,omitzero"`
	ChangesAtMs []float64 `json:"changes_at_ms,omitempty"`
	P50Ms       float64   `json:"programming_latency_p50_ms"`
	P99Ms       float64   `json:"programming_latency_p99_ms"`
	MaxMs       float64   `json:"programming_latency_max_ms"`

	// Confirmed: after the window, a read-back of every node's datapath
	// found exactly the last spec synced (a failure is in FirstError).
	Confirmed bool `json:"confirmed"`

	Syncs    int `json:"syncs"`
	Failures int `json:"sync_failures"`
	// FirstError is the first failed sync's error.
	FirstError string `json:"first_error,omitempty"`
	// SyncCPU is the CPU the syncs used (this process and the restore
	// tools it ran, while Program ran); per held change in SyncCPUPerChange.
	SyncCPU          time.Duration `json:"sync_cpu_ns"`
	SyncCPUPerChange time.Duration `json:"sync_cpu_per_change_ns"`
	// SyncTime and VerifyTime are the wall time spent in Program and in
	// reading the datapath back (measurement, not the proxy's work: after
	// the window, and after each sync of an asynchronous datapath).
	SyncTime   time.Duration `json:"sync_time_ns"`
	VerifyTime time.Duration `json:"verify_time_ns"`
}

// summarise fills the derived fields.
func (r *Result) summarise() {
	if s := r.Elapsed.Seconds(); s > 0 {
		r.Achieved = float64(r.Made) / s
	}
	if r.Requested > 0 && r.Achieved < 0.9*r.Requested && r.ShortBy == "" {
		interval := time.Duration(float64(time.Second) / r.Requested)
		if r.MaxLate > interval {
			r.ShortBy = fmt.Sprintf("the generator fell up to %s behind its schedule (a change every %s): the machine was too busy", r.MaxLate.Round(time.Millisecond), interval)
		} else {
			r.ShortBy = fmt.Sprintf("the window (%s) was too short for the rate: %d changes, the last interval cut off", r.Elapsed.Round(time.Millisecond), r.Made)
		}
	}
	if len(r.LatenciesMs) > 0 {
		r.P50Ms = stats.Quantile(r.LatenciesMs, 0.50)
		r.P99Ms = stats.Quantile(r.LatenciesMs, 0.99)
		r.MaxMs = stats.Quantile(r.LatenciesMs, 1)
	}
	if r.Held > 0 {
		r.SyncCPUPerChange = r.SyncCPU / time.Duration(r.Held)
	}
}
