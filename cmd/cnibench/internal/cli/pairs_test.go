package cli

import (
	"strings"
	"testing"
)

// --pairs is checked before anything is opened: its range, the lab's pods,
// the schedules and the cluster checks that do not run them (no root, no
// cluster needed; a kind that cannot aggregate pairs is suite's test).
func TestPairsFlag(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--pairs", "0"}, "--pairs must be 1 to 16, got 0"},
		{[]string{"run", "--pairs", "17"}, "--pairs must be 1 to 16, got 17"},
		{[]string{"run", "--pairs", "2", "--pods-per-node", "3", "--tests", "TCP_RR"}, "--pairs 2 needs --pods-per-node 4 or more, got 3"},
		{[]string{"run", "--target", "k8s", "--dry-run", "--pairs", "2", "--network-policy-check"}, "--pairs 2: --network-policy-check allows pair 0's client (node0-pod0) alone"},
		{[]string{"run", "--target", "k8s", "--dry-run", "--pairs", "2", "--profile", "security"}, "--pairs 2: the security profile's policies allow pair 0's client (node0-pod0) alone"},
		{[]string{"sweep", "--pairs", "2"}, "--pairs does not apply to the Service-scale sweep"},
	} {
		_, _, err := cnibench(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
