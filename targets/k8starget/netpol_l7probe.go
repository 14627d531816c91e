package k8starget

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/results"
)

// The L7 CiliumNetworkPolicy allows GET on ciliumL7AllowedPath only (the
// path every HTTP test of the run asks for); ciliumL7DeniedPath is a
// path the policy does not allow, which Cilium's proxy answers with 403.
const (
	ciliumL7AllowedPath = "/"
	ciliumL7DeniedPath  = "/cnibench-l7-denied"
)

// httpProber runs an HTTP load from one agent (an *agent.Client).
type httpProber = agent.KindRunner

// L7Probe is one HTTP probe of the L7 check: the status codes a path got.
type L7Probe struct {
	To     string        `json:"to"` // server endpoint
	URL    string        `json:"url"`
	Want   int           `json:"want"` // 200 allowed, 403 denied
	Status map[int]int64 `json:"status,omitempty"`
	Detail string        `json:"detail,omitempty"` // why it failed
}

// passed says the probe got only its wanted status.
func (p L7Probe) passed() bool {
	return len(p.Status) == 1 && p.Status[p.Want] > 0
}

// l7Check polls until every server answers the allowed path with 200 and
// the denied path with 403 (the proxy enforces the rule) or wait has
// passed (Cilium programs its proxy asynchronously). It fills c's
// Verified, Outcome, Probes, Attempts and, when not verified, Reason.
// noProxy, when set, says why this Cilium cannot enforce the rule
// (noL7Proxy): then one attempt shows what the servers answer, and
// noProxy is the reason when the rule is not enforced.
func l7Check(ctx context.Context, c *CiliumL7, from httpProber, servers []string, ips map[string]string, wait, interval time.Duration, noProxy string) error {
	if noProxy != "" {
		wait = 0
	}
	start := time.Now()
	for {
		c.Probes = nil
		passed := true
		for _, srv := range servers {
			for _, p := range []struct {
				path string
				want int
			}{{ciliumL7AllowedPath, 200}, {ciliumL7DeniedPath, 403}} {
				pr := l7Probe(ctx, from, srv, ips[srv], p.path, p.want)
				passed = passed && pr.passed()
				c.Probes = append(c.Probes, pr)
			}
		}
		c.Attempts++
		c.WaitedS = time.Since(start).Seconds()
		if err := ctx.Err(); err != nil {
			return err
		}
		if passed {
			c.Verified, c.Outcome, c.Reason = true, NetPolEnforced, ""
			return nil
		}
		if time.Since(start) >= wait {
			c.Outcome = NetPolNotEnforced
			c.Reason = "not verified within " + wait.String() + ": " + l7Failure(c.Probes)
			if noProxy != "" {
				c.Reason = noProxy + "; " + l7Failure(c.Probes)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// l7Probe is a 200 ms HTTP keep-alive load with one connection on path.
func l7Probe(ctx context.Context, from httpProber, to, ip, path string, want int) L7Probe {
	o := httpload.Options{Host: ip, Port: int(httpPort()), Path: path, KeepAlive: true, Connections: 1, Threads: 1,
		RunnerOptions: engine.RunnerOptions{Duration: engine.Duration(reachProbe)}}
	p := L7Probe{To: to, URL: "http://" + net.JoinHostPort(ip, strconv.Itoa(int(httpPort()))) + path, Want: want}
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	res, err := agent.RunAs[httpload.Result](rctx, from, results.KindHTTP, &o)
	switch {
	case err != nil:
		p.Detail = oneLine(err.Error())
	case len(res.StatusCodes) == 0:
		p.Detail = fmt.Sprintf("no response (%d errors)", res.Errors.Total)
	default:
		p.Status = res.StatusCodes
	}
	return p
}

// l7Failure says, on one line, what the first failing probe got.
func l7Failure(probes []L7Probe) string {
	for _, p := range probes {
		if p.passed() {
			continue
		}
		got := p.Detail
		if got == "" {
			var codes []string
			for code, n := range p.Status {
				codes = append(codes, fmt.Sprintf("%d×%d", n, code))
			}
			slices.Sort(codes)
			got = "status " + strings.Join(codes, ", ")
		}
		return fmt.Sprintf("GET %s got %s, want %d", p.URL, got, p.Want)
	}
	return "every probe passed"
}
