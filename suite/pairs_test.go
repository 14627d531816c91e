package suite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/results"
)

// pairTarget has one real agent per pair, pair k's on 127.0.0.(k+1): its
// client runs pair k, its server answers it.
type pairTarget struct {
	agents []*agent.Client
}

func (pairTarget) Kind() string            { return "loopback" }
func (pairTarget) Details() map[string]any { return nil }
func (t pairTarget) Placement(name string) (results.Placement, error) {
	return t.PairPlacement(name, 0)
}
func (t pairTarget) PairPlacement(name string, k int) (results.Placement, error) {
	path, node, _ := strings.Cut(name, "/")
	if path == "host-to-host" {
		return results.Placement{}, fmt.Errorf("one host per node: %w", ErrUnsupported)
	}
	ep := "a" + string(rune('0'+k))
	return results.Placement{Path: path, Node: node, Client: ep, Server: ep, ServerAddr: "127.0.0." + string(rune('1'+k))}, nil
}
func (t pairTarget) Agent(ep string) (*agent.Client, error) { return t.agents[ep[1]-'0'], nil }
func (pairTarget) CPUSeconds(string) (float64, error)       { return 0, errors.New("no accounting") }
func (pairTarget) Close() error                             { return nil }

func startAgentOn(t *testing.T, bind string) *agent.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sock := filepath.Join(t.TempDir(), "a.sock")
	done := make(chan error, 1)
	go func() { done <- agent.Serve(ctx, agent.Config{Control: "unix:" + sock, Token: "secret", Bind: bind}) }()
	t.Cleanup(func() { cancel(); <-done })
	c, err := agent.NewClient(bind, "unix:"+sock, "secret")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	return c
}

// Two pairs run at once from one start time: each pair's result is kept,
// the sample's is their sum, and the intervals overlap.
func TestRunnerPairs(t *testing.T) {
	tgt := pairTarget{agents: []*agent.Client{startAgentOn(t, "127.0.0.1"), startAgentOn(t, "127.0.0.2")}}
	plan, err := Options{Tests: []string{"TCP_RR"}, Placements: []string{"pod-to-pod/same-node"}, Rounds: 1, Duration: 300 * time.Millisecond, Pairs: 2}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	plan.Warmup = 0
	r := &Runner{Scenarios: []Scenario{{Name: "a", Target: tgt}}, Plan: plan, OutDir: t.TempDir(), RunID: "test"}
	run, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res := run.Results[0]
	if len(res.Pairs) != 2 || res.Pairs[1].ServerAddr != "127.0.0.2" || run.Plan.Pairs != 2 {
		t.Fatalf("pairs %+v", res.Pairs)
	}
	s := res.Samples[0]
	if s.Error != "" || len(s.Pairs) != 2 {
		t.Fatalf("sample %+v", s)
	}
	var sum int64
	for _, p := range s.Pairs {
		sum += p.Result.(*engine.Result).Transactions
		for _, q := range s.Pairs {
			if o := kinds.Overlap(p.Start, p.End, q.Start, q.End); o < 0.9 {
				t.Errorf("pair %d overlaps pair %d by %.0f%%", p.Pair, q.Pair, 100*o)
			}
		}
	}
	if agg := s.Result.(*engine.Result); agg.Transactions != sum || sum == 0 {
		t.Errorf("aggregate %d transactions, pairs %d", agg.Transactions, sum)
	}
}

// A kind that cannot aggregate pairs is refused before the run, and a
// placement a target cannot pair is skipped with why.
func TestPairsRefusedAndSkipped(t *testing.T) {
	registerPing() // the toy kind has no merge; every built-in kind has one
	_, err := Options{Tests: []string{"TOY_UDP_PING"}, Pairs: 2}.Resolve()
	if err == nil || !strings.Contains(err.Error(), "--pairs 2: test TOY_UDP_PING (kind ping) cannot aggregate pairs") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a kind without merge with pairs: %v", err)
	}
	if _, err := (Options{Tests: []string{"DNS_QPS_MAX", "FORTIO_RPS_C64"}, Pairs: 2}).Resolve(); err != nil {
		t.Errorf("DNS and fortio with pairs: %v", err)
	}
	if _, err := (Options{Pairs: 17}).Resolve(); err == nil || err.Error() != "--pairs must be 1 to 16, got 17" {
		t.Errorf("17 pairs: %v", err)
	}
	pls, skipped, err := pairPlacements(pairTarget{}, "host-to-host/other-node", 2, results.Placement{})
	if pls != nil || err != nil || !strings.Contains(skipped, "one host per node") {
		t.Errorf("host-to-host: %v %q %v", pls, skipped, err)
	}
	if _, _, err := pairPlacements(loopTarget{}, "pod-to-pod/other-node", 2, results.Placement{}); err == nil {
		t.Error("a target without pairs ran them")
	}
}

// A profile's pairs are the default: istio-scale runs 4 unless --pairs
// says otherwise, and --pairs 1 is one pair (nothing new in results.json).
func TestProfilePairs(t *testing.T) {
	for _, c := range []struct {
		pairs, want int
	}{{0, istioPairs}, {1, 0}, {2, 2}} {
		p, err := Options{Profile: "istio-scale", Pairs: c.pairs}.Resolve()
		if err != nil || p.Pairs != c.want {
			t.Errorf("istio-scale with --pairs %d: %d pairs (%v), want %d", c.pairs, p.Pairs, err, c.want)
		}
	}
	if p, err := (Options{Profile: "quick"}).Resolve(); err != nil || p.Pairs != 0 {
		t.Errorf("quick: %d pairs (%v)", p.Pairs, err)
	}
}
