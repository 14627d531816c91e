package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
)

// newServerCmd serves every engine's data port, standalone (like netserver
// or iperf3 -s), e.g. inside a lab pod with `cnibench lab exec`.
func newServerCmd() *cobra.Command {
	srv := &engine.Server{}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Serve every engine's fixed data port until interrupted",
		Long: "Serve TCP_STREAM (5201), UDP_STREAM (5202), TCP_RR (5203), UDP_RR (5204) and\n" +
			"TCP_CRR (5205) until interrupted, for `cnibench client` or bench/ scripts.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := srv.Listen(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "cnibench server: listening on ports 5201-5205 (%s)\n", bindName(srv.Bind))
			return srv.Serve(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&srv.Bind, "bind", "", "address to listen on (default all)")
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
			line := suite.SampleLine(spec.Name, results.Sample{Engine: res})
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
	f.StringVar(&mode, "mode", "", "RR wait mode: blocking (default) or busy-poll")
	f.BoolVar(&jsonOut, "json", false, "print the full result as JSON")
	return cmd
}
