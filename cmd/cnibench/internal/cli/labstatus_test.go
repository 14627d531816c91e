package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/mntnstest"
	"github.com/cnibench/cnibench/lab"
)

// `lab status` of a lab whose state is gone but whose namespaces are left
// says what is left and how to remove it, not "not up"; after `lab down`
// it says "not up".
func TestLabStatusLeftovers(t *testing.T) {
	if err := lab.RequirePrivileges(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	if !mntnstest.Run(t) {
		return
	}
	name, dir := fmt.Sprintf("s%06d", rand.IntN(1000000)), t.TempDir()
	t.Cleanup(func() { lab.Down(dir, name) })
	if _, err := lab.Up(context.Background(), lab.Config{Name: name, Nodes: 1, PodsPerNode: 1, StateDir: dir}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	out, _, err := cnibench(t, "lab", "status", "--lab", name, "--state-dir", dir)
	t.Logf("lab status:\n%s%v", out, err)
	if err == nil || !strings.Contains(err.Error(), "cnibench --lab "+name+" --state-dir "+dir+" lab down") {
		t.Errorf("lab status error %v, want one that says 'cnibench --lab %s lab down'", err, name)
	}
	for _, ns := range []string{"underlay", "node0", "node0-pod0"} {
		if want := "netns " + lab.Prefix(name) + ns + ": mounted"; !strings.Contains(out, want) {
			t.Errorf("lab status output lacks %q", want)
		}
	}
	if _, _, err := cnibench(t, "lab", "down", "--lab", name, "--state-dir", dir); err != nil {
		t.Fatalf("lab down: %v", err)
	}
	out, _, err = cnibench(t, "lab", "status", "--lab", name, "--state-dir", dir)
	if err == nil || !strings.Contains(err.Error(), "is not up (start it") || out != "" {
		t.Errorf("lab status after lab down: %q, %v", out, err)
	}
	if b, _ := exec.Command("ip", "netns", "list").CombinedOutput(); strings.Contains(string(b), lab.Prefix(name)) {
		t.Errorf("ip netns list after lab down:\n%s", b)
	}
}
