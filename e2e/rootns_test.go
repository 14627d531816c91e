package e2e

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// rootSnapshot captures the root network namespace's addresses, routes,
// rules and firewall rulesets, which the lab must never change.
func rootSnapshot(t *testing.T) map[string]string {
	t.Helper()
	counters := regexp.MustCompile(`\[\d+:\d+\]|packets \d+ bytes \d+|^#.*$`)
	snap := map[string]string{}
	for _, args := range [][]string{
		{"ip", "-d", "addr"}, {"ip", "route", "show", "table", "all"}, {"ip", "rule"},
		{"ip", "-6", "route", "show", "table", "all"}, {"nft", "list", "ruleset"}, {"iptables-save"}, {"ip6tables-save"},
	} {
		if _, err := exec.LookPath(args[0]); err != nil {
			continue
		}
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
		var lines []string
		for _, line := range strings.Split(string(out), "\n") {
			lines = append(lines, counters.ReplaceAllString(line, ""))
		}
		snap[strings.Join(args, " ")] = strings.Join(lines, "\n")
	}
	return snap
}

func assertRootUnchanged(t *testing.T, before map[string]string) {
	t.Helper()
	after := rootSnapshot(t)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("root namespace changed: %s\nbefore:\n%s\nafter:\n%s", k, v, after[k])
		}
	}
}
