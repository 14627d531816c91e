package churn

import (
	"fmt"
	"time"

	"github.com/cnibench/cnibench/datapath"
)

// Defaults, as the Done-when asks: 1,000 Services × 4 endpoints,
// 10 changes a second.
const (
	DefaultServices  = 1000
	DefaultEndpoints = 4
	DefaultRate      = 10.0
	// NetfilterMinSync is kube-proxy's default minimum sync interval.
	NetfilterMinSync = time.Second
	maxRate          = 1000.0
	maxServices      = 100_000
)

// Options of a churn. The zero value asks for the defaults.
type Options struct {
	// Services are the dummy Services kept programmed beside the test
	// Services, each with Endpoints endpoints; the churn changes them.
	Services  int `json:"services"`
	Endpoints int `json:"endpoints_per_service"`
	// Rate is the churn requested, in changes per second.
	Rate float64 `json:"rate"`
	// MinSync is the sync loop's minimum interval between syncs; nil
	// takes the datapath's Service proxy's default (NetfilterMinSync for
	// the netfilter datapaths, 0 for eBPF: a sync per change).
	MinSync *time.Duration `json:"min_sync_interval,omitempty"`
}

// Validate fills defaults and names the first bad value.
func (o *Options) Validate() error {
	if o.Services == 0 {
		o.Services = DefaultServices
	}
	if o.Endpoints == 0 {
		o.Endpoints = DefaultEndpoints
	}
	if o.Rate == 0 {
		o.Rate = DefaultRate
	}
	switch {
	case o.Services < 2 || o.Services > maxServices:
		return fmt.Errorf("--churn-services must be in 2..%d, got %d", maxServices, o.Services)
	case o.Endpoints < 2 || o.Endpoints > 100:
		return fmt.Errorf("--churn-endpoints must be in 2..100 (a scale-down removes half), got %d", o.Endpoints)
	case !(o.Rate > 0 && o.Rate <= maxRate): // NaN too
		return fmt.Errorf("--churn-rate must be in (0, %g] changes per second, got %g", maxRate, o.Rate)
	case o.MinSync != nil && (*o.MinSync < 0 || *o.MinSync > time.Minute):
		return fmt.Errorf("--min-sync-interval must be in 0..1m, got %s", *o.MinSync)
	}
	return nil
}

// minSync is the interval the loop keeps for datapath dp.
func (o *Options) minSync(dp string) time.Duration {
	if o.MinSync != nil {
		return *o.MinSync
	}
	if datapath.Netfilter(dp) {
		return NetfilterMinSync
	}
	return 0
}
