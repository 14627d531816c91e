package iptables

import (
	"context"
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
	e := policytest.NewEnv(t, "pipt")
	policytest.Enforcement(t, e, Open, func(t *testing.T, e *policytest.Env, enf policy.Enforcer) {
		n, err := newNames(e.Site.Prefix)
		if err != nil {
			t.Fatal(err)
		}
		chain := n.Chain(e.Server.Name, nfrule.Dirs(policy.PodPolicy{})[0])
		if _, err := nsexec.Run(context.Background(), e.Site.Netns, nil, "iptables-nft", "-D", chain, "1"); err != nil {
			t.Fatal(err)
		}
	})
}

// 10,000 rules in front of the server's, then 10,000 peers in one rule.
func TestScale10k(t *testing.T) {
	e := policytest.NewEnv(t, "pipts")
	policytest.Scale(t, e, Open, 10000, 10*time.Second)
}

func TestRegistered(t *testing.T) {
	v, err := policy.ForDatapath("iptables-legacy")
	if err != nil || v.Name != Name {
		t.Fatalf("ForDatapath(iptables-legacy) = %v, %v", v.Name, err)
	}
}

// Programming and Verify times at 10 .. 10,000 (CNB_POLICY_SWEEP=1).
func TestSweep(t *testing.T) {
	policytest.Sweep(t, policytest.NewEnv(t, "psw"), Open, []int{10, 100, 1000, 10000})
}
