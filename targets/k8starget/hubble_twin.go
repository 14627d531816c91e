package k8starget

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/results"
)

// The flows twin switches Cilium's flow observability (Hubble) with the
// agents' own flag, enable-hubble in cilium-config, which the agents read
// only when they start: switching it restarts every Cilium agent as
// `kubectl rollout restart ds/cilium` does, waits until each is Ready
// again, and asks each agent of the run's nodes what it runs
// (`cilium-dbg status -o json` in its pod, as cilium-cli does).
const hubbleKey = "enable-hubble"

// hubblePoll is how often an agent's status is read while waiting for a
// state or for flows; hubbleProbe is the proof's connection load. Tests
// shorten both.
var (
	hubblePoll  = time.Second
	hubbleProbe = time.Second
)

// ciliumStatusCommands ask an agent for its status: cilium-dbg, or the
// older agents' cilium.
var ciliumStatusCommands = [][]string{{"cilium-dbg", "status", "-o", "json"}, {"cilium", "status", "-o", "json"}}

// hubbleToggle is the flows twin's part.
type hubbleToggle struct {
	t       *Target
	exec    Execer
	comp    Component
	nodes   []string // the run's nodes: each agent there must agree
	server  string   // the endpoint the proof's connections go to
	timeout time.Duration

	orig    restoreRecord // enable-hubble before the run
	applied bool          // Hubble on in the agents now, as far as a rollout proved
	dirty   bool          // the config was written and the agents may not run it yet
	changed bool          // cilium-config carries this run's record
}

func (h *hubbleToggle) Part() string   { return "flows" }
func (h *hubbleToggle) Restarts() bool { return true }
func (h *hubbleToggle) How() string {
	return fmt.Sprintf("Hubble switched with enable-hubble in %s/%s and a rolling restart of DaemonSet %s/%s (its template annotated as kubectl rollout restart does), awaited until every agent is Ready; on: every agent of the run's nodes reports Hubble Ok and their seen-flows rise, by at least half the connections of a %s TCP_CRR probe altogether; off: every agent reports Hubble Disabled",
		h.comp.Namespace, ciliumConfigName, h.comp.Namespace, h.comp.DaemonSet, hubbleProbe)
}

// Check reads what every agent of the run's nodes runs now; cilium-config
// must not carry an earlier run's change.
func (h *hubbleToggle) Check(ctx context.Context) (bool, string, error) {
	cm, err := h.t.cs.CoreV1().ConfigMaps(h.comp.Namespace).Get(ctx, ciliumConfigName, metav1.GetOptions{})
	if err != nil {
		return false, "", fmt.Errorf("read %s/%s: %w", h.comp.Namespace, ciliumConfigName, err)
	}
	for _, key := range recordedKeys(cm) {
		rec, _, err := readRestore(cm, key)
		if err != nil {
			return false, "", err
		}
		return false, "", leftoverError(h.comp.Namespace, key, rec)
	}
	v, present := cm.Data[hubbleKey]
	h.orig = restoreRecord{RunID: h.t.cfg.RunID, Value: v, Present: present}
	agents, err := ciliumAgents(ctx, h.t.cs, &h.comp, h.nodes, 0)
	if err != nil {
		return false, "", err
	}
	sts, err := h.statuses(ctx, agents)
	if err != nil {
		return false, "", err
	}
	on := sts[0].On()
	for i, s := range sts {
		if s.On() != on {
			return false, "", fmt.Errorf("the Cilium agents disagree about Hubble: %s", statusesText(agents, sts))
		}
		if !s.On() && s.State != HubbleDisabled {
			return false, "", fmt.Errorf("Hubble on node %s is %s: neither on nor off", agents[i].Node, s)
		}
	}
	h.applied = on
	return on, fmt.Sprintf("Hubble %s now (%s; cilium-config %s=%s)", onOff(on), statusesText(agents, sts), hubbleKey, h.orig), nil
}

