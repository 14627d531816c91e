package cli

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/suite"
)

// Bad churn requests are one-line errors naming the flag, before anything
// is opened.
func TestChurnFlagErrors(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--tests", "churn,TCP_RR"}, "churn is a test of its own kind"},
		{[]string{"run", "--tests", "churn", "--placements", "pod-to-pod/same-node"}, "--placements: churn measures pod-to-service/other-node or pod-to-service/same-node"},
		{[]string{"run", "--tests", "churn", "--churn-rate", "0"}, "--churn-rate must be positive"},
		{[]string{"run", "--tests", "churn", "--churn-services", "1"}, "--churn-services must be in 2..100000"},
		{[]string{"run", "--tests", "churn", "--churn-endpoints", "1"}, "--churn-endpoints must be in 2..100"},
		{[]string{"run", "--tests", "churn", "--min-sync-interval", "2m"}, "--min-sync-interval must be in 0..1m"},
		{[]string{"run", "--tests", "churn", "--min-sync-interval", "-1s"}, "--min-sync-interval must be in 0..1m, got -1s"},
		{[]string{"run", "--tests", "churn", "--churn-services", "0"}, "--churn-services must be in 2..100000, got 0"},
		{[]string{"run", "--tests", "churn", "--churn-rate", "NaN"}, "--churn-rate must be positive, got NaN"},
		{[]string{"run", "--tests", "churn", "--scenarios", "native"}, "--scenarios: native has no Service datapath to churn"},
		{[]string{"run", "--tests", "churn", "--target", "k8s", "--dry-run", "--api-qps", "0"}, "--api-qps must be in 1..5000, got 0"},
		{[]string{"run", "--tests", "churn", "--target", "k8s", "--dry-run", "--sync-verify", "api"}, "--sync-verify api: the churn times each change by the node probes"},
		{[]string{"run", "--tests", "churn", "--streams", "2"}, "--streams does not apply to the churn schedule"},
	} {
		_, _, err := cnibench(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: a multi-line error: %q", c.args, err)
		}
	}
	churned := func(name string) bool {
		n, err := parseScenarios([]string{name})
		return err == nil && suite.Churned(suite.Scenario{Parts: n[0]})
	}
	if !churned("IPTABLES+Churn") || churned("iptables") || churned("churned") {
		t.Error("suite.Churned")
	}
}

// On a cluster, the churn's --dry-run prints the agents and the first
// dummy Services with their EndpointSlices, and says how many the churn
// keeps and changes.
func TestChurnK8sDryRun(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent")
	out, errw, err := cnibench(t, "run", "--tests", "churn", "--target", "k8s", "--dry-run", "--churn-services", "100", "--churn-endpoints", "4")
	if err != nil {
		t.Fatalf("%v\n%s", err, errw)
	}
	for _, want := range []string{"the churn keeps 100 dummy Services (4 endpoints each", "kind: EndpointSlice", "name: cnb-scale-svc-0"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run does not say %q:\n%s", want, out[:min(len(out), 2000)])
		}
	}
}

// cnibench churn refuses bad input in one line, as run --tests churn does.
func TestChurnCommandRefuses(t *testing.T) {
	for _, args := range [][]string{{"churn", "--churn-rate", "0"}, {"churn", "--scenarios", "native"}, {"churn", "--scale-steps", "0,10"}, {"churn", "--rounds", "auto"}} {
		if _, _, err := cnibench(t, args...); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want a one-line refusal", args, err)
		}
	}
}
