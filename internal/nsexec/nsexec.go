// Package nsexec runs command-line tools (iptables-restore, nft, ...)
// inside a network namespace and turns their failures into errors, for the
// datapaths that program a node's namespace through those tools.
package nsexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// Run runs name with args inside the network namespace at nsPath (the
// child is forked from a thread that entered it; the caller's threads
// never move), feeding stdin if not nil, and returns its stdout. A failure
// carries the tool's first lines of stderr, and wraps
// errors.ErrUnsupported when the tool says the kernel lacks something.
func Run(ctx context.Context, nsPath string, stdin []byte, name string, args ...string) ([]byte, error) {
	return RunEnv(ctx, nsPath, nil, stdin, name, args...)
}

// RunEnv is Run with extra environment variables ("KEY=value") added to
// the caller's environment.
func RunEnv(ctx context.Context, nsPath string, env []string, stdin []byte, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := netnsx.StartIn(nsPath, "", nil, cmd); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := cmd.Wait(); err != nil {
		msg := firstLines(errb.String(), 3)
		err = fmt.Errorf("%s: %w: %s", name, err, msg)
		if unsupportedMsg(msg) {
			err = fmt.Errorf("%w: %w", errors.ErrUnsupported, err)
		}
		return out.Bytes(), err
	}
	return out.Bytes(), nil
}

// unsupportedMsg recognises the tools' ways of saying the kernel lacks a
// table, match or target, so callers (and tests) can tell "this machine
// cannot" from "we did it wrong".
func unsupportedMsg(s string) bool {
	for _, m := range []string{
		"not supported", "missing kernel module", "do you need to insmod",
		"Table does not exist", "Could not fetch rule set generation id",
	} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// firstLines joins the first n lines of s on one line.
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " | ")
}
