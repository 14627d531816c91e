// Package benchcli is the scaffolding shared by the engines' benchcmd
// commands (bench/http.sh, bench/dns.sh): subcommand dispatch with a
// context cancelled by SIGINT/SIGTERM, an optional CPU profile, and the
// Result printed as JSON.
package benchcli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/engine/kinds"
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

// Client is what every benchcmd client shares: its times as flags, a CPU
// profile, and the Result printed as JSON.
type Client struct{ profile *string }

// ClientFlags adds the flags every client has to fs: -d (measured, 5s)
// and -warmup (1s) into r, -timeout into timeout (def; usage says per
// what), and -cpuprofile.
func ClientFlags(fs *flag.FlagSet, r *kinds.RunnerOptions, timeout *kinds.Duration, def time.Duration, usage string) *Client {
	fs.DurationVar((*time.Duration)(&r.Duration), "d", 5*time.Second, "measured duration")
	fs.DurationVar((*time.Duration)(&r.Warmup), "warmup", time.Second, "warmup")
	fs.DurationVar((*time.Duration)(timeout), "timeout", def, usage)
	return &Client{profile: fs.String("cpuprofile", "", "write a CPU profile here")}
}

// Run runs the client (after the flags were parsed) under the CPU profile
// asked for and prints its Result.
func (c *Client) Run(run func() (any, error)) error {
	stopProfile, err := CPUProfile(*c.profile)
	if err != nil {
		return err
	}
	defer stopProfile()
	res, err := run()
	if err != nil {
		return err
	}
	return PrintJSON(res)
}
