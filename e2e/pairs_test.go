package e2e

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pairsResults is the part of a --pairs run's results.json this test reads.
type pairsResults struct {
	Plan struct {
		Pairs int `json:"pairs"`
	} `json:"plan"`
	Results []struct {
		Pairs []struct {
			Client, Server string
		} `json:"pairs"`
		Samples []struct {
			Error  string     `json:"error"`
			Engine *rrNumbers `json:"engine"`
			Nodes  *struct {
				Nodes []struct{ Node string } `json:"nodes"`
			} `json:"nodes_cpu"`
			Pairs []struct {
				Pair           int
				Client, Server string
				Start, End     time.Time
				Error          string
				Engine         *rrNumbers `json:"engine"`
			} `json:"pairs"`
		} `json:"samples"`
	} `json:"results"`
}

type rrNumbers struct {
	Transactions int64   `json:"transactions"`
	RatePerSec   float64 `json:"rate_per_sec"`
}

// run --pairs 3 on a lab the run brings up: three client pods of node0 run
// TCP_RR at once against three server pods of node1; every pair's
// measured interval overlaps the others' by 95% of its length or more, and
// the sample's result is the sum of the pairs'.
func TestPairsRunAtOnce(t *testing.T) {
	l := newLab(t)
	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := l.run("run", "--tests", "TCP_RR", "--placements", "pod-to-pod/other-node", "--pairs", "3",
		"--rounds", "1", "--duration", "2s", "--warmup", "200ms", "--out", out)
	if code != 0 {
		t.Fatalf("run exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r pairsResults
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Plan.Pairs != 3 || len(r.Results) != 1 || len(r.Results[0].Pairs) != 3 || len(r.Results[0].Samples) != 1 {
		t.Fatalf("results.json: %s", b)
	}
	s := r.Results[0].Samples[0]
	if s.Error != "" || s.Engine == nil || len(s.Pairs) != 3 {
		t.Fatalf("sample: %s %+v", s.Error, s.Pairs)
	}
	var sum rrNumbers
	for i, p := range s.Pairs {
		wantClient, wantServer := "node0-pod"+string(rune('0'+2*i)), "node1-pod"+string(rune('0'+i))
		if p.Pair != i || p.Client != wantClient || p.Server != wantServer || p.Error != "" || p.Engine == nil || p.Engine.Transactions == 0 {
			t.Fatalf("pair %d: %+v", i, p)
		}
		sum.Transactions += p.Engine.Transactions
		sum.RatePerSec += p.Engine.RatePerSec
		length := p.End.Sub(p.Start)
		for _, q := range s.Pairs {
			lo, hi := later(p.Start, q.Start), earlier(p.End, q.End)
			if overlap := hi.Sub(lo); float64(overlap) < 0.95*float64(length) {
				t.Errorf("pair %d (%s..%s) overlaps pair %d (%s..%s) by %s of its %s", p.Pair, p.Start, p.End, q.Pair, q.Start, q.End, overlap, length)
			}
		}
	}
	if s.Engine.Transactions != sum.Transactions || math.Abs(s.Engine.RatePerSec-sum.RatePerSec) > 1e-6*sum.RatePerSec {
		t.Errorf("aggregate %+v, sum of pairs %+v", *s.Engine, sum)
	}
	if s.Nodes == nil || len(s.Nodes.Nodes) < 2 {
		t.Errorf("the sample has no CPU of the lab's nodes: %+v", s.Nodes)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil || !strings.Contains(string(md), "\n## Pairs\n") || !strings.Contains(string(md), "\n## Queries per core\n") {
		t.Errorf("report.md has no pairs or queries-per-core section (%v)", err)
	}
	if left := l.leftovers(); len(left) > 0 {
		t.Errorf("run left lab objects behind: %v", left)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
