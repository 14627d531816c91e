package iptables

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
)

// Close removes our jump rules and flushes and deletes our chains, in one
// iptables-restore --noflush batch, as kube-proxy's CleanupLeftovers does.
// With the nft backend it then deletes the nat and filter tables if they
// did not exist before New and are now empty, so the namespace's nftables
// ruleset is back to what it was (legacy x_tables tables cannot be
// removed; they are left empty with their ACCEPT policies). Idempotent.
func (d *Datapath) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.Timeout)
	defer cancel()
	dm, err := d.dump(ctx)
	if err != nil {
		return err
	}
	if text := cleanup(dm); text != nil {
		if _, err := d.runRestore(ctx, text); err != nil {
			return fmt.Errorf("%s: cleanup: %w", d.Name(), err)
		}
	}
	d.last, d.prev, d.haveJumps = nil, map[string]bool{}, map[int]bool{}
	d.held, d.heldLarge = nil, false // the chains are gone: a later sync writes them all
	if d.opts.Legacy {
		return nil
	}
	nft, err := exec.LookPath("nft")
	if err != nil {
		return nil // nothing to remove the emptied tables with
	}
	if dm, err = d.dump(ctx); err != nil {
		return err
	}
	for _, table := range []string{"filter", "nat"} {
		if t := dm[table]; t != nil && !d.preTables[table] && t.empty() {
			if _, err := d.run.Run(ctx, nil, nil, nft, "delete", "table", "ip", table); err != nil {
				return fmt.Errorf("%s: remove empty table %s: %w", d.Name(), table, err)
			}
		}
	}
	return nil
}

// cleanup returns the restore batch removing everything of ours from dm,
// or nil if there is nothing.
func cleanup(dm dump) []byte {
	var b bytes.Buffer
	for _, table := range []string{"filter", "nat"} {
		t := dm[table]
		if t == nil {
			continue
		}
		var chains []string
		for c := range t.user {
			if isOurChain(table, c) {
				chains = append(chains, c)
			}
		}
		sort.Strings(chains)
		var dels []string
		for _, r := range t.rules {
			if t.builtin[r.chain] != "" && isOurChain(table, r.target()) {
				dels = append(dels, "-D"+r.line[len("-A"):])
			}
		}
		if len(chains) == 0 && len(dels) == 0 {
			continue
		}
		fmt.Fprintf(&b, "*%s\n", table)
		for _, c := range chains {
			chainLine(&b, c) // flushes it
		}
		for _, l := range dels {
			b.WriteString(l + "\n")
		}
		for _, c := range chains {
			line(&b, "-X", c)
		}
		b.WriteString("COMMIT\n")
	}
	if b.Len() == 0 {
		return nil
	}
	return b.Bytes()
}

// empty reports whether a table holds nothing but its built-in chains with
// their default ACCEPT policy.
func (t *tableDump) empty() bool {
	if len(t.rules) > 0 || len(t.user) > 0 {
		return false
	}
	for _, p := range t.builtin {
		if p != "ACCEPT" {
			return false
		}
	}
	return true
}
