package nftables

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab/policy"
	"github.com/cnibench/cnibench/lab/policy/internal/nfrule"
	"github.com/cnibench/cnibench/lab/policy/policytest"
)

// The shared root checks (policytest.All); the rule deleted by hand is
// the first of the server's ingress chain.
func TestShared(t *testing.T) {
	policytest.All(t, "pnft", Open, func(t *testing.T, e *policytest.Env, enf policy.Enforcer) {
		table := e.Site.Prefix + "policy"
		chain := namer{}.Chain(e.Server.Name, nfrule.Dirs(policy.PodPolicy{})[0])
		h := firstHandle(t, e.Site.Netns, table, chain)
		if _, err := nsexec.Run(context.Background(), e.Site.Netns, nil, "nft", "delete", "rule", "ip", table, chain, "handle", fmt.Sprint(h)); err != nil {
			t.Fatal(err)
		}
	})
}

// firstHandle is the handle of chain's first rule.
func firstHandle(t *testing.T, ns, table, chain string) int {
	t.Helper()
	out, err := nsexec.Run(context.Background(), ns, nil, "nft", "-j", "-a", "list", "chain", "ip", table, chain)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Nftables []map[string]json.RawMessage }
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	for _, o := range doc.Nftables {
		if raw, ok := o["rule"]; ok {
			var r struct{ Handle int }
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			return r.Handle
		}
	}
	t.Fatalf("chain %s has no rule", chain)
	return 0
}
