package results

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine/engineapi"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/stats"
)

// A sample with pairs keeps every pair's own result under its kind's key
// and reads back to the same document; the aggregate stays where a single
// result is.
func TestPairsRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	pair := func(i int, rate float64) PairSample {
		return PairSample{Pair: i, Client: "node0-pod" + string(rune('0'+2*i)), Server: "node1-pod" + string(rune('0'+i)),
			Start: t0, End: t0.Add(time.Second), ClientCPUSec: 0.5, ServerCPUSec: 0.25,
			Result: &engineapi.Result{Test: engineapi.TCPRR, Transactions: int64(rate), RatePerSec: rate, Latency: &stats.Latency{Count: 1},
				RunnerResults: kinds.RunnerResults{Start: t0, End: t0.Add(time.Second), Seconds: 1}}}
	}
	p0, p1 := pair(0, 100), pair(1, 200)
	p1.Error, p1.Result = "pair 1: refused", nil
	pl := Placement{Path: "pod-to-pod", Node: "other-node", Client: "node0-pod0", Server: "node1-pod0", ServerAddr: "198.19.1.10"}
	r := Run{Plan: Plan{Pairs: 2}, Results: []Result{{Test: "TCP_RR", Placement: pl, Pairs: []Placement{pl, pl},
		Samples: []Sample{{Round: 1, Result: &engineapi.Result{Test: engineapi.TCPRR, Transactions: 300, Latency: &stats.Latency{Count: 2}}, Pairs: []PairSample{p0, p1}}}}}}
	b, err := json.MarshalIndent(&r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"pair": 0,`) || strings.Count(string(b), `"engine": {`) != 2 || !strings.Contains(string(b), `"pairs": 2`) {
		t.Errorf("written:\n%s", b)
	}
	var back Run
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	s := back.Results[0].Samples[0]
	if len(s.Pairs) != 2 || s.Pairs[0].Result.(*engineapi.Result).RatePerSec != 100 || s.Pairs[1].Result != nil || s.Pairs[1].Error == "" {
		t.Errorf("read back: %+v", s.Pairs)
	}
	if back.Plan.PairCount() != 2 || len(back.Results[0].Pairs) != 2 {
		t.Errorf("plan pairs %d, result pairs %d", back.Plan.PairCount(), len(back.Results[0].Pairs))
	}
	again, err := json.MarshalIndent(&back, "", "  ")
	if err != nil || !bytes.Equal(again, b) {
		t.Errorf("written again differs (%v)", err)
	}
}

// A document written before --pairs reads as one pair and writes no pair
// field back (one pair adds nothing to results.json).
func TestOldDocumentHasOnePair(t *testing.T) {
	b, err := os.ReadFile("../report/testdata/results.json")
	if err != nil {
		t.Fatal(err)
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Plan.PairCount() != 1 {
		t.Errorf("pairs %d", r.Plan.PairCount())
	}
	for _, res := range r.Results {
		for _, s := range res.Samples {
			if res.Pairs != nil || s.Pairs != nil {
				t.Fatalf("%s: pairs read from an old document", res.Test)
			}
		}
	}
	out, _ := json.Marshal(&r)
	if bytes.Contains(out, []byte(`"pairs"`)) || bytes.Contains(out, []byte(`"pair"`)) {
		t.Error("one pair wrote a pair field")
	}
}
