// Package benchcli is the scaffolding shared by the engines' benchcmd
// commands (bench/http.sh, bench/dns.sh): subcommand dispatch with a
// context cancelled by SIGINT/SIGTERM, an optional CPU profile, and the
// Result printed as JSON.
package benchcli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
)

// Command is one subcommand: Run gets the arguments after its name.
type Command struct {
	Name string
	Run  func(ctx context.Context, args []string) error
}

// Main runs the subcommand named by os.Args[1] and exits: 2 on a missing
// subcommand, 1 (after printing "benchcmd: err") on an error.
func Main(cmds ...Command) {
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.Name
	}
	if len(os.Args) < 2 {
		fmt.Fprintf(os.Stderr, "usage: benchcmd %s [flags]\n", strings.Join(names, "|"))
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := fmt.Errorf("unknown command %q (%s)", os.Args[1], alternatives(names))
	for _, c := range cmds {
		if c.Name == os.Args[1] {
			err = c.Run(ctx, os.Args[2:])
			break
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcmd:", err)
		os.Exit(1)
	}
}

// alternatives spells names as "a, b or c".
func alternatives(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// CPUProfile starts a CPU profile written to path, if path is not empty;
// the caller defers the returned stop.
func CPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	pprof.StartCPUProfile(f)
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// PrintJSON writes v to stdout as indented JSON.
func PrintJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
