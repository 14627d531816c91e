package cli

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
	"github.com/cnibench/cnibench/targets/labtarget"
	"github.com/cnibench/cnibench/targets/labtarget/part"
)

// oneLineNaming fails unless err is one line that quotes one of pieces
// (the bad input, as the user typed it) or names flag.
func oneLineNaming(t *testing.T, err error, flag string, pieces []string) {
	t.Helper()
	msg := err.Error()
	if strings.ContainsAny(msg, "\r\n") {
		t.Fatalf("error %q is not one line", msg)
	}
	if strings.Contains(msg, flag) {
		return
	}
	for _, p := range pieces {
		if strings.Contains(msg, strconv.Quote(p)) {
			return
		}
	}
	t.Fatalf("error %q names neither %s nor any of %q", msg, flag, pieces)
}

// FuzzPlanFlags resolves run's --tests, --placements, --profile and --mode
// lists as run does (splitList, then suite.Options.Resolve). A refusal is
// one line naming the bad entry; an accepted plan lists each catalogue
// test and placement once, and resolving its own lists again gives the
// same plan (parse(format(plan)) == plan).
func FuzzPlanFlags(f *testing.F) {
	f.Add("TCP_RR,TCP_CRR", "pod-to-pod/other-node", "quick", "", 0, 0, int64(0))
	f.Add(" tcp_rr , TCP_RR,,", "POD-TO-POD/SAME-NODE ,pod-to-service/other-node", "Standard ", "busy-poll", 5, 4, int64(time.Second))
	f.Add("HTTP_RPS_C64,DNS_QPS_1000,UDP_STREAM_MULTI", "", "datapaths", "blocking", 1, 1024, int64(100*time.Millisecond))
	f.Add("TCP_RR;UDP_RR", "pod-to-pod/other", "fast", "poll", -1, 1025, int64(-1))
	f.Add("service-scale", "host-to-host/other-node", "", "", 0, 0, int64(99*time.Millisecond))
	f.Fuzz(func(t *testing.T, tests, placements, profile, mode string, rounds, streams int, duration int64) {
		o := suite.Options{Profile: profile, Tests: splitList(tests), Placements: splitList(placements),
			Mode: engine.Mode(mode), Rounds: rounds, Streams: streams, Duration: time.Duration(duration)}
		plan, err := o.Resolve()
		if err != nil {
			oneLineNaming(t, err, "--", append(append([]string{profile, mode}, o.Tests...), o.Placements...))
			return
		}
		if len(plan.Tests) == 0 || len(plan.Placements) == 0 || plan.Rounds < 1 || plan.Streams < 1 || plan.Duration <= 0 {
			t.Fatalf("accepted plan %+v lacks tests, placements, rounds, streams or duration", plan.Plan)
		}
		for _, list := range [][]string{plan.Tests, plan.Placements} {
			if s := slices.Clone(list); len(slices.Compact(slices.Sorted(slices.Values(s)))) != len(list) {
				t.Fatalf("plan repeats an entry: %q", list)
			}
		}
		for _, name := range plan.Tests {
			if !slices.Contains(suite.TestNames(), name) {
				t.Fatalf("plan test %q is not a catalogue name", name)
			}
		}
		again := o
		again.Profile, again.Tests, again.Placements = plan.Profile, splitList(strings.Join(plan.Tests, ",")), splitList(strings.Join(plan.Placements, ","))
		back, err := again.Resolve()
		if err != nil || !reflect.DeepEqual(back, plan) {
			t.Fatalf("resolving the plan's own lists again: %v\n%+v\n%+v", err, back, plan)
		}
	})
}

// FuzzScaleSteps parses --scale-steps (and the sweep's other numbers). A
// refusal is one line naming the flag; accepted steps increase, and
// parsing them printed back gives the same steps.
func FuzzScaleSteps(f *testing.F) {
	f.Add("0,1000,5000,10000,20000,30000", 4, "random", int64(10*time.Minute))
	f.Add("1_000, 2_000,,", 1000, "first", int64(1))
	f.Add("0,0", 0, "last", int64(0))
	f.Add("-1,99999999999999999999,+5,0x10", 1001, "middle", int64(-1))
	f.Add(" ", -3, "", int64(time.Hour))
	f.Fuzz(func(t *testing.T, steps string, endpoints int, position string, maxStep int64) {
		sf := scaleFlags{steps: steps, endpoints: endpoints, position: position, seed: 1, maxStepTime: time.Duration(maxStep)}
		o, err := sf.options()
		if err != nil {
			oneLineNaming(t, err, "--", splitList(steps))
			return
		}
		for i := 1; i < len(o.Steps); i++ {
			if o.Steps[i] <= o.Steps[i-1] {
				t.Fatalf("accepted steps do not increase: %v", o.Steps)
			}
		}
		var printed []string
		for _, s := range o.Steps {
			printed = append(printed, strconv.Itoa(s))
		}
		sf.steps = strings.Join(printed, ",")
		back, err := sf.options()
		if err != nil || !slices.Equal(back.Steps, o.Steps) {
			t.Fatalf("steps %v printed as %q parse to %v, %v", o.Steps, sf.steps, back.Steps, err)
		}
	})
}

