package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/lab"
)

func newLabCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Manage the local lab: a cluster of network namespaces on this machine",
	}
	cmd.AddCommand(newLabUpCmd(g), newLabDownCmd(g), newLabStatusCmd(g), newLabExecCmd(g))
	return cmd
}

func newLabUpCmd(g *globals) *cobra.Command {
	var lf labFlags
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Create the lab (nodes, pods, underlay, routes) and leave it running",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := lf.config(cmd.Flags(), g)
			if err != nil {
				return err
			}
			if err := lab.RequirePrivileges(); err != nil {
				return err
			}
			g.intr.cleansUp(labDownCommand(g, cfg.Name))
			l, err := lab.Up(cmd.Context(), cfg)
			if err != nil && cmd.Context().Err() != nil {
				return fmt.Errorf(msgInterruptedUp+" (%v)", cfg.Name, err)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "lab %q is up: %d nodes × %d pods (take it down with 'cnibench lab down')\n", l.Config.Name, len(l.Nodes), l.Config.PodsPerNode)
			if dp := l.Config.ServiceDatapath; dp != "" {
				// The datapath lives only as long as the run that programs
				// it: say so, or a by-hand client to the ClusterIP meets
				// "network is unreachable" without a reason.
				fmt.Fprintf(cmd.ErrOrStderr(), "Service datapath %s: each 'cnibench run' on this lab programs the test Services (ClusterIP %s: node1's pods, %s: node0's) and removes them when it ends; outside a run the ClusterIPs are unreachable\n",
					dp, datapath.TestVIP(0), datapath.TestVIP(1))
			}
			s, err := l.Status()
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), s)
			return nil
		},
	}
	lf.register(cmd.Flags())
	return cmd
}

func newLabDownCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Remove every object of the lab, also what a crashed run left (idempotent)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := lab.RequirePrivileges(); err != nil {
				return err
			}
			removed, err := lab.Down(g.stateDir, g.labName)
			if err != nil {
				return err
			}
			if len(removed) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "lab %q: nothing to remove\n", g.labName)
				return nil
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "lab %q: removed %d objects\n", g.labName, len(removed))
			return nil
		},
	}
}

func newLabStatusCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the lab's nodes, pods, addresses and what runs in them; for a lab that is not up, what of it is left",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := lab.Load(g.stateDir, g.labName)
			if errors.Is(err, lab.ErrNotFound) {
				return notUp(cmd.OutOrStdout(), g)
			}
			if err != nil {
				return err
			}
			s, err := l.Status()
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), s)
			return nil
		},
	}
}

// notUp answers `lab status` for a lab without state. "Not up" is the
// whole answer only when nothing of the lab is left; otherwise it lists
// what a crashed run or another tool's mounts left behind and how to
// remove it.
func notUp(w io.Writer, g *globals) error {
	left, lerr := lab.Leftovers(g.stateDir, g.labName)
	if len(left) == 0 && lerr == nil {
		return fmt.Errorf("lab %q is not up (start it with 'cnibench lab up')", g.labName)
	}
	fmt.Fprintf(w, "lab %q is not up, but %d of its objects are left:\n", g.labName, len(left))
	for _, l := range left {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if lerr != nil {
		fmt.Fprintf(w, "  (looking for more failed: %v)\n", lerr)
	}
	return fmt.Errorf("lab %q is not up, but objects of it are left (listed above): remove them with '%s'", g.labName, labDownCommand(g, g.labName))
}

func newLabExecCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "exec NAME -- CMD [ARGS...]",
		Short: "Run a command inside a lab node's or pod's network namespace",
		Example: `  cnibench lab exec node1-pod0 -- iperf3 -s
  cnibench lab exec node0-pod0 -- iperf3 -c 198.19.1.10
  cnibench lab exec node0 -- ip route`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 || cmd.ArgsLenAtDash() != 1 {
				return errors.New("usage: cnibench lab exec NAME -- CMD [ARGS...]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := lab.RequirePrivileges(); err != nil {
				return err
			}
			l, err := lab.Load(g.stateDir, g.labName)
			if errors.Is(err, lab.ErrNotFound) {
				return fmt.Errorf("lab %q is not up (start it with 'cnibench lab up')", g.labName)
			}
			if err != nil {
				return err
			}
			ep, err := l.Endpoint(args[0])
			if err != nil {
				return err
			}
			path, err := exec.LookPath(args[1])
			if err != nil {
				return fmt.Errorf("%s: %v", args[1], err)
			}
			c := exec.Command(path, args[2:]...)
			c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
			if err := l.Start(ep, c, nil); err != nil {
				return err
			}
			err = c.Wait()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				if code := ee.ExitCode(); code > 0 {
					return exitError(code)
				}
				return fmt.Errorf("%s: %s", strings.Join(args[1:], " "), ee)
			}
			return err
		},
	}
}
