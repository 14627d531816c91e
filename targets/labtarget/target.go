// Package labtarget runs the suite on the local lab: it brings the lab up if
// it is not there (and takes it down again afterwards), starts one agent per
// endpoint the plan needs, inside that endpoint's namespace and cgroup, with
// clients and servers pinned to different CPUs, and maps placements onto
// lab endpoints.
package labtarget

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/ebpf"
	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
	"github.com/cnibench/cnibench/targets/labtarget/part"
)

// Config of the lab target.
type Config struct {
	Lab        lab.Config
	Placements []string
	RunID      string
	Progress   io.Writer
	// Executable is the cnibench binary started as agent; "" = this one.
	Executable string
	// HTTPResponseSize and HTTPWork configure the server agents' HTTP
	// server (0: 512-byte bodies, no artificial work).
	HTTPResponseSize int
	HTTPWork         time.Duration
	// EBPF sizes the eBPF Service datapaths' maps (the Service-scale sweep
	// sets AutoSize or LBMapMax); zero = their defaults.
	EBPF ebpf.Options
	// Parts are the scenario's parts (ScenarioConfig): the run opens them
	// on the lab, proves them and closes them, whether it brought the lab
	// up or found it running.
	Parts []part.Part
	// CPUPinning is PinSplit (the default when ""), or PinNone: the
	// agents float over every CPU as a cluster's pods do.
	CPUPinning string
	// Pairs is how many client→server pairs each sample runs at once
	// (run --pairs; 0 and 1 are one): pairs.go.
	Pairs int
}

// CPU pinnings of the agents: split puts every client on CPU 0 and every
// server on CPU 1, as bench/ pins the C tools, so a test's numbers do not
// move with where the scheduler happens to put the two ends; none lets
// them float as a cluster's pods do, to see what pinning hides or adds.
const (
	PinSplit = "split"
	PinNone  = "none"
)

// PinningNames lists the pinnings for --cpu-pinning.
var PinningNames = []string{PinSplit, PinNone}

// Target is an open lab with running agents. Close it.
type Target struct {
	cfg        Config
	lockFile   *os.File
	lab        *lab.Lab
	created    bool
	agents     map[string]*agentProc
	clientCPUs []int
	serverCPUs []int
	dir        string
	dps        []datapath.Datapath      // the lab's Service datapath, when it has one
	stack      part.Stack               // the scenario's parts, open (parts.go)
	sysctls    map[string]agent.Sysctls // effective, per endpoint (sysctls.go)
	notes      []string
}

type agentProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	client *agent.Client
	exited chan struct{}
	err    error // how it ended (cmd.Wait), set before exited is closed
	cpus   []int // how it was started, to start a fresh one (agents.go)
	server bool
}

// placementEndpoints maps each placement onto lab endpoints (client, server).
var placementEndpoints = map[string][2]string{
	suite.PodToPodSameNode:   {"node0-pod0", "node0-pod1"},
	suite.PodToPodOtherNode:  {"node0-pod0", "node1-pod0"},
	suite.HostToHostOtherNod: {"node0", "node1"},
	// The servers of pod-to-service are the test Service's backends: every
	// pod of node1, or every pod of node0 but the client (services.go).
	suite.PodToServiceSameNode:  {serviceClient, "node0-pods"},
	suite.PodToServiceOtherNode: {serviceClient, "node1-pods"},
}

