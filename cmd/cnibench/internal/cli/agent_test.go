package cli

import (
	"strings"
	"testing"
)

// A node probe refuses the engine flags it would ignore and a bad control
// address, before it serves anything.
func TestAgentNodeProbeBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", "--node-probe", "--bind", "127.0.0.1"}, "--bind has no effect with --node-probe"},
		{[]string{"agent", "--node-probe", "--dns-listen", "127.0.0.1"}, "--dns-listen has no effect with --node-probe"},
		{[]string{"agent", "--node-probe", "--control", "bogus"}, `--control "bogus"`},
	} {
		_, _, err := cnibench(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
