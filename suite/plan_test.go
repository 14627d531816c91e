package suite

import (
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/results"
)

func TestResolveQuickDefaults(t *testing.T) {
	p, err := Options{}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if p.Profile != "quick" || p.Rounds != 1 || len(p.Placements) != 3 {
		t.Fatalf("quick plan = %+v", p.Plan)
	}
	want := []string{"TCP_STREAM", "TCP_STREAM_MULTI", "UDP_STREAM", "TCP_RR", "UDP_RR", "TCP_CRR", "HTTP_RPS_C64", "HTTP_RPS_SHORT_C64"}
	if strings.Join(p.Tests, ",") != strings.Join(want, ",") {
		t.Fatalf("tests = %v, want %v", p.Tests, want)
	}
	// The quick profile must fit in 3 minutes with room for lab setup.
	if est := p.EstimateOn([]string{""}); est > 150*time.Second {
		t.Fatalf("quick profile measures for %s, too long for < 3 min", est)
	}
}

func TestResolveOverridesAndDedup(t *testing.T) {
	p, err := Options{Profile: "standard", Tests: []string{"tcp_rr", "TCP_RR", "tcp_stream_multi"}, Placements: []string{"pod-to-pod/other-node"}, Rounds: 2, Streams: 8, Duration: time.Second, Mode: engine.BusyPoll}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.Tests, ",") != "TCP_RR,TCP_STREAM_MULTI" || p.Rounds != 2 || p.SamplesOn([]string{""}) != 4 {
		t.Fatalf("plan = %+v", p.Plan)
	}
	pl := results.Placement{Path: "pod-to-pod", Node: "other-node", ServerAddr: "198.19.1.10"}
	rr := p.newResult(p.Specs[0], pl, "").Options.(*engine.Options)
	if rr.Mode != engine.BusyPoll || rr.Streams != 1 || rr.Test != engine.TCPRR {
		t.Fatalf("rr options = %+v", rr)
	}
	multi := p.newResult(p.Specs[1], pl, "").Options.(*engine.Options)
	if multi.Streams != 8 || multi.Mode != "" {
		t.Fatalf("multi options = %+v", multi)
	}
}

func TestResolveRejectsBadInput(t *testing.T) {
	cases := map[string]struct {
		o    Options
		want string
	}{
		"profile":   {Options{Profile: "fast"}, `unknown profile "fast"`},
		"test":      {Options{Tests: []string{"TCP_FOO"}}, `unknown test "TCP_FOO"`},
		"placement": {Options{Placements: []string{"pod-to-moon"}}, `unknown placement "pod-to-moon"`},
		"rounds":    {Options{Rounds: -1}, "--rounds must be at least 1"},
		"streams":   {Options{Streams: -3}, "--streams must be at least 1"},
		"duration":  {Options{Duration: time.Millisecond}, "--duration must be at least 100ms"},
		"mode":      {Options{Mode: "spin"}, `--mode "spin"`},
		"flame":     {Options{Tests: []string{"TCP_RR"}, FlameGraph: "UDP_RR"}, "--flame-graph UDP_RR: not one of the run's tests (TCP_RR)"},
	}
	for name, c := range cases {
		_, err := c.o.Resolve()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error is not one line: %q", name, err)
		}
	}
}

// Each placement's connection tests take their own share of the client's
// ports; tests that keep their connections, and one-placement plans, none.
func TestPlacementsGetTheirOwnPortShare(t *testing.T) {
	p, err := Options{Tests: []string{"TCP_CRR", "HTTP_RPS_SHORT_C64", "TCP_RR"},
		Placements: []string{"pod-to-pod/other-node", "pod-to-service/other-node"}}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[engine.PortShare]bool{}
	for _, spec := range p.Specs {
		for i, name := range p.Placements {
			path, node, _ := strings.Cut(name, "/")
			res := p.newResult(spec, results.Placement{Path: path, Node: node, ServerAddr: "198.19.1.10"}, "")
			var share *engine.PortShare
			switch o := res.Options.(type) {
			case *engine.Options:
				share = o.PortShare
			case *httpload.Options:
				share = o.PortShare
			}
			switch {
			case spec.Name == "TCP_RR" && share != nil:
				t.Errorf("%s %s: share %+v, want none (one connection per flow)", spec.Name, name, *share)
			case spec.Name != "TCP_RR" && (share == nil || *share != engine.PortShare{Index: i, Count: 2}):
				t.Errorf("%s %s: share %v, want %d of 2", spec.Name, name, share, i)
			case share != nil:
				seen[*share] = true
			}
		}
	}
	if len(seen) != 2 {
		t.Errorf("shares used: %v, want two", seen)
	}
	one, err := Options{Tests: []string{"TCP_CRR"}, Placements: []string{"pod-to-pod/other-node"}}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if s := one.newResult(one.Specs[0], results.Placement{Path: "pod-to-pod", Node: "other-node"}, "").Options.(*engine.Options).PortShare; s != nil {
		t.Errorf("one placement: share %+v, want none", *s)
	}
}

// --msg-size is cilium connectivity perf's UDP datagram size: its profile
// defaults to cilium-cli's 1024, the flag sets it, the UDP stream tests
// carry it, and a size no datagram holds is refused in one line.
func TestUDPMessageSize(t *testing.T) {
	p, err := Options{Profile: "connectivity-perf"}.Resolve()
	if err != nil || p.UDPMessageSize != 1024 {
		t.Fatalf("connectivity-perf: %v, UDP message size %d, want 1024", err, p.UDPMessageSize)
	}
	p, err = Options{Tests: []string{"UDP_STREAM", "TCP_STREAM"}, UDPMessageSize: 512}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	pl := results.Placement{Path: "pod-to-pod", Node: "other-node", ServerAddr: "198.19.1.10"}
	udp, tcp := p.newResult(p.Specs[0], pl, "a"), p.newResult(p.Specs[1], pl, "a")
	if o := udp.Options.(*engine.Options); o.MessageSize != 512 {
		t.Errorf("UDP_STREAM message size %d, want 512", o.MessageSize)
	}
	if o := tcp.Options.(*engine.Options); o.MessageSize != 0 {
		t.Errorf("TCP_STREAM message size %d, want the engine's default", o.MessageSize)
	}
	if p, _ := (Options{Profile: "quick"}).Resolve(); p.UDPMessageSize != 0 {
		t.Errorf("quick: UDP message size %d, want the engine's", p.UDPMessageSize)
	}
	for _, bad := range []int{-1, 10, 70000} {
		_, err := Options{UDPMessageSize: bad}.Resolve()
		if err == nil || !strings.Contains(err.Error(), "--msg-size must be 32 to 65000 bytes") {
			t.Errorf("--msg-size %d: %v", bad, err)
		}
	}
}
