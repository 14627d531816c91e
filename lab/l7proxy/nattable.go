package l7proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/internal/nsexec"
)

// natState is what a namespace's ip nat table held before a deployment
// added its first rule there. iptables-nft creates the table and each
// built-in chain on first use and deleting the rules leaves them, so a
// lab that stays up would keep an empty nat table (and, in pod
// namespaces, a nat pass on every packet) after the proxies stopped.
type natState struct {
	Table  bool     `json:"table"`            // the table existed
	Chains []string `json:"chains,omitempty"` // its chains
}

// natContent is the ip nat table as nft lists it: its chains with their
// rule counts, and how many other objects (sets, maps, ...) it holds.
type natContent struct {
	table  bool
	chains map[string]int
	others int
}

// nftUsable tells whether nft is there to see iptables-nft's tables; with
// iptables-legacy's x_tables nat table nft sees nothing, and that table
// cannot be deleted anyway.
func nftUsable() bool {
	_, err := exec.LookPath("nft")
	return err == nil
}

// readNat lists the ip nat table of the namespace at ns.
func readNat(ctx context.Context, ns string) (natContent, error) {
	c := natContent{chains: map[string]int{}}
	out, err := nsexec.Run(ctx, ns, nil, "nft", "-j", "list", "tables", "ip")
	if err != nil {
		return c, fmt.Errorf("l7proxy: %w", err)
	}
	tables, err := parseNft(out)
	if err != nil {
		return c, err
	}
	for _, o := range tables {
		if o.Table != nil && o.Table.Name == "nat" {
			c.table = true
		}
	}
	if !c.table {
		return c, nil
	}
	if out, err = nsexec.Run(ctx, ns, nil, "nft", "-j", "list", "table", "ip", "nat"); err != nil {
		return c, fmt.Errorf("l7proxy: %w", err)
	}
	objs, err := parseNft(out)
	if err != nil {
		return c, err
	}
	return natFrom(objs), nil
}

// nftObject is one element of nft's JSON list; only the kinds we look at
// are decoded, any other sets Other.
type nftObject struct {
	Table *struct {
		Name string `json:"name"`
	} `json:"table"`
	Chain *struct {
		Name string `json:"name"`
	} `json:"chain"`
	Rule *struct {
		Chain string `json:"chain"`
	} `json:"rule"`
	Other bool `json:"-"`
}

// parseNft decodes `nft -j list ...` output.
func parseNft(b []byte) ([]nftObject, error) {
	var doc struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("l7proxy: nft JSON: %w", err)
	}
	var out []nftObject
	for _, m := range doc.Nftables {
		var o nftObject
		for k, v := range m {
			var err error
			switch k {
			case "metainfo":
				continue
			case "table":
				err = json.Unmarshal(v, &o.Table)
			case "chain":
				err = json.Unmarshal(v, &o.Chain)
			case "rule":
				err = json.Unmarshal(v, &o.Rule)
			default:
				o.Other = true
			}
			if err != nil {
				return nil, fmt.Errorf("l7proxy: nft JSON %s: %w", k, err)
			}
			out = append(out, o)
		}
	}
	return out, nil
}

// natFrom is the content of one table's listing.
func natFrom(objs []nftObject) natContent {
	c := natContent{chains: map[string]int{}}
	for _, o := range objs {
		switch {
		case o.Table != nil:
			c.table = true
		case o.Chain != nil:
			c.chains[o.Chain.Name] += 0
		case o.Rule != nil:
			c.chains[o.Rule.Chain]++
		case o.Other:
			c.others++
		}
	}
	return c
}

// state is what c says to keep.
func (c natContent) state() natState {
	s := natState{Table: c.table}
	for name := range c.chains {
		s.Chains = append(s.Chains, name)
	}
	slices.Sort(s.Chains)
	return s
}

// undoBatch is the nft script deleting what the deployment created that
// is empty now: the chains before lacked, then the table if before had
// none and nothing is left in it. Chains or rules someone else added
// meanwhile keep what holds them. "" when there is nothing to delete.
func undoBatch(before natState, now natContent) string {
	if !now.table {
		return ""
	}
	var b strings.Builder
	left := 0
	names := make([]string, 0, len(now.chains))
	for name := range now.chains {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if now.chains[name] == 0 && !slices.Contains(before.Chains, name) {
			fmt.Fprintf(&b, "delete chain ip nat %s\n", name)
			continue
		}
		left++
	}
	if !before.Table && left == 0 && now.others == 0 {
		b.WriteString("delete table ip nat\n")
	}
	return b.String()
}

// recordNat keeps, before the first rule in ns, what its nat table held.
func (d *Deployment) recordNat(ctx context.Context, ns string) error {
	if _, ok := d.NatBefore[ns]; ok || !nftUsable() {
		return nil
	}
	c, err := readNat(ctx, ns)
	if err != nil {
		return err
	}
	if d.NatBefore == nil {
		d.NatBefore = map[string]natState{}
	}
	d.NatBefore[ns] = c.state()
	return nil
}

// restoreNat deletes, after our rules are gone, the nat chains and table
// the deployment created in ns, so the namespace is as it found it. A
// missing namespace has nothing left.
func restoreNat(ctx context.Context, ns string, before natState) error {
	if _, err := os.Stat(ns); errors.Is(err, os.ErrNotExist) || !nftUsable() {
		return nil
	}
	now, err := readNat(ctx, ns)
	if err != nil {
		return err
	}
	script := undoBatch(before, now)
	if script == "" {
		return nil
	}
	if _, err := nsexec.Run(ctx, ns, []byte(script), "nft", "-f", "-"); err != nil {
		return fmt.Errorf("l7proxy: removing the nat table we created in %s: %w", ns, err)
	}
	return nil
}