// Set writes enable-hubble, restarts the agents, waits for them and the
// run's Services, and proves the state on every agent of the run's nodes.
func (h *hubbleToggle) Set(ctx context.Context, on bool) (string, error) {
	h.dirty = true
	if err := setCiliumKey(ctx, h.t.cs, h.comp.Namespace, hubbleKey, strconv.FormatBool(on), h.t.cfg.RunID); err != nil {
		return "", err
	}
	h.changed = true
	start := time.Now()
	gen, err := restartDaemonSet(ctx, h.t.cs, h.comp.Namespace, h.comp.DaemonSet, h.timeout)
	if err != nil {
		return "", err
	}
	agents, err := waitCiliumAgents(ctx, h.t.cs, &h.comp, h.nodes, gen, h.timeout)
	if err != nil {
		return "", err
	}
	h.applied, h.dirty = on, false
	rolled := time.Since(start).Round(100 * time.Millisecond)
	// The run's Services forward again before the proof and the next
	// sample (said in this switch's line, not a progress line of its own).
	reach, err := h.t.servicesReachable(ctx, h.timeout)
	if err != nil {
		return "", err
	}
	proof, err := h.prove(ctx, agents, on)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("rolled out in %s, Services forwarding %s later; %s", rolled, reach.Round(100*time.Millisecond), proof), nil
}

// prove waits until every agent reports the state, and for on until a
// probe's connections show up in every agent's seen-flows: each new
// connection is a flow on each of the two nodes at least (to-stack on the
// client's, to-endpoint on the server's, even with monitor aggregation),
// so half the connections altogether leaves room for events an agent's
// ring drops under load while background flows (readiness probes) stay
// far below it.
func (h *hubbleToggle) prove(ctx context.Context, agents []ciliumAgent, on bool) (string, error) {
	want := HubbleDisabled
	if on {
		want = HubbleOK
	}
	sts, err := h.await(ctx, agents, func(sts []HubbleStatus) bool {
		for _, s := range sts {
			if s.State != want {
				return false
			}
		}
		return true
	}, "Hubble "+want)
	if err != nil || !on {
		return "Hubble " + want + " on " + nodesText(agents) + " (cilium-dbg status)", err
	}
	client, srv := h.t.agents[netPolClient], h.t.pods[h.server]
	if client == nil || srv == nil {
		return "", fmt.Errorf("no client or server agent to send the flows proof's connections")
	}
	res, err := agent.RunAs[engine.Result](ctx, client, results.KindRR, &engine.Options{Test: engine.TCPCRR, Host: srv.Status.PodIP, RunnerOptions: engine.RunnerOptions{Duration: engine.Duration(hubbleProbe)}, Streams: 1})
	if err != nil {
		return "", fmt.Errorf("the flows proof's TCP_CRR from %s to %s: %w", netPolClient, h.server, err)
	}
	conns := res.Transactions
	if conns == 0 {
		return "", fmt.Errorf("the flows proof's TCP_CRR from %s to %s made no connection", netPolClient, h.server)
	}
	after, err := h.await(ctx, agents, func(now []HubbleStatus) bool {
		var sum int64
		for i := range now {
			d := now[i].SeenFlows - sts[i].SeenFlows
			if d <= 0 {
				return false
			}
			sum += d
		}
		return 2*sum >= conns
	}, fmt.Sprintf("seen-flows rising on every agent, by at least half the probe's %d connections altogether", conns))
	if err != nil {
		return "", err
	}
	var rises []string
	for i := range after {
		rises = append(rises, fmt.Sprintf("+%d on %s", after[i].SeenFlows-sts[i].SeenFlows, agents[i].Node))
	}
	return fmt.Sprintf("Hubble Ok on %s; a %s TCP_CRR of %d connections %s → %s raised seen-flows %s", nodesText(agents), hubbleProbe, conns, netPolClient, h.server, strings.Join(rises, ", ")), nil
}

