package agent

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/procstat"
)

// The node stat endpoint answers this kernel's boot id and its CPU time as
// /proc/stat has it (read before and after the call: the answer lies
// between), behind the token.
func TestNodeStatEndpoint(t *testing.T) {
	c, bad := serveRoutes(t, "tok")
	before, err := procstat.Read()
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.NodeStat(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	after, _ := procstat.Read()
	id, _ := os.ReadFile(bootIDPath)
	if got.Kernel == "" || got.Kernel != strings.TrimSpace(string(id)) || got.CPUs != len(before.PerCPU) {
		t.Errorf("kernel %q (boot id %q), %d CPUs (want %d)", got.Kernel, id, got.CPUs, len(before.PerCPU))
	}
	if b := got.All.Total(); b < before.All.Total() || b > after.All.Total() {
		t.Errorf("answered %.2f s of CPU time, /proc/stat said %.2f before and %.2f after", b, before.All.Total(), after.All.Total())
	}
	if _, err := bad.NodeStat(context.Background()); err == nil {
		t.Error("answered without the token")
	}
}
