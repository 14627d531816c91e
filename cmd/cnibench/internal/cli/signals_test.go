package cli

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// The first signal cancels and says the command cleans up; the second
// exits 128+signal naming the cleanup commands.
func TestInterruptsFirstCancelsSecondExits(t *testing.T) {
	var out strings.Builder
	exited := -1
	in := &interrupts{stderr: &out, exit: func(c int) { exited = c }}
	in.cleansUp("cnibench --lab a lab down", "cnibench --lab b lab down")
	cancelled := false
	in.received(syscall.SIGTERM, func() { cancelled = true })
	if !cancelled || exited != -1 || in.signal() != syscall.SIGTERM {
		t.Fatalf("first signal: cancelled %v, exited %d, signal %v", cancelled, exited, in.signal())
	}
	if !strings.Contains(out.String(), "cnibench: SIGTERM: stopping and cleaning up (a second signal exits at once)") {
		t.Errorf("first signal printed %q", out.String())
	}
	in.received(syscall.SIGINT, func() {})
	if exited != 130 {
		t.Errorf("second signal exited %d, want 130", exited)
	}
	if want := "cnibench: second SIGINT: exiting without cleaning up; remove what is left with: cnibench --lab a lab down; cnibench --lab b lab down"; !strings.Contains(out.String(), want) {
		t.Errorf("second signal printed %q, want %q", out.String(), want)
	}
}

// A command that does not clean up (server, agent) prints nothing on the
// first signal.
func TestInterruptsQuietForOtherCommands(t *testing.T) {
	var out strings.Builder
	in := &interrupts{stderr: &out, exit: func(int) {}}
	in.received(syscall.SIGINT, func() {})
	if out.Len() != 0 {
		t.Errorf("printed %q", out.String())
	}
}

func TestExitStatus(t *testing.T) {
	td := &teardownError{err: errors.New(`scenario ipt: lab "ipt" down: remove /run/netns/cnb-ipt-node0: device or resource busy`),
		out: "res", cleanup: []string{"cnibench --lab ipt lab down"}}
	for _, c := range []struct {
		err  error
		sig  syscall.Signal
		code int
		line string
	}{
		{nil, 0, 0, ""},
		{nil, syscall.SIGINT, 0, ""}, // a server stopped by Ctrl-C did its job
		{errors.New("boom"), 0, 1, "cnibench: boom\n"},
		{exitError(3), 0, 3, ""},
		{errors.New("interrupted: x"), syscall.SIGINT, 130, "cnibench: interrupted: x\n"},
		{errors.New("interrupted: x"), syscall.SIGTERM, 143, "cnibench: interrupted: x\n"},
		{fmt.Errorf("wrapped: %w", td), 0, exitTeardown,
			`cnibench: wrapped: teardown failed: scenario ipt: lab "ipt" down: remove /run/netns/cnb-ipt-node0: device or resource busy; the samples in res/results.json stand; remove what is left with: cnibench --lab ipt lab down` + "\n"},
		{errors.Join(errors.New("run failed"), td), 0, 1, ""}, // the worse error wins
	} {
		var out strings.Builder
		if code := exitStatus(&out, c.err, c.sig); code != c.code || (c.line != "" && out.String() != c.line) {
			t.Errorf("exitStatus(%v, %v) = %d, %q; want %d, %q", c.err, c.sig, code, out.String(), c.code, c.line)
		}
	}
}
