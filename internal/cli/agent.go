package cli

import (
	"context"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/agent"
)

func newAgentCmd() *cobra.Command {
	cfg := agent.Config{}
	var exitOnEOF bool
	cmd := &cobra.Command{
		Use:    "agent",
		Short:  "Run as agent: serve the engines' data ports and the control API",
		Hidden: true, // started by cnibench itself inside lab namespaces and pods
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Token = os.Getenv(agent.TokenEnv)
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			if exitOnEOF {
				// The CLI holds our stdin; when it exits, even by SIGKILL,
				// the pipe closes and we go too.
				go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }()
			}
			return agent.Serve(ctx, cfg)
		},
	}
	cmd.Flags().StringVar(&cfg.Control, "control", "unix:/run/cnibench/agent.sock", "control API address: unix:/path or tcp:host:port")
	cmd.Flags().StringVar(&cfg.Bind, "bind", "", "address the engine servers listen on (default all)")
	cmd.Flags().IntVar(&cfg.HTTPResponseSize, "http-response-size", 0, "HTTP response body bytes (default 512)")
	cmd.Flags().DurationVar(&cfg.HTTPWork, "http-work", 0, "artificial CPU work per HTTP request (default none)")
	cmd.Flags().StringVar(&cfg.DNS.Listen, "dns-listen", "", "also run a DNS server (dnsmasq) for the DNS tests on this address")
	cmd.Flags().IntVar(&cfg.DNS.Port, "dns-port", 0, "port of that DNS server (default 53)")
	cmd.Flags().BoolVar(&exitOnEOF, "exit-on-stdin-eof", false, "exit when standard input closes")
	return cmd
}
