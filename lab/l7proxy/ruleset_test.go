package l7proxy

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab"
)

// counters are iptables-save's packet and byte counts, which traffic moves.
var counters = regexp.MustCompile(`\[\d+:\d+\]`)

// rulesets is every lab namespace's netfilter state, nft's and
// iptables-save's, without counters or iptables-save's dated comments:
// what a deployment must leave as it found it.
func rulesets(t *testing.T, l *lab.Lab) map[string]string {
	t.Helper()
	var nss []string
	for _, n := range l.Nodes {
		nss = append(nss, n.Netns)
		for _, p := range n.Pods {
			nss = append(nss, p.Netns)
		}
	}
	out := map[string]string{}
	for _, ns := range nss {
		nft, err := nsexec.Run(context.Background(), netnsx.Path(ns), nil, "nft", "-s", "list", "ruleset")
		if err != nil {
			t.Fatal(err)
		}
		save, err := nsexec.Run(context.Background(), netnsx.Path(ns), nil, "iptables-save")
		if err != nil {
			t.Fatal(err)
		}
		var keep []string
		for _, line := range strings.Split(string(save), "\n") {
			if !strings.HasPrefix(line, "#") {
				keep = append(keep, counters.ReplaceAllString(line, "[0:0]"))
			}
		}
		out[ns] = string(nft) + "\n--- iptables-save\n" + strings.Join(keep, "\n")
	}
	return out
}

// checkRulesets compares two rulesets snapshots namespace by namespace.
func checkRulesets(t *testing.T, before, after map[string]string) {
	t.Helper()
	for ns, b := range before {
		if a := after[ns]; a != b {
			t.Errorf("%s: netfilter state before Start:\n%s\nafter teardown:\n%s", ns, b, a)
		}
	}
}