// Open brings the lab up if needed and starts the agents the placements need.
func Open(ctx context.Context, cfg Config) (t *Target, err error) {
	if err := lab.RequirePrivileges(); err != nil {
		return nil, err
	}
	if err := cfg.Lab.Validate(); err != nil {
		return nil, err
	}
	if cfg.CPUPinning != "" && !slices.Contains(PinningNames, cfg.CPUPinning) {
		return nil, fmt.Errorf("cpu pinning %q: want one of %s", cfg.CPUPinning, strings.Join(PinningNames, ", "))
	}
	if err := checkPairParts(cfg); err != nil {
		return nil, err
	}
	t = &Target{cfg: cfg, agents: map[string]*agentProc{}}
	defer func() {
		if err != nil {
			// A failed teardown must not go unsaid behind the open error.
			err = errors.Join(err, t.Close())
		}
	}()
	l, err := t.useOrBringUp(ctx)
	if err != nil {
		return t, err
	}
	t.lab = l
	if err := t.checkPairPods(); err != nil {
		return t, err
	}

	// Clients on CPU 0, servers on CPU 1, as the C tools are pinned in
	// bench/; with one CPU, or --cpu-pinning none, nothing is pinned.
	if n := runtime.NumCPU(); n >= 2 && cfg.CPUPinning != PinNone {
		t.clientCPUs, t.serverCPUs = []int{0}, []int{1}
	}
	// One run at a time per lab: agents listen on fixed ports in the lab's
	// namespaces, and two runs would measure each other anyway.
	if err := t.lock(); err != nil {
		return t, err
	}
	t.dir = filepath.Join(cfg.Lab.StateDir, cfg.Lab.Name, "agents")
	if err := os.MkdirAll(t.dir, 0o700); err != nil {
		return t, fmt.Errorf("agent directory: %w", err)
	}
	// A unix socket path must fit in sun_path (108 bytes with its NUL).
	if longest := filepath.Join(t.dir, "node15-pod31.sock"); len(longest) > 107 {
		return t, fmt.Errorf("--state-dir %s is too long for agent sockets (%d bytes, max 107 for %s): use a shorter one", cfg.Lab.StateDir, len(longest), longest)
	}
	order, isClient, err := t.endpoints(l)
	if err != nil {
		return t, err
	}
	t.progress("starting %d agents ...", len(order))
	for _, ep := range order {
		cpus := t.serverCPUs
		if isClient[ep] {
			cpus = t.clientCPUs
		}
		if err := t.startAgent(ctx, ep, cpus, !isClient[ep]); err != nil {
			t.progress(" %s\n", part.FailedOr(ctx))
			return t, err
		}
	}
	t.progress(" ready\n")
	return t, t.openParts(ctx)
}

// useOrBringUp loads the running lab, or brings one up for the run (and
// remembers to take it down at Close).
func (t *Target) useOrBringUp(ctx context.Context) (*lab.Lab, error) {
	cfg := t.cfg
	l, err := lab.Load(cfg.Lab.StateDir, cfg.Lab.Name)
	switch {
	case err == nil:
		t.progress("using the running lab %q (%d nodes); it is left running afterwards\n", l.Config.Name, len(l.Nodes))
		// Encryption is built with the lab: a run cannot add it.
		if want := cfg.Lab.Encryption; want != "" && l.Config.Encryption != want {
			return nil, fmt.Errorf("lab %q is up without encryption %s, which this run asks for: take it down (cnibench --lab %s lab down) or bring it up with --encryption %s",
				l.Config.Name, want, l.Config.Name, want)
		}
	case errors.Is(err, lab.ErrNotFound):
		t.progress("bringing up lab %q: %d nodes × %d pods ...", cfg.Lab.Name, cfg.Lab.Nodes, cfg.Lab.PodsPerNode)
		start := time.Now()
		l, err = lab.Up(ctx, cfg.Lab)
		if err != nil {
			t.progress(" %s\n", part.FailedOr(ctx))
			return nil, err
		}
		t.created = true
		t.progress(" done in %s\n", time.Since(start).Round(time.Millisecond))
	default:
		return nil, err
	}
	return l, nil
}

// endpoints lists, in start order, the endpoints the run's placements
// need, and which of them are clients (an endpoint that is a client in any
// placement is pinned as a client).
func (t *Target) endpoints(l *lab.Lab) (order []string, isClient map[string]bool, err error) {
	isClient = map[string]bool{}
	for _, name := range t.cfg.Placements {
		if _, ok := placementEndpoints[name]; !ok {
			return nil, nil, fmt.Errorf("placement %s is not available on the lab target", name)
		}
		if suite.IsServicePlacement(name) && l.Config.ServiceDatapath == "" {
			return nil, nil, fmt.Errorf("placement %s needs a Service datapath: use --service-datapath or a scenario such as iptables or ebpf", name)
		}
		for k := range t.pairs() {
			eps, err := pairEndpoints(name, k)
			if errors.Is(err, suite.ErrUnsupported) {
				continue // the placement is skipped with why (suite)
			}
			for i, group := range eps {
				members, err := t.members(l, group)
				if err != nil {
					return nil, nil, fmt.Errorf("placement %s: %w", name, err)
				}
				for _, ep := range members {
					if _, err := l.Endpoint(ep); err != nil {
						return nil, nil, fmt.Errorf("placement %s needs %s: %w", name, ep, err)
					}
					if _, seen := isClient[ep]; !seen {
						order = append(order, ep)
					}
					isClient[ep] = isClient[ep] || i == 0
				}
			}
		}
	}
	return order, isClient, nil
}

