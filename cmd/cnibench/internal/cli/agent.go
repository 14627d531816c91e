package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/agent/nodeprobe"
)

func newAgentCmd() *cobra.Command {
	cfg := agent.Config{}
	var exitOnEOF bool
	var probe agent.ProbeConfig
	var nodeProbe bool
	cmd := &cobra.Command{
		Use:    "agent",
		Short:  "Run as agent: serve the engines' data ports and the control API (--node-probe: only report the node's Service datapath)",
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
			if nodeProbe {
				return serveProbe(ctx, cmd, cfg, probe)
			}
			return agent.Serve(ctx, cfg)
		},
	}
	cmd.Flags().StringVar(&cfg.Control, "control", "unix:/run/cnibench/agent.sock", fmt.Sprintf("control API address: unix:/path or tcp:host:port (with --node-probe the default is tcp::%d)", agent.DefaultProbePort))
	cmd.Flags().StringVar(&cfg.Bind, "bind", "", "address the engine servers listen on (default all)")
	cmd.Flags().IntVar(&cfg.HTTPResponseSize, "http-response-size", 0, "HTTP response body bytes (default 512)")
	cmd.Flags().DurationVar(&cfg.HTTPWork, "http-work", 0, "artificial CPU work per HTTP request (default none)")
	cmd.Flags().StringVar(&cfg.DNS.Listen, "dns-listen", "", "also run a DNS server (dnsmasq) for the DNS tests on this address")
	cmd.Flags().IntVar(&cfg.DNS.Port, "dns-port", 0, "port of that DNS server (default 53)")
	cmd.Flags().BoolVar(&exitOnEOF, "exit-on-stdin-eof", false, "exit when standard input closes")
	cmd.Flags().BoolVar(&nodeProbe, "node-probe", false, "serve only the control API and answer what this node's Service datapath holds (kube-proxy iptables-nft or nftables mode, Cilium), no engines; needs hostNetwork and CAP_NET_ADMIN, CAP_BPF, CAP_SYS_ADMIN")
	cmd.Flags().StringVar(&probe.Node, "node", os.Getenv("NODE_NAME"), "node name the probe reports (default $NODE_NAME, else the hostname)")
	cmd.Flags().StringVar(&probe.BPFFS, "bpffs", nodeprobe.DefaultBPFFS, "BPF filesystem the probe reads Cilium's pinned maps from")
	return cmd
}

// engineFlags are the agent flags a node probe has no use for.
var engineFlags = []string{"bind", "http-response-size", "http-work", "dns-listen", "dns-port"}

// serveProbe runs `agent --node-probe`: the control address and token of
// an agent, no engines.
func serveProbe(ctx context.Context, cmd *cobra.Command, cfg agent.Config, probe agent.ProbeConfig) error {
	for _, f := range engineFlags {
		if cmd.Flags().Changed(f) {
			return fmt.Errorf("--%s has no effect with --node-probe (a probe runs no engine)", f)
		}
	}
	probe.Control, probe.Token = cfg.Control, cfg.Token
	if !cmd.Flags().Changed("control") {
		probe.Control = fmt.Sprintf("tcp::%d", agent.DefaultProbePort)
	}
	if probe.Node == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("--node not given, $NODE_NAME empty and no hostname: %w", err)
		}
		probe.Node = h
	}
	return agent.ServeProbe(ctx, probe)
}
