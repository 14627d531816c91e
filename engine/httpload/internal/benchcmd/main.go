// Command benchcmd runs the httpload server or client from flags, for
// bench/http.sh until the cnibench CLI grows http-server / http-client.
//
//	benchcmd server [-bind 127.0.0.1] [-port 8080] [-size 512] [-work 0] [-delay 0]
//	benchcmd client [-url http://127.0.0.1:8080/] [-c 64] [-d 5s] [-warmup 1s] [-qps 0] [-keepalive] [-req-size 0]
//
// The client prints its Result as JSON on stdout.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/engine/internal/benchcli"
)

func main() {
	benchcli.Main(
		benchcli.Command{Name: "server", Run: server},
		benchcli.Command{Name: "client", Run: client},
	)
}

func server(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	var s httpload.Server
	fs.StringVar(&s.Bind, "bind", "127.0.0.1", "address to listen on")
	fs.IntVar(&s.Port, "port", httpload.DefaultPort, "port")
	fs.IntVar(&s.ResponseSize, "size", httpload.DefaultResponseSize, "response body bytes")
	fs.DurationVar(&s.Work, "work", 0, "CPU work per request")
	fs.DurationVar(&s.Delay, "delay", 0, "sleep per request")
	prof := fs.String("cpuprofile", "", "write a CPU profile here")
	fs.Parse(args)
	stopProfile, err := benchcli.CPUProfile(*prof)
	if err != nil {
		return err
	}
	defer stopProfile()
	if err := s.Listen(); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "listening on", s.Addr())
	return s.Serve(ctx)
}

func client(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	var o httpload.Options
	c := benchcli.ClientFlags(fs, &o.RunnerOptions, &o.Timeout, httpload.DefaultTimeout, "per-request timeout")
	fs.StringVar(&o.URL, "url", "http://127.0.0.1:8080/", "target URL")
	fs.IntVar(&o.Connections, "c", httpload.DefaultConnections, "connections")
	fs.Float64Var(&o.QPS, "qps", 0, "total target rate; 0 = max rate")
	fs.BoolVar(&o.KeepAlive, "keepalive", false, "keep connections alive (default: new connection per request)")
	fs.IntVar(&o.RequestSize, "req-size", 0, "request body bytes (0 = GET)")
	fs.Parse(args)
	return c.Run(func() (any, error) { return httpload.Run(ctx, o) })
}