// members expands an endpoint group of placementEndpoints: "node1-pods"
// and "node0-pods" are a test Service's backends (serviceBackends),
// anything else itself.
func (t *Target) members(l *lab.Lab, group string) ([]string, error) {
	if !strings.HasSuffix(group, "-pods") {
		return []string{group}, nil
	}
	pods, err := serviceBackends(l, group, t.pairs())
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return names, nil
}

// startAgent starts the agent of an endpoint; a server agent also runs the
// DNS server of the DNS tests on the endpoint's address.
func (t *Target) startAgent(ctx context.Context, name string, cpus []int, server bool) error {
	ep, err := t.lab.Endpoint(name)
	if err != nil {
		return err
	}
	exe := t.cfg.Executable
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("find own binary to start agents: %w", err)
		}
	}
	token, err := randomToken()
	if err != nil {
		return err
	}
	sock := filepath.Join(t.dir, name+".sock")
	logf, err := os.Create(filepath.Join(t.dir, name+".log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	args := []string{"agent", "--control", "unix:" + sock, "--exit-on-stdin-eof"}
	if server {
		args = append(args, "--dns-listen", ep.IP)
		if t.cfg.HTTPResponseSize != 0 {
			args = append(args, "--http-response-size", strconv.Itoa(t.cfg.HTTPResponseSize))
		}
		if t.cfg.HTTPWork != 0 {
			args = append(args, "--http-work", t.cfg.HTTPWork.String())
		}
	}
	// The agent's temporary files (its DNS server's) go to a directory of
	// the lab's, removed when the agent ends and by lab down: a SIGKILLed
	// agent cannot remove them itself.
	tmp, err := t.lab.TempDir(ep)
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), agent.TokenEnv+"="+token, "TMPDIR="+tmp)
	cmd.Stdout, cmd.Stderr = logf, logf
	stdin, err := cmd.StdinPipe()
	if err == nil {
		err = t.lab.Start(ep, cmd, cpus)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("start agent on %s: %w", name, err)
	}
	p := &agentProc{cmd: cmd, stdin: stdin, exited: make(chan struct{}), cpus: cpus, server: server}
	go func() { p.err = cmd.Wait(); os.RemoveAll(tmp); close(p.exited) }()
	t.agents[name] = p
	p.client, err = agent.NewClient(name, "unix:"+sock, token)
	if err != nil {
		return err
	}
	if err := p.client.WaitReady(ctx, 10*time.Second); err != nil {
		return fmt.Errorf("%w (agent log: %s)", err, tail(filepath.Join(t.dir, name+".log")))
	}
	return nil
}

// Kind implements suite.Target.
func (t *Target) Kind() string { return "lab" }

// Details implements suite.Target: the lab's topology and settings.
func (t *Target) Details() map[string]any {
	l := t.lab
	d := map[string]any{
		"lab":                 l.Config.Name,
		"nodes":               len(l.Nodes),
		"pods_per_node":       l.Config.PodsPerNode,
		"routing":             l.Routing,
		"mtu":                 l.MTU,
		"sysctls":             l.Sysctls,
		"cgroup_root":         l.CgroupRoot,
		"cpu_pinning":         t.pinning(),
		"client_cpus":         part.CPUList(t.clientCPUs),
		"server_cpus":         part.CPUList(t.serverCPUs),
		"lab_created_by_run":  t.created,
		"http_response_bytes": httpSize(t.cfg.HTTPResponseSize),
		"http_work":           t.cfg.HTTPWork.String(),
		"service_datapath":    l.Config.ServiceDatapath,
		"topology":            l.Nodes,
		"endpoint_sysctls":    t.sysctlDetails(),
	}
	t.stack.AddDetails(d)
	return d
}

