// Command l7bench measures HTTP request rate through none / per-node /
// sidecar L7 proxies on a running lab (cnibench lab up), with cnibench's
// own client and server agents, interleaving the models round by round,
// and prints requests/s with the CPU seconds of proxies, client and
// server pods. A measurement tool for the l7proxy report, not a test:
//
//	cnibench --lab l7m lab up
//	go run ./l7proxy/internal/l7bench --lab l7m --cnibench ./bin/cnibench
//	cnibench --lab l7m lab down
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/l7proxy"
)

func main() {
	name := flag.String("lab", "l7m", "lab name")
	stateDir := flag.String("state-dir", lab.DefaultStateDir, "lab state dir")
	bin := flag.String("cnibench", "./bin/cnibench", "cnibench binary (agent and client)")
	tests := flag.String("tests", "HTTP_RPS_C64,HTTP_RPS_SHORT_C64", "tests")
	dur := flag.Duration("duration", 5*time.Second, "measured time per sample")
	rounds := flag.Int("rounds", 2, "interleaved rounds")
	client := flag.String("client", "node0-pod0", "client pod")
	server := flag.String("server", "node1-pod0", "server pod")
	flag.Parse()
	if err := run(*name, *stateDir, *bin, *client, *server, strings.Split(*tests, ","), *dur, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "l7bench:", err)
		os.Exit(1)
	}
}

func run(name, stateDir, bin, client, server string, tests []string, dur time.Duration, rounds int) error {
	l, err := lab.Load(stateDir, name)
	if err != nil {
		return err
	}
	cli, err := l7proxy.LabPod(l, client)
	if err != nil {
		return err
	}
	srv, err := l7proxy.LabPod(l, server)
	if err != nil {
		return err
	}
	srvEp, _ := l.Endpoint(srv.Name)
	agent := exec.Command(bin, "server")
	if err := l.Start(srvEp, agent, nil); err != nil {
		return err
	}
	defer func() { agent.Process.Kill(); agent.Wait() }()
	time.Sleep(time.Second)
	fmt.Println("round test model req/s proxy_cpu_s client_cpu_s server_cpu_s proxy_us_per_req(all_proxies/path_request) proxies(requests/upstream_connects)")
	for r := 1; r <= rounds; r++ {
		for _, t := range tests {
			for _, m := range []l7proxy.Model{"none", l7proxy.PerNode, l7proxy.Sidecar} {
				if err := sample(l, bin, cli, srv, t, m, dur, r); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// sample runs one test through model m and prints one line.
func sample(l *lab.Lab, bin string, cli, srv l7proxy.PodRef, test string, m l7proxy.Model, dur time.Duration, round int) error {
	ctx := context.Background()
	var d *l7proxy.Deployment
	if m != "none" {
		var err error
		spec := l7proxy.Spec{Model: m, Rules: l7proxy.BenchRules, Port: httpload.DefaultPort, Client: cli, Servers: []l7proxy.PodRef{srv}}
		d, err = l7proxy.Start(ctx, spec, l7proxy.Options{Prefix: l.Prefix, StateDir: filepath.Join(l.Config.StateDir, l.Config.Name), CgroupParent: l.CgroupRoot})
		if err != nil {
			return err
		}
		defer d.Close()
		if err := d.Verify(ctx); err != nil {
			for _, ns := range []string{srv.NodeNetns, cli.Netns, srv.Netns} {
				out, _ := nsexec.Run(ctx, ns, nil, "iptables-save", "-c", "-t", "nat")
				fmt.Fprintf(os.Stderr, "%s:\n%s", ns, out)
			}
			return err
		}
	}
	p0, c0, s0 := cpus(l, d, cli, srv)
	r0 := pathRequests(d)
	ep, _ := l.Endpoint(cli.Name)
	c := exec.Command(bin, "client", test, srv.IP, "--duration", dur.String(), "--json")
	var out strings.Builder
	c.Stdout, c.Stderr = &out, os.Stderr
	if err := l.Start(ep, c, nil); err != nil {
		return err
	}
	if err := c.Wait(); err != nil {
		return fmt.Errorf("client: %v", err)
	}
	p1, c1, s1 := cpus(l, d, cli, srv)
	r1 := pathRequests(d)
	var res struct {
		RPS      float64 `json:"rps"`
		Requests int64   `json:"requests"`
	}
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
		return fmt.Errorf("client output: %v: %.200s", err, out.String())
	}
	perReq := 0.0
	if r1 > r0 {
		perReq = (p1 - p0).Seconds() * 1e6 / float64(r1-r0)
	}
	fmt.Printf("%d %s %s %.0f %.2f %.2f %.2f %.1f %s\n", round, test, m, res.RPS,
		(p1 - p0).Seconds(), (c1 - c0).Seconds(), (s1 - s0).Seconds(), perReq, pool(d))
	return nil
}

// pathRequests is the requests the first proxy on the path has received
// (warm-up included, like the CPU times), to divide proxy CPU by.
func pathRequests(d *l7proxy.Deployment) uint64 {
	if d == nil {
		return 0
	}
	cs, _ := d.Counters()
	return cs[d.Names()[0]].Requests
}

// pool is each proxy's requests and upstream connections so far.
func pool(d *l7proxy.Deployment) string {
	if d == nil {
		return "-"
	}
	cs, err := d.Counters()
	if err != nil {
		return err.Error()
	}
	var parts []string
	for _, n := range d.Names() {
		parts = append(parts, fmt.Sprintf("%s:%d/%d", n, cs[n].Requests, cs[n].Connects))
	}
	return strings.Join(parts, ",")
}

// cpus reads the proxies', the client pod's and the server pod's CPU time.
func cpus(l *lab.Lab, d *l7proxy.Deployment, cli, srv l7proxy.PodRef) (p, c, s time.Duration) {
	if d != nil {
		u, err := d.CPU()
		if err != nil {
			fmt.Fprintln(os.Stderr, "proxy cpu:", err)
		}
		p = u.Total
	}
	return p, podCPU(l, cli.Name), podCPU(l, srv.Name)
}

func podCPU(l *lab.Lab, name string) time.Duration {
	ep, _ := l.Endpoint(name)
	b, _ := os.ReadFile(ep.Cgroup + "/cpu.stat")
	var us int64
	for _, line := range strings.Split(string(b), "\n") {
		fmt.Sscanf(line, "usage_usec %d", &us)
	}
	return time.Duration(us) * time.Microsecond
}
