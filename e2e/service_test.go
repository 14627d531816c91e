package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/hosttest"
)

// Every engine reaches both test Services' ClusterIPs (endpoints on the
// client's node and on the other node) through each Service datapath: the
// run programs and verifies the Services before measuring,
// and the lab it made is gone afterwards with the datapath's rules and
// programs. (Each datapath's balancing and verification are tested in its
// own package.)
func TestPodToServiceEveryDatapath(t *testing.T) {
	for _, dp := range []string{"iptables", "nftables", "nftables-flat", "ebpf", "ebpf-tc"} {
		t.Run(dp, func(t *testing.T) {
			l := newLab(t)
			before := hosttest.Take(t)
			out := filepath.Join(t.TempDir(), "out")
			stdout, stderr, code := l.run("run", "--service-datapath", dp,
				"--tests", "TCP_RR,UDP_RR,TCP_CRR,TCP_STREAM,HTTP_RPS_C64,DNS_QPS_MAX",
				"--placements", "pod-to-service/same-node,pod-to-service/other-node", "--duration", "300ms", "--warmup", "0s", "--out", out)
			if code != 0 {
				if strings.Contains(stderr, "unsupported") {
					t.Skipf("%s unsupported here: %s", dp, stderr)
				}
				t.Fatalf("run exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stderr, "programming the test Services ("+dp+" datapath) ... 14 Service ports verified") {
				t.Errorf("no verified programming step in the progress output:\n%s", stderr)
			}
			b, err := os.ReadFile(filepath.Join(out, "results.json"))
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				Results []struct {
					Test      string
					Placement struct {
						Node       string `json:"node"`
						Server     string `json:"server"`
						ServerAddr string `json:"server_addr"`
					}
					Samples []struct {
						Error  string
						Engine json.RawMessage
						HTTP   json.RawMessage
						DNS    json.RawMessage
					}
				}
			}
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			if len(r.Results) != 12 {
				t.Fatalf("%d results, want 12", len(r.Results))
			}
			// The default lab: 2 nodes × 2 pods; same-node's one backend is
			// node0-pod1, other-node's are both pods of node1.
			want := map[string][2]string{
				"same-node":  {"198.18.128.2", "node0-pod1"},
				"other-node": {"198.18.128.1", "node1-pod0+node1-pod1"},
			}
			for _, res := range r.Results {
				if w := want[res.Placement.Node]; res.Placement.ServerAddr != w[0] || res.Placement.Server != w[1] {
					t.Errorf("%s: placement %+v is not the Service VIP %s with backends %s", res.Test, res.Placement, w[0], w[1])
				}
				s := res.Samples[0]
				if s.Error != "" || (s.Engine == nil && s.HTTP == nil && s.DNS == nil) {
					t.Errorf("%s through %s: %q", res.Test, dp, s.Error)
				}
			}
			if left := l.leftovers(); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
			hosttest.AssertUnchanged(t, before, "after the run")
		})
	}
}
