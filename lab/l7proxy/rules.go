package l7proxy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cnibench/cnibench/internal/nsexec"
)

// tag is the iptables comment on every rule of a deployment.
func tag(prefix string) string { return prefix + "l7proxy" }

// addRule inserts r at the top of its nat chain (before a Service
// datapath's DNAT, which would end the nat traversal first).
func addRule(ctx context.Context, r natRule, prefix string) error {
	args := append([]string{"-w", "-t", "nat", "-I", r.Chain, "1"}, r.Args...)
	args = append(args, "-m", "comment", "--comment", tag(prefix))
	if _, err := nsexec.Run(ctx, r.Netns, nil, "iptables", args...); err != nil {
		return fmt.Errorf("l7proxy: nat rule in %s: %w", r.Netns, err)
	}
	return nil
}

// removeRules deletes every nat rule tagged for prefix in the namespace
// at ns, found with iptables-save; a missing namespace holds none.
func removeRules(ctx context.Context, ns, prefix string) error {
	return removeTagged(ctx, ns, tag(prefix))
}

// removeTagged deletes every nat rule whose comment is t in the
// namespace at ns; a missing namespace holds none.
func removeTagged(ctx context.Context, ns, t string) error {
	if _, err := os.Stat(ns); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	out, err := nsexec.Run(ctx, ns, nil, "iptables-save", "-t", "nat")
	if err != nil {
		return fmt.Errorf("l7proxy: %w", err)
	}
	var errs []error
	for _, args := range taggedRules(string(out), t) {
		if _, err := nsexec.Run(ctx, ns, nil, "iptables", append([]string{"-w", "-t", "nat"}, args...)...); err != nil {
			errs = append(errs, fmt.Errorf("l7proxy: delete rule in %s: %w", ns, err))
		}
	}
	return errors.Join(errs...)
}

// taggedRules turns the "-A" lines of iptables-save output that carry
// the comment t into "-D" argument lists. Our rules have no quoted
// arguments, so splitting on blanks is exact for them.
func taggedRules(save, t string) [][]string {
	var out [][]string
	for _, l := range strings.Split(save, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || f[0] != "-A" || !hasComment(f, t) {
			continue
		}
		f[0] = "-D"
		out = append(out, f)
	}
	return out
}

func hasComment(f []string, t string) bool {
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "--comment" && strings.Trim(f[i+1], "\"") == t {
			return true
		}
	}
	return false
}

// countRules is how many rules tagged for prefix ns holds (for tests and
// Verify).
func countRules(ctx context.Context, ns, prefix string) (int, error) {
	return countTagged(ctx, ns, tag(prefix))
}

// countTagged is how many nat rules whose comment is t ns holds.
func countTagged(ctx context.Context, ns, t string) (int, error) {
	out, err := nsexec.Run(ctx, ns, nil, "iptables-save", "-t", "nat")
	if err != nil {
		return 0, fmt.Errorf("l7proxy: %w", err)
	}
	return len(taggedRules(string(out), t)), nil
}

// addRoute adds r (see serviceRoute), tagged with routeProto.
func addRoute(ctx context.Context, r serviceRoute) error {
	if _, err := nsexec.Run(ctx, r.Netns, nil, "ip", "-4", "route", "replace", r.Dst+"/32", "dev", "lo", "src", r.Src, "proto", routeProto); err != nil {
		return fmt.Errorf("l7proxy: route to %s in %s: %w", r.Dst, r.Netns, err)
	}
	return nil
}

// removeRoutes deletes every route tagged routeProto in the namespace at
// ns; a missing namespace holds none.
func removeRoutes(ctx context.Context, ns string) error {
	if _, err := os.Stat(ns); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if _, err := nsexec.Run(ctx, ns, nil, "ip", "-4", "route", "flush", "proto", routeProto); err != nil {
		return fmt.Errorf("l7proxy: remove routes in %s: %w", ns, err)
	}
	return nil
}
