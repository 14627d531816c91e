package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
)

// Messages of an interruption, quoted in README's "Recovery" section (a
// test keeps the two in step).
const (
	// msgStopping is printed on the first SIGINT/SIGTERM by a command that
	// cleans up after itself (run, sweep, lab up).
	msgStopping = "cnibench: %s: stopping and cleaning up (a second signal exits at once)"
	// msgAbort is printed when a second signal cuts the cleanup short.
	msgAbort = "cnibench: second %s: exiting without cleaning up; remove what is left with: %s"
	// msgInterrupted starts the error of a run stopped after it measured.
	msgInterrupted = "interrupted: completed samples are in %s"
	// msgInterruptedOpen is the error of a lab run stopped before its
	// first sample (Open took down what it had brought up).
	msgInterruptedOpen = "interrupted before the first sample: nothing measured (the labs the run brought up are taken down)"
	// msgInterruptedUp is the error of a lab up stopped by a signal (Up
	// removed what it had made).
	msgInterruptedUp = "interrupted: lab %q was not brought up and what was made of it is removed"
)

// interrupts turns SIGINT and SIGTERM into a cancelled context: the
// first signal cancels (the command stops and cleans up), a second one
// exits at once with 128+signal, telling what to run to clean up. The
// exit code of an interrupted command is 128+signal as well (130 for
// SIGINT, 143 for SIGTERM), as a shell reports a process the signal
// killed, so scripts can tell "stopped" from "failed".
type interrupts struct {
	mu      sync.Mutex
	sig     syscall.Signal // the first signal; 0 before any
	cleanup []string       // commands that clean up what an abort leaves
	watch   bool           // the command cleans up: say so on the first signal
	stderr  io.Writer
	exit    func(int)
}

// notify starts watching the signals; stop ends it.
func (in *interrupts) notify(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-ch:
				in.received(s.(syscall.Signal), cancel)
			case <-done:
				return
			}
		}
	}()
	return ctx, func() { signal.Stop(ch); close(done); cancel() }
}

// received handles one signal: the first cancels, the second exits.
func (in *interrupts) received(s syscall.Signal, cancel func()) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.sig == 0 {
		in.sig = s
		if in.watch {
			fmt.Fprintf(in.stderr, "\n"+msgStopping+"\n", signalName(s))
		}
		cancel()
		return
	}
	if len(in.cleanup) > 0 {
		fmt.Fprintf(in.stderr, "\n"+msgAbort+"\n", signalName(s), strings.Join(in.cleanup, "; "))
	}
	in.exit(128 + int(s))
}

// cleansUp marks the command as one that cleans up after a signal, and
// what to run if a second signal cuts that short.
func (in *interrupts) cleansUp(commands ...string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.watch = true
	in.cleanup = append(in.cleanup, commands...)
}

// signal is the first signal received, 0 if none.
func (in *interrupts) signal() syscall.Signal {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.sig
}

// signalName is "SIGINT" or "SIGTERM".
func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}
