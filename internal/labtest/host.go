package labtest

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/nsexec"
)

// RootRulesets is the host namespace's rulesets as every tool sees them,
// read only, to prove the tests never touch it.
func RootRulesets(t *testing.T) string {
	t.Helper()
	var out string
	for _, c := range [][]string{{"nft", "list", "ruleset"}, {"iptables-legacy-save"}, {"iptables-nft-save"}} {
		b, err := exec.Command(c[0], c[1:]...).Output()
		if err != nil {
			continue
		}
		out += c[0] + ":\n" + stripComments(string(b))
	}
	return out
}

// stripComments drops the "#" lines (the save tools' timestamps).
func stripComments(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// AssertNoNFTables checks that the namespace at ns holds no nftables
// table (nft list ruleset prints nothing) after a datapath's Close.
func AssertNoNFTables(t *testing.T, ns string) {
	t.Helper()
	rs, err := nsexec.Run(context.Background(), ns, nil, "nft", "list", "ruleset")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(rs)) != "" {
		t.Errorf("nftables ruleset not empty after Close:\n%s", rs)
	}
}
