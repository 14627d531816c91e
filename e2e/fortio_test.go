package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fortioResults is the part of results.json the fortio test reads.
type fortioResults struct {
	Results []struct {
		Test      string `json:"test"`
		Placement struct {
			Path, Node string
		} `json:"placement"`
		Samples []struct {
			Error  string `json:"error"`
			Fortio *struct {
				Engine        string  `json:"engine"`
				RPS           float64 `json:"rps"`
				Requests      int64   `json:"requests"`
				OK            int64   `json:"ok"`
				Sockets       int64   `json:"sockets"`
				Conns         int64   `json:"conns"`
				PortShareNote string  `json:"port_share_note"`
				Latency       *struct {
					Count int64   `json:"count"`
					P50Us float64 `json:"p50_us"`
				} `json:"latency"`
			} `json:"fortio"`
			ClientCPUSec float64 `json:"client_cpu_sec"`
		} `json:"samples"`
	} `json:"results"`
}

// The fortio kind through the CLI on the lab: fortio's client in the
// client pod's agent against the server pod's HTTP server, keep-alive
// and a connection per request, rendered beside the HTTP kind's row.
func TestFortioKindOnTheLab(t *testing.T) {
	l := newLab(t)
	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := l.run("run", "--tests", "FORTIO_RPS_C64,FORTIO_RPS_SHORT_C64,HTTP_RPS_SHORT_C64",
		"--placements", "pod-to-pod/same-node,pod-to-pod/other-node", "--duration", "1s", "--warmup", "200ms", "--out", out)
	if code != 0 {
		t.Fatalf("run exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r fortioResults
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	fortio := 0
	for _, res := range r.Results {
		if !strings.HasPrefix(res.Test, "FORTIO_") {
			continue
		}
		name := res.Test + " " + res.Placement.Path + "/" + res.Placement.Node
		if len(res.Samples) != 1 || res.Samples[0].Error != "" || res.Samples[0].Fortio == nil {
			t.Errorf("%s: samples %+v", name, res.Samples)
			continue
		}
		fortio++
		s := res.Samples[0]
		f := s.Fortio
		if !strings.HasPrefix(f.Engine, "fortio v") || f.RPS <= 0 || f.OK != f.Requests || f.Latency == nil || f.Latency.Count != f.Requests || s.ClientCPUSec <= 0 {
			t.Errorf("%s: bad fortio sample %+v", name, f)
		}
		short := strings.Contains(res.Test, "SHORT")
		if short && f.Sockets < f.Requests || !short && f.Sockets > 2*f.Conns {
			t.Errorf("%s: %d sockets for %d requests on %d connections", name, f.Sockets, f.Requests, f.Conns)
		}
		if !strings.Contains(f.PortShareNote, "not applied") {
			t.Errorf("%s: two placements, port share note %q", name, f.PortShareNote)
		}
	}
	if fortio != 4 {
		t.Errorf("%d fortio results, want 4 (2 tests × 2 placements)", fortio)
	}
	for _, want := range []string{"FORTIO_RPS_C64", "FORTIO_RPS_SHORT_C64", "HTTP_RPS_SHORT_C64", "Req/s"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	if left := l.leftovers(); len(left) > 0 {
		t.Errorf("run left lab objects behind: %v", left)
	}
}
