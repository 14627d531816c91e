package nsexec

import "context"

// Runner runs one tool and returns its stdout: what a datapath needs of
// the kernel's command-line tools (iptables-save, iptables-restore, nft).
// Datapaths hold one instead of calling Run, so their parsers and checks
// can be tested without root on recorded tool output.
type Runner interface {
	// Run runs name with args, env ("KEY=value") added to the caller's
	// environment and stdin fed if not nil.
	Run(ctx context.Context, env []string, stdin []byte, name string, args ...string) ([]byte, error)
}

// In is the Runner of the network namespace at a path such as
// /run/netns/cnb-x-node0: each tool runs there through RunEnv.
type In string

// Run is RunEnv in the namespace.
func (p In) Run(ctx context.Context, env []string, stdin []byte, name string, args ...string) ([]byte, error) {
	return RunEnv(ctx, string(p), env, stdin, name, args...)
}
