package k8starget

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
)

// SecurityConfig makes a run the security profile's twins on one cluster
// (--profile security): the same cluster measured with and without a
// NetworkPolicy and, on Cilium with AllowClusterChanges, with and without
// Hubble. The denied prober of the NetworkPolicy check is deployed; the
// policy itself exists only during the policy twin's samples.
type SecurityConfig struct {
	// AllowClusterChanges lets the flows twin switch enable-hubble in
	// cilium-config (restarting Cilium's agents); restored by Close, or
	// by `k8s cleanup` after a kill.
	AllowClusterChanges bool `json:"allow_cluster_changes,omitempty"`
	// Exec asks the Cilium agents for their Hubble state (PodExec).
	Exec Execer `json:"-"`
}

func (c *Config) validateSecurity() error {
	if c.Security == nil {
		return nil
	}
	switch {
	case c.Scale != nil:
		return errors.New("--profile security does not apply to the Service-scale sweep or the churn")
	case c.NetworkPolicyCheck:
		return errors.New("--network-policy-check keeps its policy for the whole run, but --profile security measures the cluster with and without it: drop the flag (the policy twin runs the same check)")
	}
	if eps, _ := endpointsFor(c.Placements, c.Pairs); len(netPolServers(Layout{Endpoints: eps})) == 0 {
		return errors.New("--profile security needs a placement with a server on the pod network (pod-to-pod or pod-to-service)")
	}
	return nil
}

// deniedProber says whether the layout gets the NetworkPolicy check's
// denied prober: the check, or the security profile's policy twin.
func (c *Config) deniedProber() bool { return c.NetworkPolicyCheck || c.Security != nil }

// SecurityTwins are the security profile's twins on this cluster, each a
// scenario named base+part over the same Target, and the profile's parts
// that cannot apply here, each with why. The policy twin is always
// offered (its check refuses it where the CNI does not enforce
// NetworkPolicy); the flows twin refuses itself, saying why, where Cilium
// is absent or --allow-cluster-changes was not given.
func (t *Target) SecurityTwins(base string) ([]suite.Twin, []suite.Scenario, []results.NotMeasured) {
	pol := &policyToggle{t: t}
	twins := []suite.Twin{{Scenario: base + "+" + pol.Part(), Toggle: pol}}
	var flows suite.Toggle = refusedToggle{part: "flows", how: "Hubble switched with enable-hubble in cilium-config", why: t.hubbleRefusal()}
	if h := t.newHubbleToggle(); h != nil {
		flows = h
	}
	twins = append(twins, suite.Twin{Scenario: base + "+flows", Toggle: flows})
	var scs []suite.Scenario
	for _, tw := range twins {
		scs = append(scs, suite.Scenario{Name: tw.Scenario, Parts: results.ScenarioName{base, tw.Toggle.Part()}, Target: &TwinTarget{Target: t, Part: tw.Toggle.Part()}})
	}
	return twins, scs, l7NotMeasured(t.prov.CNI)
}

// newHubbleToggle is the flows twin's part where it can apply (nil
// elsewhere: hubbleRefusal says why).
func (t *Target) newHubbleToggle() *hubbleToggle {
	s := t.cfg.Security
	comp := t.prov.CNI.component("cilium")
	if s == nil || !s.AllowClusterChanges || s.Exec == nil || comp == nil {
		return nil
	}
	servers := netPolServers(t.layout)
	if len(servers) == 0 {
		return nil
	}
	srv := servers[len(servers)-1] // node1-pod0 where the run has it: both nodes see the flows
	nodes := []string{t.layout.Nodes[0]}
	if n := t.pods[srv]; n != nil && n.Spec.NodeName != nodes[0] {
		nodes = append(nodes, n.Spec.NodeName)
	}
	t.hubble = &hubbleToggle{t: t, exec: s.Exec, comp: *comp, nodes: nodes, server: srv, timeout: DefaultRolloutTimeout}
	return t.hubble
}