// await reads every agent's status until done holds or the timeout
// passes, which is an error naming what was awaited and the last states.
func (h *hubbleToggle) await(ctx context.Context, agents []ciliumAgent, done func([]HubbleStatus) bool, what string) ([]HubbleStatus, error) {
	deadline := time.Now().Add(h.timeout)
	for {
		sts, err := h.statuses(ctx, agents)
		if err == nil && done(sts) {
			return sts, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !time.Now().Before(deadline) {
			if err != nil {
				return nil, fmt.Errorf("waiting %s for %s: %w", h.timeout, what, err)
			}
			return nil, fmt.Errorf("no %s within %s: %s", what, h.timeout, statusesText(agents, sts))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(hubblePoll):
		}
	}
}

// statuses asks every agent for its Hubble status.
func (h *hubbleToggle) statuses(ctx context.Context, agents []ciliumAgent) ([]HubbleStatus, error) {
	var out []HubbleStatus
	for _, a := range agents {
		st, err := h.status(ctx, a)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func (h *hubbleToggle) status(ctx context.Context, a ciliumAgent) (HubbleStatus, error) {
	var errs []error
	for _, cmd := range ciliumStatusCommands {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		out, err := h.exec.Exec(rctx, h.comp.Namespace, a.Pod, a.Container, cmd)
		cancel()
		if err == nil {
			st, err := ParseHubbleStatus(out)
			if err != nil {
				return st, fmt.Errorf("Cilium agent %s on node %s: %w", a.Pod, a.Node, err)
			}
			return st, nil
		}
		errs = append(errs, err)
	}
	return HubbleStatus{}, fmt.Errorf("ask the Cilium agent %s on node %s for its status: %w", a.Pod, a.Node, errors.Join(errs...))
}

// restore puts enable-hubble back as it was and, when the agents run
// otherwise, restarts them once more. It runs on its own context, so it
// also works after Ctrl-C; the Target's Close calls it.
func (h *hubbleToggle) restore() (string, error) {
	if h == nil || !h.changed {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*h.timeout)
	defer cancel()
	h.t.progress("restoring %s/%s %s to %s ...", h.comp.Namespace, ciliumConfigName, hubbleKey, h.orig)
	if _, _, err := restoreCiliumKey(ctx, h.t.cs, h.comp.Namespace, hubbleKey); err != nil {
		h.t.progress(" failed\n")
		return "", fmt.Errorf("restore %s/%s %s to %s: %w (run 'cnibench k8s cleanup')", h.comp.Namespace, ciliumConfigName, hubbleKey, h.orig, err)
	}
	h.changed = false
	what := fmt.Sprintf("%s/%s %s restored to %s", h.comp.Namespace, ciliumConfigName, hubbleKey, h.orig)
	origOn, _ := strconv.ParseBool(h.orig.Value) // unset: Cilium's default, off
	if !h.dirty && h.applied == origOn {
		h.t.progress(" done (the agents already run it)\n")
		return what + " (the agents already ran it: no restart)", nil
	}
	if _, err := restartDaemonSet(ctx, h.t.cs, h.comp.Namespace, h.comp.DaemonSet, h.timeout); err != nil {
		h.t.progress(" failed\n")
		return what, fmt.Errorf("%s, but restarting Cilium failed: %w (run 'cnibench k8s cleanup')", what, err)
	}
	h.t.progress(" done\n")
	return what + fmt.Sprintf(" and DaemonSet %s/%s restarted", h.comp.Namespace, h.comp.DaemonSet), nil
}

// statusesText is "node-a: Ok (seen 12 flows), node-b: Disabled".
func statusesText(agents []ciliumAgent, sts []HubbleStatus) string {
	var parts []string
	for i := range sts {
		parts = append(parts, agents[i].Node+": "+sts[i].String())
	}
	return strings.Join(parts, ", ")
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}
