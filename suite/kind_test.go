package suite

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/results"
)

// pingResult and pingOptions are the types of a toy UDP ping kind, which
// exists only in this test: registered in one place, it runs through the
// plan, the agents (its server in every agent, its client in the client's
// agent), results.json and the metrics with no edit elsewhere.
type pingResult struct {
	Rate float64 `json:"rate"`
	kinds.RunnerResults
	Pings int `json:"pings"`
}

type pingOptions struct {
	Host string `json:"host"`
	kinds.RunnerOptions
}

// pingAddr is where the toy server listens (a free port on loopback, so
// the test cannot collide with another run's fixed ports).
var pingAddr atomic.Pointer[string]

var registerPingOnce sync.Once

func registerPing() { registerPingOnce.Do(func() { kinds.Register(pingKind()) }) }

func pingKind() kinds.Kind {
	return kinds.Kind{
		Name: "ping", Order: 95,
		Tests: []kinds.Test{{Name: "TOY_UDP_PING", About: "toy UDP ping rate"}},
		Owns:  func(r any) bool { _, ok := r.(*pingResult); return ok },
		Read: func(_ string, r any) kinds.Reading {
			p := r.(*pingResult)
			return kinds.Reading{Seconds: p.Seconds, Work: float64(p.Pings), Scale: 1e6,
				Values: []kinds.Value{{Name: "ping rate", Unit: "pings/s", Better: kinds.HigherIsBetter, Headline: true, V: p.Rate}}}
		},
		Line:  func(r any) string { return "pinged" },
		Table: kinds.Table{Order: 60, Columns: []kinds.Column{{Head: "Pings/s", Metric: "ping rate", Format: "%.0f"}}},
		Key:   "ping", OptionsKey: "ping_options",
		NewResult:  func() any { return new(pingResult) },
		NewOptions: func() any { return new(pingOptions) },
		Options: func(_ kinds.Test, host string, p kinds.Plan) any {
			return &pingOptions{Host: host, RunnerOptions: kinds.RunnerOptions{Duration: kinds.Duration(p.Duration)}}
		},
		Listen: func(bind string) (func(context.Context) error, error) {
			c, err := net.ListenPacket("udp", net.JoinHostPort(bind, "0"))
			if err != nil {
				return nil, err
			}
			addr := c.LocalAddr().String()
			pingAddr.Store(&addr)
			return func(ctx context.Context) error {
				go func() { <-ctx.Done(); c.Close() }()
				buf := make([]byte, 64)
				for {
					n, from, err := c.ReadFrom(buf)
					if err != nil {
						if ctx.Err() != nil {
							return nil
						}
						return err
					}
					_, _ = c.WriteTo(buf[:n], from)
				}
			}, nil
		},
		Run: func(ctx context.Context, o any) (any, error) {
			opts := o.(*pingOptions)
			addr := pingAddr.Load()
			if addr == nil {
				return nil, errors.New("no ping server")
			}
			c, err := net.Dial("udp", *addr)
			if err != nil {
				return nil, err
			}
			defer c.Close()
			start, n, buf := time.Now(), 0, make([]byte, 64)
			for time.Since(start) < time.Duration(opts.Duration) && ctx.Err() == nil {
				_ = c.SetDeadline(time.Now().Add(time.Second))
				if _, err := c.Write([]byte("ping")); err != nil {
					return nil, err
				}
				if _, err := c.Read(buf); err != nil {
					return nil, err
				}
				n++
			}
			secs := time.Since(start).Seconds()
			return &pingResult{Rate: float64(n) / secs, RunnerResults: kinds.RunnerResults{Seconds: secs}, Pings: n}, nil
		},
	}
}

// A kind registered in one place runs end to end through the runner.
func TestRunnerRunsRegisteredKind(t *testing.T) {
	registerPing()
	c := startAgent(t) // after registering: the agent starts the kind's server
	var calls []string
	plan, err := Options{Tests: []string{"toy_udp_ping"}, Placements: []string{"pod-to-pod/same-node"}, Rounds: 2, Duration: 100 * time.Millisecond}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	plan.Warmup = 0
	out := t.TempDir()
	r := &Runner{Scenarios: []Scenario{{Name: "a", Target: loopTarget{c, &calls, "a"}}}, Plan: plan, OutDir: out, RunID: "ping"}
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	run, err := results.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	res := run.Results[0]
	if o, ok := res.Options.(*pingOptions); !ok || o.Host != "127.0.0.1" || o.Duration != kinds.Duration(100*time.Millisecond) {
		t.Fatalf("options %#v", res.Options)
	}
	for _, s := range res.Samples {
		p, ok := s.Result.(*pingResult)
		if s.Error != "" || !ok || p.Pings == 0 {
			t.Fatalf("sample %+v", s)
		}
		if line := SampleLine(res.Test, s); line != "pinged" {
			t.Errorf("progress line %q", line)
		}
	}
	m, err := results.Metrics(res)
	if err != nil || m.Kind != "ping" || m.Failed != 0 || len(m.Metric("ping rate").Values) != 2 {
		t.Fatalf("metrics %+v, %v", m, err)
	}
}
