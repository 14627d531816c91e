package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// crrServerIP is node1-pod0's address in a two-node lab.
const crrServerIP = "198.19.1.10"

// crrResult is the part of the client's JSON these tests read.
type crrResult struct {
	Transactions   int64            `json:"transactions"`
	RatePerSec     float64          `json:"rate_per_sec"`
	Errors         int64            `json:"errors"`
	ErrorsByCause  map[string]int64 `json:"errors_by_cause"`
	PortExhaustion bool             `json:"port_exhaustion"`
	Stalled        bool             `json:"stalled"`
	ClientTimeWait *int64           `json:"client_time_wait"`
	ClientCPUUser  float64          `json:"client_cpu_user_sec"`
	ClientCPUSys   float64          `json:"client_cpu_sys_sec"`
}

// cpuPerConn is the client's CPU time per connection, in µs.
func (r crrResult) cpuPerConn() float64 {
	if r.Transactions == 0 {
		return 0
	}
	return (r.ClientCPUUser + r.ClientCPUSys) / float64(r.Transactions) * 1e6
}

// crrLab brings up two nodes with one pod each (extra lab up flags such as
// --sysctl) and starts `cnibench server` in node1-pod0.
func crrLab(t *testing.T, upArgs ...string) *lab {
	t.Helper()
	l := newLab(t)
	if out, errOut, code := l.run(append([]string{"lab", "up", "--nodes", "2", "--pods-per-node", "1"}, upArgs...)...); code != 0 {
		t.Fatalf("lab up: exit %d: %s%s", code, out, errOut)
	}
	srv := l.cmd("lab", "exec", "node1-pod0", "--", binary, "server")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() }) // lab down also kills the server itself
	waitFor(t, "the TCP_CRR server", 10*time.Second, func() bool {
		_, _, code := l.run("lab", "exec", "node0-pod0", "--", binary, "client", "TCP_CRR", crrServerIP, "--duration", "100ms", "--warmup", "0s")
		return code == 0
	})
	return l
}

