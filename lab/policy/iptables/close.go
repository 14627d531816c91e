package iptables

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
)

// Close removes every chain and set of ours from the node, read from the
// kernel (so leftovers of an earlier instance go too): built-in chains'
// jumps deleted, our chains flushed and deleted in one iptables-restore
// batch, then our sets destroyed. Idempotent.
func (e *Enforcer) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	d, err := e.dumpFilter(ctx)
	if err != nil {
		return err
	}
	if text := cleanup(d, e.names); text != nil {
		if _, err := e.restore(ctx, text); err != nil {
			return fmt.Errorf("policy iptables: remove chains: %w", err)
		}
	}
	sets, err := e.dumpSets(ctx)
	if err != nil {
		return err
	}
	var del bytes.Buffer
	for _, s := range sorted(setNames(sets)) {
		fmt.Fprintf(&del, "destroy %s\n", s)
	}
	if del.Len() > 0 {
		if _, err := e.ipset(ctx, del.Bytes()); err != nil {
			return fmt.Errorf("policy iptables: remove sets: %w", err)
		}
	}
	e.st, e.last, e.drift, e.base = kernelState{}, nil, true, 0
	if e.preFilter {
		return nil
	}
	out, err := e.run.Run(ctx, e.env, nil, saveBin, "-t", "filter")
	if err != nil || !filterEmpty(out) {
		return nil // another tool's rules are there: the table stays
	}
	// iptables-nft-save prints an empty filter table even when there is
	// none, so a missing table is no error.
	_, err = e.run.Run(ctx, nil, nil, "nft", "delete", "table", "ip", "filter")
	if err != nil && !strings.Contains(err.Error(), "No such file or directory") {
		return fmt.Errorf("policy iptables: remove the empty filter table: %w", err)
	}
	return nil
}

// filterEmpty reports whether an iptables-save of the filter table holds
// only its built-in chains, with ACCEPT policies and no rules.
func filterEmpty(out []byte) bool {
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(l, "-A") || strings.HasPrefix(l, "["):
			return false
		case strings.HasPrefix(l, ":") && !strings.Contains(l, " ACCEPT "):
			return false
		}
	}
	return true
}

// cleanup is the restore batch removing our chains and the jumps to them,
// or nil when there are none.
func cleanup(d filterDump, n names) []byte {
	if len(d.chains) == 0 && len(d.rules) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("*filter\n")
	chains := sorted(d.chains)
	for _, c := range chains {
		fmt.Fprintf(&b, ":%s - [0:0]\n", c)
	}
	var from []string
	for c := range d.rules {
		if !d.chains[c] {
			from = append(from, c)
		}
	}
	sort.Strings(from)
	for _, c := range from {
		for _, r := range d.rules[c] {
			fmt.Fprintf(&b, "-D %s", c)
			for _, a := range r.args {
				fmt.Fprintf(&b, " %s", a)
			}
			b.WriteString("\n")
		}
	}
	for _, c := range chains {
		fmt.Fprintf(&b, "-X %s\n", c)
	}
	b.WriteString("COMMIT\n")
	return b.Bytes()
}

func setNames[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}
