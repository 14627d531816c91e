// Package cli is cnibench's thin command line: it parses flags into the
// library packages' Options and prints what they return.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/kfeature"
)

// global flags shared by lab and run commands.
type globals struct {
	labName  string
	stateDir string
	intr     *interrupts // SIGINT/SIGTERM (signals.go)
}

// Execute runs the command line and returns the process exit code: 0, 1
// on an error, a child's code (lab exec), exitTeardown when only the
// teardown failed (teardown.go), 128+signal when a signal stopped it.
func Execute() int {
	intr := &interrupts{stderr: os.Stderr, exit: os.Exit}
	ctx, stop := intr.notify(context.Background())
	defer stop()
	root := newRootWith(&globals{intr: intr})
	err := root.ExecuteContext(ctx)
	return exitStatus(os.Stderr, err, intr.signal())
}

// exitStatus prints err (if any) on one line and returns the exit code.
func exitStatus(stderr io.Writer, err error, sig syscall.Signal) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(exitError); ok {
		return int(ee)
	}
	if u, ok := kfeature.As(err); ok && sig == 0 && joined(err) == 1 {
		// One line that says what the kernel lacks, not the path to it
		// (unless another error, a failed cleanup, comes with it).
		fmt.Fprintln(stderr, "cnibench: "+oneLine(u.Error()))
		return 1
	}
	fmt.Fprintln(stderr, "cnibench: "+oneLine(err.Error()))
	var ce *codedError // run_exit.go
	switch {
	case sig != 0:
		return 128 + int(sig)
	case onlyTeardown(err):
		return exitTeardown
	case errors.As(err, &ce) && joined(err) == 1:
		return ce.code
	}
	return 1
}

// exitError carries a child's exit code through cobra without a message.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func newRoot() *cobra.Command { return newRootWith(&globals{}) }

func newRootWith(g *globals) *cobra.Command {
	if g.intr == nil {
		g.intr = &interrupts{stderr: io.Discard, exit: os.Exit}
	}
	root := &cobra.Command{
		Use:   "cnibench",
		Short: "Kubernetes network datapath benchmark: local lab or real clusters",
		Long: `cnibench measures Kubernetes network datapaths: throughput, request/response
latency and connection rates on the placement matrix (pod-to-pod, host-to-host;
same node, other node). Its default target is a local lab: a multi-node cluster
built from Linux network namespaces on this machine (needs root).

  cnibench run                    run the quick suite on the lab, write a report
  cnibench sweep                  Service-scale sweep: cost of thousands of Services
  cnibench churn                  churn: the datapath while Services change around the traffic
  cnibench lab up|down|status     manage the lab by hand
  cnibench lab exec node0-pod0 -- iperf3 -s`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.labName, "lab", "default", "lab name; every lab object is prefixed cnb-<name>-")
	root.PersistentFlags().StringVar(&g.stateDir, "state-dir", "/run/cnibench", "where lab state and agent sockets live")
	root.AddCommand(measureCommands(g)...)
	root.AddCommand(newLabCmd(g), newReportCmd(), newCompareCmd(), newProfilesCmd(), newServerCmd(), newClientCmd(), newAgentCmd(), newVersionCmd(), newK8sCmd())
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%s: %v (see '%s --help')", c.CommandPath(), err, c.CommandPath())
	})
	return root
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// joined counts the errors errors.Join put together in err (1 for a
// plain error).
func joined(err error) int {
	if _, ok := err.(*kfeature.Unsupported); ok {
		return 1 // its Unwrap lists its cause, not joined errors
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		n := 0
		for _, e := range j.Unwrap() {
			n += joined(e)
		}
		return n
	}
	return 1
}
