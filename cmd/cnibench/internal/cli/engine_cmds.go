package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/dnsload"
	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
)

// newServerCmd serves every engine's data port, standalone (like netserver
// or iperf3 -s), e.g. inside a lab pod with `cnibench lab exec`.
func newServerCmd() *cobra.Command {
	srv := &engine.Server{}
	hsrv := &httpload.Server{}
	var dns dnsload.ServerSpec
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Serve every engine's fixed data port until interrupted",
		Long: "Serve TCP_STREAM (5201), UDP_STREAM (5202), TCP_RR (5203), UDP_RR (5204),\n" +
			"TCP_CRR (5205) and HTTP (8080) until interrupted, for `cnibench client` or\n" +
			"bench/ scripts; with --dns-listen also a DNS server (dnsmasq) for DNS_* tests.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			hsrv.Bind = srv.Bind
			if err := srv.Listen(); err != nil {
				return err
			}
			if err := hsrv.Listen(); err != nil {
				return err
			}
			ctx := cmd.Context()
			if dns.Listen != "" {
				d, err := dnsload.NewServer(dns)
				if err != nil {
					return err
				}
				if err := d.Start(ctx); err != nil {
					return err
				}
				defer d.Stop()
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "cnibench server: listening on ports 5201-5205 and %s (%s)\n", hsrv.Addr(), bindName(srv.Bind))
			errc := make(chan error, 2)
			go func() { errc <- srv.Serve(ctx) }()
			go func() { errc <- hsrv.Serve(ctx) }()
			return <-errc
		},
	}
	f := cmd.Flags()
	f.StringVar(&srv.Bind, "bind", "", "address to listen on (default all)")
	f.IntVar(&hsrv.ResponseSize, "http-response-size", 0, "HTTP response body bytes (default 512)")
	f.DurationVar(&hsrv.Work, "http-work", 0, "artificial CPU work per HTTP request (default none)")
	f.StringVar(&dns.Listen, "dns-listen", "", "also run dnsmasq answering the DNS tests' names on this address")
	f.IntVar(&dns.Port, "dns-port", 0, "port of that DNS server (default 53)")
	return cmd
}

func bindName(b string) string {
	if b == "" {
		return "all addresses"
	}
	return b
}

// newClientCmd runs one engine's client side once and prints its result,
// like netperf -t TEST or iperf3 -c.
func newClientCmd() *cobra.Command {
	var (
		o        engine.Options
		duration = 10 * time.Second
		warmup   = time.Second
		jsonOut  bool
		mode     string
	)
	cmd := &cobra.Command{
		Use:   "client TEST HOST",
		Short: "Run one engine test against a `cnibench server` and print the result",
		Example: `  cnibench client TCP_RR 198.19.1.10 --duration 10s
  cnibench client TCP_STREAM 198.19.1.10 --streams 4 --json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := suite.LookupTest(args[0])
			if err != nil {
				return err
			}
			if spec.Engine == "" {
				return runKindClient(cmd, spec, args[1], o.Port, duration, warmup, jsonOut)
			}
			o.Test, o.Host = spec.Engine, args[1]
			o.Duration, o.Warmup, o.Mode = engine.Duration(duration), engine.Duration(warmup), engine.Mode(mode)
			if spec.Multi && !cmd.Flags().Changed("streams") {
				o.Streams = 4
			}
			if err := o.Validate(); err != nil {
				return err
			}
			res, err := engine.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			if jsonOut {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			line := suite.SampleLine(spec.Name, results.Sample{Result: res})
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s: %s\n", spec.Name, o.Host, strings.TrimSpace(line))
			return nil
		},
	}
	f := cmd.Flags()
	f.DurationVar(&duration, "duration", duration, "measured time")
	f.DurationVar(&warmup, "warmup", warmup, "unmeasured time first")
	f.IntVar(&o.Streams, "streams", 1, "parallel flows")
	f.IntVar(&o.Port, "port", 0, "server port (default: the test's fixed port)")
	f.IntVar(&o.MessageSize, "message-size", 0, "bytes per write (streams) or per request/response (RR)")
	f.Int64Var(&o.RateBitsPerSec, "rate", 0, "UDP_STREAM offered rate in bit/s (0: as fast as possible)")
	f.BoolVar(&o.UDPGSO, "udp-gso", false, "UDP_STREAM: send runs of datagrams split by the kernel (UDP GSO); iperf3 3.12 does not")
	f.StringVar(&mode, "mode", "", "RR wait mode: blocking (default) or busy-poll")
	f.BoolVar(&jsonOut, "json", false, "print the full result as JSON")
	return cmd
}

// runKindClient runs a test of any other kind (HTTP_*, DNS_*) once
// against host with the suite's settings for it, through its kind's
// Options and Run; port, if set, replaces every port of the kind.
func runKindClient(cmd *cobra.Command, spec suite.TestSpec, host string, port int, duration, warmup time.Duration, jsonOut bool) error {
	k, ok := kinds.Lookup(spec.Kind)
	if !ok || k.Run == nil {
		return fmt.Errorf("%s: kind %q has no client to run", spec.Name, spec.Kind)
	}
	p := kinds.Plan{Duration: duration, Warmup: warmup}
	if port != 0 {
		p.Ports = map[string]int{}
		for _, kp := range k.ServerPorts() {
			p.Ports[kp.Name] = port
		}
	}
	o := k.Options(kinds.Test{Name: spec.Name, Kind: spec.Kind, Multi: spec.Multi, Template: spec.Template}, host, p)
	if v, ok := o.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return err
		}
	}
	res, err := k.Run(cmd.Context(), o)
	if err != nil {
		return err
	}
	if jsonOut {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s %s: %s\n", spec.Name, host, strings.TrimSpace(suite.SampleLine(spec.Name, results.Sample{Result: res})))
	return nil
}
