package flows

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	cebpf "github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab/labtest"
)

// TestMeasureRate measures, at TCP_CRR's connection rate (cnibench's own
// client and server in the lab's pods, other node), each mechanism's
// event rate, losses, the consumer's CPU (this process runs nothing else
// during the window) and, for EBPF, the programs' kernel time per run
// (BPF_ENABLE_STATS, held only while the test runs). Off by default: set
// CNB_FLOWS_BENCH to a built cnibench binary (CNB_FLOWS_BENCH_SECS per
// window, default 5; CNB_FLOWS_BENCH_ROUNDS interleaved rounds, default 1).
func TestMeasureRate(t *testing.T) {
	bin := os.Getenv("CNB_FLOWS_BENCH")
	if bin == "" {
		t.Skip("set CNB_FLOWS_BENCH=<cnibench binary> to measure")
	}
	labtest.NeedRoot(t)
	secs, rounds := 5, 1
	fmt.Sscan(os.Getenv("CNB_FLOWS_BENCH_SECS"), &secs)
	fmt.Sscan(os.Getenv("CNB_FLOWS_BENCH_ROUNDS"), &rounds)
	var order []string // interleaved rounds, an "off" at both ends
	for range rounds {
		order = append(order, "off", EBPF, NFLOG)
	}
	order = append(order, "off")
	l := labtest.NewLab(t, "flb")
	client, server := labtest.Endpoint(t, l, "node0-pod0"), labtest.Endpoint(t, l, "node1-pod0")
	site := Site{Netns: netnsx.Path(l.Nodes[0].Netns), Node: "node0", Prefix: l.Prefix}
	srv := exec.Command(bin, "server", "--bind", server.IP)
	if err := l.Start(server, srv, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	waitListening(t, client.NetnsPath(), server.IP+":5201")
	if st, err := cebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME)); err == nil {
		defer st.Close()
	}
	for _, mech := range order {
		var rec *Recorder
		if mech != "off" {
			rec = openOrSkip(t, site, mech, Options{}, true)
		}
		c0, ru0, t0 := counts(t, rec), rusage(), time.Now()
		var out bytes.Buffer
		cl := exec.CommandContext(context.Background(), bin, "client", "TCP_CRR", server.IP, "--duration", fmt.Sprintf("%ds", secs), "--warmup", "0s")
		cl.Stdout = &out
		if err := l.Start(client, cl, nil); err != nil {
			t.Fatal(err)
		}
		if err := cl.Wait(); err != nil {
			t.Fatalf("client: %v: %s", err, out.String())
		}
		c1, ru1, wall := counts(t, rec), rusage(), time.Since(t0)
		cpu := time.Duration(ru1-ru0) * time.Nanosecond
		t.Logf("%-5s TCP_CRR: %s", mech, rateLine(out.String()))
		t.Logf("%-5s events %d (%.0f/s) by kind %v lost %d; consumer CPU %v over %v (%.1f%% of a core)",
			mech, c1.Events-c0.Events, c1.RatePerSec(c0), c1.ByKind, c1.Lost-c0.Lost, cpu.Round(time.Millisecond), wall.Round(time.Millisecond), 100*cpu.Seconds()/wall.Seconds())
		if s, ok := rec.srcEBPF(); ok {
			for _, p := range []*cebpf.Program{s.objs.CnbFlowsFromPod, s.objs.CnbFlowsToPod} {
				info, err1 := p.Info()
				st, err2 := p.Stats()
				if err1 == nil && err2 == nil && st.RunCount > 0 {
					t.Logf("ebpf  %s: %d runs, %v total, %.0f ns/run", info.Name, st.RunCount, st.Runtime, float64(st.Runtime.Nanoseconds())/float64(st.RunCount))
				}
			}
		}
		if rec != nil {
			if err := rec.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func (r *Recorder) srcEBPF() (*ebpfSource, bool) {
	if r == nil {
		return nil, false
	}
	s, ok := r.src.(*ebpfSource)
	return s, ok
}

func counts(t *testing.T, r *Recorder) Counts {
	if r == nil {
		return Counts{At: time.Now()}
	}
	c, err := r.Counts()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// rusage is this process's user+system CPU time in ns.
func rusage() int64 {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// rateLine picks the client's line with its rate.
func rateLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(strings.ToLower(l), "/s") {
			return strings.TrimSpace(l)
		}
	}
	return strings.TrimSpace(out)
}

func waitListening(t *testing.T, netns, addr string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := netnsx.Do(netns, func() error {
			c, err := net.DialTimeout("tcp4", addr, time.Second)
			if err == nil {
				c.Close()
			}
			return err
		})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server never listened on %s: %v", addr, err)
		}
	}
}
