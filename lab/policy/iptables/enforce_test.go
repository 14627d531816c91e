package iptables

import (
	"context"
	"testing"

	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab/policy"
	"github.com/cnibench/cnibench/lab/policy/internal/nfrule"
	"github.com/cnibench/cnibench/lab/policy/policytest"
)

// The shared root checks (policytest.All); the rule deleted by hand is
// the first of the server's ingress chain.
func TestShared(t *testing.T) {
	policytest.All(t, "pipt", Open, func(t *testing.T, e *policytest.Env, enf policy.Enforcer) {
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
