// Command benchcmd runs the dnsload server or client from flags, for
// bench/dns.sh until the cnibench CLI grows dns-server / dns-client.
//
//	benchcmd server [-listen 127.0.0.1] [-port 53] [-names 1000]
//	benchcmd client [-server 127.0.0.1] [-port 53] [-q 100] [-d 5s] [-warmup 1s] [-qps 0] [-threads 0] [-names 1000]
//	benchcmd rusage -- COMMAND ARGS...   # runs COMMAND, prints its user and system CPU seconds on stderr
//
// The client prints its Result as JSON on stdout.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"

	"github.com/cnibench/cnibench/engine/dnsload"
	"github.com/cnibench/cnibench/engine/internal/benchcli"
)

func main() {
	benchcli.Main(
		benchcli.Command{Name: "server", Run: server},
		benchcli.Command{Name: "client", Run: client},
		benchcli.Command{Name: "rusage", Run: func(_ context.Context, args []string) error { return rusage(args) }},
	)
}

func server(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	var spec dnsload.ServerSpec
	fs.StringVar(&spec.Listen, "listen", "127.0.0.1", "address to listen on")
	fs.IntVar(&spec.Port, "port", dnsload.DefaultPort, "port")
	fs.IntVar(&spec.Names, "names", dnsload.DefaultNames, "number of names")
	fs.Parse(args)
	s, err := dnsload.NewServer(spec)
	if err != nil {
		return err
	}
	defer s.Stop()
	if err := s.Start(ctx); err != nil {
		return err
	}
	fmt.Println(s.Pid())
	os.Stdout.Sync()
	fmt.Fprintf(os.Stderr, "dnsmasq pid %d answering on %s\n", s.Pid(), s.Addr())
	<-ctx.Done()
	return s.Stop()
}

func client(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	var o dnsload.Options
	c := benchcli.ClientFlags(fs, &o.RunnerOptions, &o.Timeout, dnsload.DefaultTimeout, "per-query timeout")
	fs.StringVar(&o.Server, "server", "127.0.0.1", "DNS server IP")
	fs.IntVar(&o.Port, "port", dnsload.DefaultPort, "port")
	fs.IntVar(&o.Outstanding, "q", 0, "queries outstanding (0: 100 closed loop, 1000 open loop)")
	fs.Float64Var(&o.QPS, "qps", 0, "total target rate; 0 = max rate")
	fs.IntVar(&o.Threads, "threads", 0, "event loops (sockets)")
	fs.IntVar(&o.NameCount, "names", dnsload.DefaultNames, "names cycled through")
	fs.Parse(args)
	return c.Run(func() (any, error) { return dnsload.Run(ctx, o) })
}

// rusage runs a command and prints the CPU it used, "user sys" in
// seconds, on stderr: dnsperf reports no CPU of its own.
func rusage(args []string) error {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return fmt.Errorf("rusage: no command")
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	if cmd.ProcessState != nil {
		fmt.Fprintf(os.Stderr, "rusage: %.3f %.3f\n", cmd.ProcessState.UserTime().Seconds(), cmd.ProcessState.SystemTime().Seconds())
	}
	return err
}
