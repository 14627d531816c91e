package tuning

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/internal/netnsx"
)

const (
	ccKey       = "net.ipv4.tcp_congestion_control"
	ccAvailable = "/proc/sys/net/ipv4/tcp_available_congestion_control"
	// ccAllowed lists what a namespace other than the host's may choose
	// (the kernel answers EPERM for any other); the host's admin sets it.
	ccAllowed = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
)

// congestion sets the TCP congestion control of new connections in every
// namespace (a per-namespace sysctl since Linux 4.15), as a node's
// sysctl would: "cc-bbr" against the lab's cubic.
type congestion struct{ algo string }

func (c congestion) Name() string { return "cc-" + c.algo }
func (c congestion) About() string {
	return "TCP congestion control " + c.algo + " in every namespace (else the host's default, which the results record)"
}

// Applicable needs the algorithm loaded already (setting one that is not
// would make the kernel load its module, a change to the host) and
// allowed in namespaces by the host.
func (c congestion) Applicable() error {
	have, err := words(ccAvailable)
	if err != nil {
		return err
	}
	if !slices.Contains(have, c.algo) {
		return fmt.Errorf("%w: this kernel offers %s, not %s (its module is not loaded, and cnibench loads none)",
			ErrNotApplicable, strings.Join(have, " "), c.algo)
	}
	allowed, err := words(ccAllowed)
	if err != nil {
		return err
	}
	if !slices.Contains(allowed, c.algo) {
		return fmt.Errorf("%w: the host allows only %s in network namespaces (net.ipv4.tcp_allowed_congestion_control), and cnibench never changes the host",
			ErrNotApplicable, strings.Join(allowed, " "))
	}
	return nil
}

// words is a /proc file's whitespace-separated words.
func words(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return strings.Fields(string(b)), nil
}

func (c congestion) Apply(_ context.Context, s Site) (func() error, error) {
	var old string
	err := netnsx.Do(s.Netns, func() error {
		var err error
		if old, err = netnsx.ReadSysctl(ccKey); err != nil {
			return err
		}
		return netnsx.WriteSysctl(ccKey, c.algo)
	})
	if err != nil {
		return nil, err
	}
	return func() error {
		return netnsx.Do(s.Netns, func() error { return netnsx.WriteSysctl(ccKey, old) })
	}, nil
}

func (c congestion) Verify(_ context.Context, s Site) (string, error) {
	var got string
	err := netnsx.Do(s.Netns, func() error {
		var err error
		got, err = netnsx.ReadSysctl(ccKey)
		return err
	})
	if err == nil && got != c.algo {
		err = fmt.Errorf("%s reads %q, want %q", ccKey, got, c.algo)
	}
	return got, err
}
