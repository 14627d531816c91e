package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every engine reaches the test Service's ClusterIP through each Service
// datapath: the run programs and verifies the Service before measuring,
// and the lab it made is gone afterwards with the datapath's rules and
// programs. (Each datapath's balancing and verification are tested in its
// own package.)
func TestPodToServiceEveryDatapath(t *testing.T) {
	for _, dp := range []string{"iptables", "nftables", "nftables-flat", "ebpf", "ebpf-tc"} {
		t.Run(dp, func(t *testing.T) {
			l := newLab(t)
			before := rootSnapshot(t)
			out := filepath.Join(t.TempDir(), "out")
			stdout, stderr, code := l.run("run", "--service-datapath", dp,
				"--tests", "TCP_RR,UDP_RR,TCP_CRR,TCP_STREAM,HTTP_RPS_C64,DNS_QPS_MAX",
				"--placements", "pod-to-service/other-node", "--duration", "300ms", "--warmup", "0s", "--out", out)
			if code != 0 {
				if strings.Contains(stderr, "unsupported") {
					t.Skipf("%s unsupported here: %s", dp, stderr)
				}
				t.Fatalf("run exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stderr, "programming the test Service ("+dp+" datapath) ... verified") {
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
			if len(r.Results) != 6 {
				t.Fatalf("%d results, want 6", len(r.Results))
			}
			for _, res := range r.Results {
				if res.Placement.ServerAddr != "198.18.128.1" || !strings.Contains(res.Placement.Server, "+") {
					t.Errorf("%s: placement %+v is not the Service VIP with its backends", res.Test, res.Placement)
				}
				s := res.Samples[0]
				if s.Error != "" || (s.Engine == nil && s.HTTP == nil && s.DNS == nil) {
					t.Errorf("%s through %s: %q", res.Test, dp, s.Error)
				}
			}
			if left := l.leftovers(); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
			assertRootUnchanged(t, before)
		})
	}
}