// hubbleRefusal says why the flows twin cannot run on this cluster.
func (t *Target) hubbleRefusal() string {
	comp := t.prov.CNI.component("cilium")
	switch {
	case comp == nil:
		return fmt.Sprintf("no Cilium on this cluster (CNI %s): its Hubble is the flow observability the twin switches", cniName(t.prov.CNI))
	case t.cfg.Security == nil || !t.cfg.Security.AllowClusterChanges:
		return fmt.Sprintf("switching Hubble changes enable-hubble in %s/%s and restarts Cilium's agents: pass --allow-cluster-changes (restored at the end; RBAC: cnibench k8s rbac --allow-cluster-changes)", comp.Namespace, ciliumConfigName)
	case t.cfg.Security.Exec == nil:
		return "no way to ask the Cilium agents for their Hubble state (pods/exec)"
	}
	return "no server on the pod network to send the proof's connections to"
}

// l7NotMeasured are the L7 parts, which no cluster run measures yet, with
// what this cluster's CNI would have to offer.
func l7NotMeasured(cni *CNI) []results.NotMeasured {
	proxy := fmt.Sprintf("CNI %s has no L7 proxy cnibench can put on the path", cniName(cni))
	if c := cni.component("cilium"); c != nil {
		proxy = "Cilium's per-node Envoy is not switched by cnibench on clusters yet (--network-policy-check verifies an L7 rule once)"
		if cni.Cilium != nil && strings.EqualFold(cni.Cilium.Keys["enable-l7-proxy"], "false") {
			proxy = "this Cilium runs with enable-l7-proxy=false: no L7 proxy"
		}
	}
	return []results.NotMeasured{
		{Part: "l7-node", Reason: "an L7 proxy on the server's node: " + proxy},
		{Part: "l7-egress", Reason: "an L7 proxy on the client's node: " + proxy},
		{Part: "l7-sidecar", Reason: "a proxy per pod needs a service mesh's sidecars, which cnibench does not inject on clusters"},
	}
}

func cniName(cni *CNI) string {
	if cni == nil {
		return "unknown"
	}
	return cni.Plugin
}

// refusedToggle is a twin whose part cannot apply here: its check says why.
type refusedToggle struct{ part, how, why string }

func (r refusedToggle) Part() string   { return r.part }
func (r refusedToggle) How() string    { return r.how }
func (r refusedToggle) Restarts() bool { return true }
func (r refusedToggle) Check(context.Context) (bool, string, error) {
	return false, "", errors.New(r.why)
}
func (r refusedToggle) Set(context.Context, bool) (string, error) { return "", errors.New(r.why) }

// SecurityPlan says, for a dry run, what the twins would do (no cluster is
// contacted: what applies is decided when the run opens).
func SecurityPlan(cfg Config, base string) []string {
	s := cfg.Security
	flows := "flows (" + base + "+flows): where Cilium runs, pass --allow-cluster-changes to switch Hubble (refused without it)"
	if s != nil && s.AllowClusterChanges {
		flows = fmt.Sprintf("flows (%s+flows): where Cilium runs, enable-hubble in cilium-config switched (its value before the run recorded in the annotation %s%s, restored at the end or by 'cnibench k8s cleanup') and the cilium DaemonSet restarted once a round, awaited until every agent is Ready; proved by 'cilium-dbg status -o json' in each run node's agent (off: Hubble Disabled; on: Hubble Ok and seen-flows rising on every agent, by at least half a %s TCP_CRR probe's connections altogether); refused without Cilium", base, restorePrefix, hubbleKey, hubbleProbe)
	}
	return []string{
		fmt.Sprintf("security twins on one cluster: %s (base) and each part below, every round a segment per twin, the order reversed every round (ABBA), paired by round", base),
		fmt.Sprintf("policy (%s+policy): the NetworkPolicy %s below, created before the twin's segment and deleted after it; proved on by the pod %s (below) dropped and %s connecting, off by every probe connecting; refused where the CNI does not enforce it (checked before the first round)", base, NetPolName, NetPolDeniedEndpoint, netPolClient),
		flows,
		"not measured on clusters: l7-node, l7-egress (an L7 proxy on the path), l7-sidecar (sidecars): each said with its reason in the results",
	}
}