// FuzzLabFlags parses the lab flags as 'lab up' and run do: --sysctl
// values (NUL-separated in the fuzzed text, one flag each), --routing and
// --scenarios. A refusal is one line naming the bad value; an accepted
// config holds net.* sysctls only, each kernel sysctl once (two spellings
// of one key would be applied in map order), and prints back (k=v) to
// itself; every scenario gets a valid lab name, and two scenarios sharing
// a lab name share its config (run keeps one lab per name).
func FuzzLabFlags(f *testing.F) {
	f.Add("net.ipv4.tcp_tw_reuse=0", "native", "native,vxlan")
	f.Add("net/ipv4/tcp_tw_reuse=0\x00net.core.somaxconn = 128 ", "vxlan", " Native , VXLAN+ebpf,iptables-legacy")
	f.Add("net.ipv4.ip_local_port_range=1024 65535\x00net.ipv4.ip_local_port_range=2000 3000", "", "ebpf+vxlan,vxlan+ebpf")
	f.Add("kernel.pid_max=1\x00=1\x00net.ipv4.x=\x00net.ipv4..x=1", "overlay", "nftables+,+,native+native+native+native")
	f.Fuzz(func(t *testing.T, sysctls, routing, scenarios string) {
		var lf labFlags
		fs := pflag.NewFlagSet("lab", pflag.ContinueOnError)
		lf.register(fs)
		args := []string{"--routing", routing}
		if sysctls != "" {
			for _, kv := range strings.Split(sysctls, "\x00") {
				args = append(args, "--sysctl", kv)
			}
		}
		if err := fs.Parse(args); err != nil {
			t.Skip("not a flag value pflag passes on")
		}
		cfg, err := lf.config(fs, &globals{labName: "fz", stateDir: "/run/cnibench"})
		if err != nil {
			pieces := []string{routing}
			for _, kv := range strings.Split(sysctls, "\x00") {
				k, v, _ := strings.Cut(kv, "=")
				pieces = append(pieces, kv, strings.TrimSpace(k), strings.TrimSpace(v))
			}
			oneLineNaming(t, err, "--routing", pieces)
			return
		}
		paths := map[string]string{}
		var printed []string
		for k, v := range cfg.Sysctls {
			if !strings.HasPrefix(k, "net") {
				t.Fatalf("accepted sysctl %q outside net.*", k)
			}
			if other, dup := paths[netnsx.SysctlPath(k)]; dup {
				t.Fatalf("sysctls %q and %q are one kernel sysctl: which value wins depends on map order", other, k)
			}
			paths[netnsx.SysctlPath(k)] = k
			printed = append(printed, k+"="+v)
		}
		if len(printed) > 0 {
			var lf2 labFlags
			fs2 := pflag.NewFlagSet("lab", pflag.ContinueOnError)
			lf2.register(fs2)
			args := []string{}
			for _, kv := range printed {
				args = append(args, "--sysctl", kv)
			}
			_ = fs2.Parse(args)
			back, err := lf2.config(fs2, &globals{labName: "fz", stateDir: "/run/cnibench"})
			if err != nil || !reflect.DeepEqual(back.Sysctls, cfg.Sysctls) {
				t.Fatalf("sysctls printed back %q: %v\n%v\n%v", printed, err, back.Sysctls, cfg.Sysctls)
			}
		}
		byLab := map[string]lab.Config{}
		for _, n := range splitList(scenarios) {
			name, err := results.ParseScenarioName(n)
			var scn part.Scenario
			if err == nil {
				scn, err = labtarget.ScenarioConfig(name, cfg)
			}
			sc := scn.Lab
			if err != nil {
				oneLineNaming(t, err, "scenario", append(strings.Split(strings.ToLower(n), "+"), n, strings.ToLower(strings.TrimSpace(n))))
				continue
			}
			if err := lab.ValidName(sc.Name); err != nil {
				t.Fatalf("scenario %q: lab name: %v", n, err)
			}
			if prev, ok := byLab[sc.Name]; ok && (prev.Routing != sc.Routing || prev.ServiceDatapath != sc.ServiceDatapath) {
				t.Fatalf("scenario %q shares lab %s with a different config: %+v vs %+v", n, sc.Name, prev, sc)
			}
			byLab[sc.Name] = sc
		}
	})
}
