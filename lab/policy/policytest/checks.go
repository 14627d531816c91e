package policytest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab/labtest"
	"github.com/cnibench/cnibench/lab/policy"
)

// OpenOrSkip opens an enforcer at site, closed at cleanup; it skips the
// test when the machine lacks a feature.
func OpenOrSkip(t *testing.T, open Open, site policy.Site) policy.Enforcer {
	t.Helper()
	enf, err := open(site)
	return labtest.OrSkip(t, enf, err)
}

// Sync programs spec and checks that Verify reads back Expected.
func Sync(t *testing.T, enf policy.Enforcer, spec policy.Spec, what string) {
	t.Helper()
	st, err := enf.Program(context.Background(), spec)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	got, err := enf.Verify(context.Background())
	want := enf.Expected(spec)
	if err != nil || got != want {
		t.Fatalf("%s: Verify %+v, %v (want %+v)", what, got, err, want)
	}
	t.Logf("%s: generate %v, apply %v; %+v", what, st.Generate, st.Apply, got)
}

// DeleteRule deletes, by hand with the tools, the kernel rule of the
// server's ingress rule 0 (the enforcer package knows its names).
type DeleteRule func(t *testing.T, e *Env, enf policy.Enforcer)

// Enforcement is the root check every enforcer passes: before any policy
// everything connects; with ClientServer the client connects and the
// other pod is dropped (and Drops counts it), and so is the client's
// connect to the other pod (egress); a rule deleted behind the
// enforcer's back fails Counts.Holds; a changed spec replaces the old
// state (counts equal, connectivity flipped); Close leaves no object
// carrying the lab prefix.
func Enforcement(t *testing.T, e *Env, open Open, del DeleteRule) {
	t.Helper()
	labtest.Listeners(t, e.Server, []uint16{Port})
	labtest.Listeners(t, e.Other, []uint16{Port})
	MustConnect(t, e.Other, e.Server) // the lab itself lets it through
	before := ruleset(t, e.Site)
	enf := OpenOrSkip(t, open, e.Site)
	ctx := context.Background()

	spec := e.ClientServer()
	Sync(t, enf, spec, "client-server")
	// A bad spec is refused in one line and changes nothing.
	bad := e.ClientServer()
	bad.Pods[0].HostIface = ""
	if _, err := enf.Program(ctx, bad); err == nil || !strings.Contains(err.Error(), "host interface") {
		t.Fatalf("a pod without its interface: %v", err)
	}
	if got, err := enf.Verify(ctx); err != nil || got.Holds(enf.Expected(spec)) != nil {
		t.Fatalf("after a refused spec: %+v, %v", got, err)
	}
	MustConnect(t, e.Client, e.Server)
	d0, err := enf.Drops(ctx)
	if err != nil {
		t.Fatal(err)
	}
	MustBeDropped(t, e.Other, e.Server)
	MustBeDropped(t, e.Client, e.Other)
	d1, err := enf.Drops(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d1 < d0+2 {
		t.Fatalf("Drops went from %d to %d after two denied connects, want +2 at least", d0, d1)
	}
	t.Logf("drops %d -> %d", d0, d1)

	del(t, e, enf)
	got, err := enf.Verify(ctx)
	if herr := got.Holds(enf.Expected(spec)); herr == nil || err == nil {
		t.Fatalf("a rule deleted by hand went unnoticed: Verify %+v, %v; Holds %v", got, err, herr)
	} else {
		t.Logf("caught: %v", err)
	}
	Sync(t, enf, spec, "repaired")

	// The other pod is allowed instead of the client; the client's
	// egress is no longer selected.
	srv := e.Pod(e.Server)
	srv.Ingress = []policy.Rule{Allow(e.Other)}
	changed := policy.Spec{Pods: []policy.PodPolicy{srv}}
	Sync(t, enf, changed, "changed")
	MustConnect(t, e.Other, e.Server)
	MustConnect(t, e.Client, e.Other)
	MustBeDropped(t, e.Client, e.Server)

	if err := enf.Close(); err != nil {
		t.Fatal(err)
	}
	if err := enf.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	AssertNoObjects(t, e.Site)
	if after := ruleset(t, e.Site); after != before {
		t.Errorf("nftables ruleset before Open:\n%s\nafter Close:\n%s", before, after)
	}
	MustConnect(t, e.Client, e.Server)
}

// ruleset is the namespace's whole nftables ruleset (iptables-nft's
// tables included).
func ruleset(t *testing.T, site policy.Site) string {
	t.Helper()
	out, err := nsexec.Run(context.Background(), site.Netns, nil, "nft", "list", "ruleset")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// AssertNoObjects checks that no iptables chain, ipset or nftables object
// of the namespace carries the site's prefix.
func AssertNoObjects(t *testing.T, site policy.Site) {
	t.Helper()
	for _, c := range [][]string{{"iptables-nft-save"}, {"ipset", "list", "-n"}, {"nft", "list", "ruleset"}} {
		out, err := nsexec.Run(context.Background(), site.Netns, nil, c[0], c[1:]...)
		if err != nil {
			t.Fatalf("%s: %v", c[0], err)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, site.Prefix) {
				t.Errorf("%s shows a leftover: %s", c[0], l)
			}
		}
	}
}

// Step is one policy-scale step: a spec and what it scales.
type Step struct {
	what string // "rules" or "peers"
	n    int
	spec policy.Spec
}

// Steps are the two policy-scale steps of size n: ScaleRules(n) in front
// of the server's rule, and the server's rule with ScalePeers(n) more
// peers.
func (e *Env) Steps(t *testing.T, n int) []Step {
	t.Helper()
	rules, err := policy.ScaleRules(n, policy.Port{Protocol: datapath.TCP, Port: Port})
	if err != nil {
		t.Fatal(err)
	}
	peers, err := policy.ScalePeers(n)
	if err != nil {
		t.Fatal(err)
	}
	wide := Allow(e.Client)
	wide.Peers = append(wide.Peers, peers...)
	return []Step{{"rules", n, e.ClientServer(rules...)}, {"peers", n, e.ClientServer(wide)}}
}

// Run programs the step and reads it back, failing unless the counts
// equal Expected, and returns the wall times and the enforcer's stats.
func (s Step) Run(t *testing.T, enf policy.Enforcer) (prog, ver time.Duration, st datapath.ProgramStats) {
	t.Helper()
	t0 := time.Now()
	st, err := enf.Program(context.Background(), s.spec)
	if err != nil {
		t.Fatal(err)
	}
	prog = time.Since(t0)
	t1 := time.Now()
	got, err := enf.Verify(context.Background())
	ver = time.Since(t1)
	if want := enf.Expected(s.spec); err != nil || got != want {
		t.Fatalf("%d %s: %+v, %v; want %+v", s.n, s.what, got, err, want)
	}
	return prog, ver, st
}

// Scale programs both steps of size n, one after the other (each
// replaces the one before), then the peers step again, logs the times, and fails if a Program or Verify
// takes longer than limit.
func Scale(t *testing.T, e *Env, open Open, n int, limit time.Duration) {
	t.Helper()
	labtest.Listeners(t, e.Server, []uint16{Port})
	enf := OpenOrSkip(t, open, e.Site)
	steps := e.Steps(t, n)
	// The peers step twice: the second rewrites a set that exists.
	for i, s := range append(steps, steps[1]) {
		prog, ver, st := s.Run(t, enf)
		t.Logf("SCALE enforcer=%s %s=%d step=%d program=%.3fs (generate %.3fs apply %.3fs, %d bytes) verify=%.3fs",
			enf.Name(), s.what, n, i, prog.Seconds(), st.Generate.Seconds(), st.Apply.Seconds(), st.Bytes, ver.Seconds())
		if prog > limit || ver > limit {
			t.Errorf("%d %s: program %v, verify %v, over %v", n, s.what, prog, ver, limit)
		}
	}
	MustConnect(t, e.Client, e.Server)
	if err := enf.Close(); err != nil {
		t.Fatal(err)
	}
	AssertNoObjects(t, e.Site)
}

// Sweep measures, for each n of sizes, programming and Verify time of
// both steps, each from an empty node (the enforcer closed in between),
// and logs one SWEEP line per step; it is a measurement, skipped unless
// CNB_POLICY_SWEEP=1.
func Sweep(t *testing.T, e *Env, open Open, sizes []int) {
	t.Helper()
	if os.Getenv("CNB_POLICY_SWEEP") != "1" {
		t.Skip("a measurement: set CNB_POLICY_SWEEP=1")
	}
	enf := OpenOrSkip(t, open, e.Site)
	for _, n := range sizes {
		for _, s := range e.Steps(t, n) {
			prog, ver, st := s.Run(t, enf)
			if err := enf.Close(); err != nil {
				t.Fatal(err)
			}
			t.Logf("SWEEP enforcer=%s %s=%d program=%.3fs generate=%.3fs apply=%.3fs bytes=%d verify=%.3fs",
				enf.Name(), s.what, n, prog.Seconds(), st.Generate.Seconds(), st.Apply.Seconds(), st.Bytes, ver.Seconds())
		}
	}
}

// All runs the shared root checks of an enforcer as subtests, each on a
// lab of its own named <tag>...: Enforcement, Scale at 10,000 (each
// Program and Verify within 10 s), and Sweep (only with
// CNB_POLICY_SWEEP=1).
func All(t *testing.T, tag string, open Open, del DeleteRule) {
	t.Run("Enforcement", func(t *testing.T) { Enforcement(t, NewEnv(t, tag), open, del) })
	t.Run("Scale10k", func(t *testing.T) { Scale(t, NewEnv(t, tag+"s"), open, 10000, 10*time.Second) })
	t.Run("Sweep", func(t *testing.T) {
		if os.Getenv("CNB_POLICY_SWEEP") != "1" {
			t.Skip("a measurement: set CNB_POLICY_SWEEP=1")
		}
		Sweep(t, NewEnv(t, tag+"w"), open, []int{10, 100, 1000, 10000})
	})
}
