package nftables

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/policy"
	"github.com/cnibench/cnibench/policy/internal/nfrule"
	"github.com/cnibench/cnibench/policy/policytest"
)

// The shared root checks: enforcement with real connects and the drop
// counter, a hand-deleted rule caught, reprogramming, Close.
func TestEnforcement(t *testing.T) {
	e := policytest.NewEnv(t, "pnft")
	policytest.Enforcement(t, e, Open, func(t *testing.T, e *policytest.Env, enf policy.Enforcer) {
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

// 10,000 rules in front of the server's, then 10,000 peers in one rule.
func TestScale10k(t *testing.T) {
	e := policytest.NewEnv(t, "pnfts")
	policytest.Scale(t, e, Open, 10000, 10*time.Second)
}

func TestRegistered(t *testing.T) {
	v, err := policy.ForDatapath("nftables-flat")
	if err != nil || v.Name != Name {
		t.Fatalf("ForDatapath(nftables-flat) = %v, %v", v.Name, err)
	}
}

// Programming and Verify times at 10 .. 10,000 (CNB_POLICY_SWEEP=1).
func TestSweep(t *testing.T) {
	policytest.Sweep(t, policytest.NewEnv(t, "psw"), Open, []int{10, 100, 1000, 10000})
}