// Placement implements suite.Target.
func (t *Target) Placement(name string) (results.Placement, error) { return t.placement(name, 0) }

// placement is pair k's endpoints of a placement (pairs.go).
func (t *Target) placement(name string, k int) (results.Placement, error) {
	eps, err := pairEndpoints(name, k)
	if err != nil {
		return results.Placement{}, err
	}
	path, node, _ := strings.Cut(name, "/")
	if err := t.stack.Unsupported(name); err != nil {
		return results.Placement{}, err
	}
	if ts, ok := testServices[name]; ok {
		if t.lab.Config.ServiceDatapath == "" {
			return results.Placement{}, fmt.Errorf("%s: the lab has no Service datapath (--service-datapath): %w", name, suite.ErrUnsupported)
		}
		members, err := t.members(t.lab, eps[1])
		if err != nil {
			return results.Placement{}, err
		}
		// Server CPU is the sum over the Service's backends.
		return results.Placement{Path: path, Node: node, Client: eps[0], Server: strings.Join(members, "+"),
			ServerAddr: datapath.TestVIP(ts.vip).String()}, nil
	}
	srv, err := t.lab.Endpoint(eps[1])
	if err != nil {
		return results.Placement{}, err
	}
	return results.Placement{Path: path, Node: node, Client: eps[0], Server: eps[1], ServerAddr: srv.IP}, nil
}

// Agent implements suite.Target.
func (t *Target) Agent(endpoint string) (*agent.Client, error) {
	p, ok := t.agents[endpoint]
	if !ok {
		return nil, fmt.Errorf("no agent runs on %s", endpoint)
	}
	select {
	case <-p.exited:
		return nil, errors.New(t.deathCause(endpoint, p))
	default:
	}
	return p.client, nil
}

// CPUSeconds implements suite.Target from the endpoint's cgroup cpu.stat;
// "a+b" sums several endpoints (a Service's backends).
func (t *Target) CPUSeconds(endpoint string) (float64, error) {
	if strings.Contains(endpoint, "+") {
		var sum float64
		for _, e := range strings.Split(endpoint, "+") {
			v, err := t.CPUSeconds(e)
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	}
	ep, err := t.lab.Endpoint(endpoint)
	if err != nil {
		return 0, err
	}
	return part.CgroupCPUSeconds(ep.Cgroup)
}

// Close stops the agents and, if Open brought the lab up, takes it down.
func (t *Target) Close() error {
	if t.created && t.lab != nil {
		// Said first: removing the Services and stopping the agents are
		// part of the teardown (a signal then lands in "teardown").
		t.progress("taking lab %q down ...", t.lab.Config.Name)
	}
	partsErr := t.stack.Close()
	for _, p := range t.agents {
		_ = p.stdin.Close() // the agent exits on stdin EOF
	}
	for _, p := range t.agents {
		select {
		case <-p.exited:
		case <-time.After(3 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	}
	t.agents = map[string]*agentProc{}
	if t.dir != "" {
		_ = os.RemoveAll(t.dir)
	}
	t.unlock()
	if t.created && t.lab != nil {
		if _, err := lab.Down(t.cfg.Lab.StateDir, t.lab.Config.Name); err != nil {
			t.progress(" failed\n")
			return errors.Join(partsErr, err)
		}
		t.progress(" done\n")
		t.created = false
	}
	if partsErr != nil {
		return fmt.Errorf("removing the scenario's parts: %w", partsErr)
	}
	return nil
}

func (t *Target) progress(format string, a ...any) {
	if t.cfg.Progress != nil {
		fmt.Fprintf(t.cfg.Progress, format, a...)
	}
}

func randomToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// tail returns the last line(s) of a log for error messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return "empty"
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = "…" + s[len(s)-300:]
	}
	return s
}

// httpSize is the HTTP response body size the server agents use.
func httpSize(n int) int {
	switch n {
	case 0:
		return httpload.DefaultResponseSize
	case -1:
		return 0
	}
	return n
}

// pinning names how the agents were placed on CPUs (details, the report).
func (t *Target) pinning() string {
	if len(t.clientCPUs) == 0 {
		return PinNone
	}
	return PinSplit
}
