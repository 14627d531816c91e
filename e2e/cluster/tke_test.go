package cluster

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// run --target k8s --profile tke, one short round: the cluster fills the
// column of TKE's table its datapath is — iptables on the bridge with
// kube-proxy iptables, Cilium native on the Cilium cluster — every one of
// that column's seven cells has our figure beside the published one
// (fortio's client on the HTTP rows), and the two other columns say which
// datapath they need. In kube-proxy's nftables mode, which none of TKE's
// columns is, the run is refused in one line naming the datapath.
func TestTKEOnCluster(t *testing.T) {
	e := getEnv(t)
	out := filepath.Join(t.TempDir(), "run")
	r := e.cnibench(t, e.kubeconfig, "run", "--target", "k8s", "--image", e.image, "--profile", "tke",
		"--rounds", "1", "--duration", "1s", "--warmup", "300ms", "--out", out)
	column, datapath := "iptables", "kube-proxy iptables, bridge natively routed"
	switch {
	case e.cilium():
		column, datapath = "Cilium native", "Cilium natively routed with kube-proxy replacement"
	case e.cni == "flannel":
		t.Skip("flannel over VXLAN is none of TKE's columns; the refusal is tested in kube-proxy's nftables mode")
	case e.proxyMode == "nftables":
		want := "--profile tke on a cluster: its datapath (kube-proxy nftables, bridge natively routed, the lab's nftables) is none of the report's columns"
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Fatalf("run --profile tke in nftables mode: exit %d, stderr lacks %q:\n%s", r.code, want, r.stderr)
		}
		e.waitGone(t, "cnibench", false)
		return
	}
	mustOK(t, r, "run --profile tke")
	checkSamples(t, readResults(t, out))
	mustOK(t, run(t, exec.Command(e.bin, "report", out, "--format", "json")), "report --format json")
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Extra struct {
			Reproduced struct {
				Cells []struct {
					Row, Column string
					As          string          `json:"as"`
					Published   json.RawMessage `json:"published"`
					Ours        json.RawMessage `json:"ours"`
					NotMeasured string          `json:"not_measured"`
				} `json:"cells"`
			} `json:"reproduced"`
		} `json:"extra_sections"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	measured, other := 0, 0
	for _, c := range rep.Extra.Reproduced.Cells {
		switch {
		case c.Column == column && c.As != "":
			measured++
			if len(c.Ours) == 0 || string(c.Ours) == "null" || len(c.Published) == 0 {
				t.Errorf("%s / %s: ours %s, published %s (%s)", c.Row, c.Column, c.Ours, c.Published, c.NotMeasured)
			}
			if strings.HasPrefix(c.Row, "HTTP") && !strings.HasPrefix(c.As, "FORTIO_") {
				t.Errorf("%s measured as %s, want fortio's client", c.Row, c.As)
			}
		case c.Column != column && strings.Contains(c.NotMeasured, "this cluster runs "+datapath+", the report's "+column+" column"):
			other++
		}
	}
	if measured != 7 || other != 14 {
		t.Errorf("%d cells of column %s measured (want 7), %d of the others saying why not (want 14):\n%s", measured, column, other, b)
	}
	e.waitGone(t, "cnibench", false)
}