// crr runs TCP_CRR from node0-pod0 and returns its result.
func crr(t *testing.T, l *lab, args ...string) crrResult {
	t.Helper()
	out, errOut, code := l.run(append([]string{"lab", "exec", "node0-pod0", "--", binary, "client", "TCP_CRR", crrServerIP, "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("TCP_CRR client: exit %d: %s", code, errOut)
	}
	var r crrResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("client JSON: %v: %s", err, out)
	}
	return r
}

// timeWait is the number of TIME_WAIT sockets in a pod's namespace.
func timeWait(t *testing.T, l *lab, pod string) int64 {
	t.Helper()
	out, errOut, code := l.run("lab", "exec", pod, "--", "cat", "/proc/net/sockstat")
	if code != 0 {
		t.Fatalf("read sockstat in %s: %s", pod, errOut)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for i := 0; len(f) > 0 && f[0] == "TCP:" && i+1 < len(f); i++ {
			if f[i] == "tw" {
				n, err := strconv.ParseInt(f[i+1], 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
		}
	}
	t.Fatalf("no TCP tw count in %s's sockstat: %s", pod, out)
	return 0
}

// The server closes first, as netserver does: after a run the TIME_WAIT
// sockets are in the server's namespace, not the client's. Not one per
// connection: the kernel picks a client's ports with random increments, so
// at 10,000 connections a second it comes back to ports whose server
// TIME_WAIT a new SYN then takes over (RFC 6191): 81% were left after 2 s
// here. Half is the bound; the client must have none.
func TestCRRTimeWaitOnServer(t *testing.T) {
	l := crrLab(t)
	r := crr(t, l, "--duration", "1s", "--warmup", "0s")
	if r.Transactions < 500 || r.Errors != 0 || r.PortExhaustion || r.Stalled {
		t.Fatalf("run = %+v, want ≥ 500 transactions, no errors or flags", r)
	}
	srv, cli := timeWait(t, l, "node1-pod0"), timeWait(t, l, "node0-pod0")
	if srv < r.Transactions/2 {
		t.Errorf("server namespace has %d TIME_WAIT sockets after %d connections, want at least half of them", srv, r.Transactions)
	}
	if cli > 5 || r.ClientTimeWait == nil || *r.ClientTimeWait > 5 {
		t.Errorf("client namespace has %d TIME_WAIT sockets (result says %v), want ~0", cli, r.ClientTimeWait)
	}
}

// With the kernel's default port range and tcp_tw_reuse (as in a pod),
// consecutive runs keep their rate: the client's ports are not used up.
// Running out of ports shows as errors or flags, or as connect() scanning
// for a free port: the client's CPU per connection balloons (9.8 s of
// system CPU in 10 s, before the server closed first). A series whose rate
// fell may have lost CPU to something else on a busy machine (one fell to
// 0.72× while a compile ran beside it): it is run once more, and the
// second series must hold.
func TestCRRKernelDefaultSysctls(t *testing.T) {
	l := crrLab(t, "--sysctl", "net.ipv4.ip_local_port_range=32768 60999", "--sysctl", "net.ipv4.tcp_tw_reuse=2")
	for series := 1; ; series++ {
		var rates, cpu []float64
		for i := range 5 {
			r := crr(t, l, "--duration", "3s", "--warmup", "0s")
			if r.PortExhaustion || r.Stalled || r.Errors != 0 {
				t.Fatalf("series %d run %d: %+v, want no port exhaustion, stall or error", series, i+1, r)
			}
			rates, cpu = append(rates, r.RatePerSec), append(cpu, r.cpuPerConn())
		}
		t.Logf("series %d: rates %.0f /s, client CPU per connection %.1f µs", series, rates, cpu)
		last, first := rates[len(rates)-1], rates[0]
		if last >= 0.8*first {
			return
		}
		grew := cpu[len(cpu)-1] / cpu[0]
		if series == 2 {
			t.Fatalf("series %d: last run %.0f/s < 0.8 × first %.0f/s (%.0f), client CPU per connection ×%.2f (%.1f µs)",
				series, last, first, rates, grew, cpu)
		}
		// Once more, whatever the CPU did: other work on the same two
		// cores also raises the CPU per connection (one series fell from
		// 5,801 to 2,601/s at ×1.48 while tests ran beside it). Ports that
		// really run out stay out: the second series falls as well.
		t.Logf("series %d: the rate fell (client CPU per connection ×%.2f): once more", series, grew)
	}
}

// One local port for sixteen flows: connects fail with EADDRNOTAVAIL whenever
// two flows' connections overlap, and the sample says so instead of passing
// for a healthy rate. Whether they overlap in a given run is up to the
// scheduler (on 2 cores a run of 8 flows on 2 ports once had none in 16,000
// connections), so a run without EADDRNOTAVAIL is retried; the flag must
// agree with the errors in every run.
func TestCRRPortExhaustionFlagged(t *testing.T) {
	l := crrLab(t)
	if _, errOut, code := l.run("lab", "exec", "node0-pod0", "--", "sh", "-c", "echo 40000 40000 > /proc/sys/net/ipv4/ip_local_port_range"); code != 0 {
		t.Fatalf("set the client's port range: %s", errOut)
	}
	for attempt := 1; attempt <= 5; attempt++ {
		r := crr(t, l, "--duration", "2s", "--warmup", "0s", "--streams", "16")
		exhausted := r.ErrorsByCause["EADDRNOTAVAIL"]
		if r.PortExhaustion != (exhausted > 0) {
			t.Fatalf("run %d = %+v: port_exhaustion %v with %d EADDRNOTAVAIL errors", attempt, r, r.PortExhaustion, exhausted)
		}
		if exhausted > 0 {
			t.Logf("exhausted run %d: %d transactions, %d errors %v", attempt, r.Transactions, r.Errors, r.ErrorsByCause)
			return
		}
		t.Logf("run %d: %d transactions on one port without an overlap; again", attempt, r.Transactions)
	}
	t.Fatal("5 runs of 16 flows on one local port never ran out of ports: is ip_local_port_range applied?")
}

// pawsTimeWait is the namespace's TcpExtPAWSTimewait: SYNs a TIME_WAIT
// socket rejected because their TCP timestamp looked older than the last
// connection's on the same four-tuple.
func pawsTimeWait(t *testing.T, l *lab, pod string) int64 {
	t.Helper()
	out, errOut, code := l.run("lab", "exec", pod, "--", "cat", "/proc/net/netstat")
	if code != 0 {
		t.Fatalf("read netstat in %s: %s", pod, errOut)
	}
	lines := strings.Split(out, "\n")
	for i := 0; i+1 < len(lines); i++ {
		names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(names) == 0 || names[0] != "TcpExt:" || len(values) != len(names) {
			continue
		}
		for j, n := range names {
			if n == "PAWSTimewait" {
				v, err := strconv.ParseInt(values[j], 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
		}
	}
	t.Fatalf("no TcpExt PAWSTimewait in %s's /proc/net/netstat", pod)
	return 0
}

// TCP_CRR on pod-to-service and pod-to-pod goes from the same client pod to
// the same server pod, by ClusterIP and by pod IP. Before each placement
// had its own share of the client's ports, a connection of one often met
// the server's TIME_WAIT socket of the other's on the same four-tuple; its
// timestamps (offset by the address dialled) looked older, the server
// rejected the SYN (PAWS) and the client retried it a second later: the
// rate fell round after round (3,370 to 626 conn/s in three rounds, with
// 474 PAWS rejects). Now no SYN may be rejected, and the samples show the
// shares they used.
func TestCRRPlacementsKeepTheirOwnPorts(t *testing.T) {
	l := newLab(t)
	if out, errOut, code := l.run("lab", "up", "--nodes", "2", "--pods-per-node", "1", "--service-datapath", "iptables"); code != 0 {
		t.Fatalf("lab up: exit %d: %s%s", code, out, errOut)
	}
	before := pawsTimeWait(t, l, "node1-pod0")
	out := t.TempDir()
	if stdout, errOut, code := l.run("run", "--tests", "TCP_CRR", "--placements", "pod-to-service/other-node,pod-to-pod/other-node",
		"--rounds", "3", "--duration", "2s", "--warmup", "500ms", "--out", out); code != 0 {
		t.Fatalf("run: exit %d: %s%s", code, stdout, errOut)
	}
	if n := pawsTimeWait(t, l, "node1-pod0") - before; n != 0 {
		t.Errorf("the server rejected %d SYNs on TIME_WAIT four-tuples (PAWSTimewait), want 0", n)
	}
	shares := map[string]string{}
	for _, res := range readResults(t, out).Results {
		for _, s := range res.Samples {
			if s.Engine == nil {
				t.Fatalf("%s %s: a sample failed: %s", res.Test, res.Placement.Path, s.Error)
			}
			if s.Engine.LocalPorts == "" {
				t.Errorf("%s: a sample has no local_ports: no port share was applied", res.Placement.Path)
			}
			if s.Engine.Stalled {
				t.Errorf("%s: a sample stalled (a second without a transaction)", res.Placement.Path)
			}
			shares[res.Placement.Path] = s.Engine.LocalPorts
		}
	}
	if len(shares) != 2 || shares["pod-to-service"] == shares["pod-to-pod"] {
		t.Errorf("port shares by placement = %v, want two different ones", shares)
	}
}
