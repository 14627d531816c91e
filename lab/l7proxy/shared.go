package l7proxy

import (
	"context"
)

// The helpers below are l7proxy's nat-table hygiene and rule syntax,
// exported so that another lab proxy package (lab/ambient) leaves a node's
// nat table as it found it and enforces the same rules the same way
// (their HAProxy processes are lab/haproxy's).

// NatState is what a namespace's ip nat table held before a package added
// its first rule there.
type NatState = natState

// RecordNat reads what the nat table of the namespace at ns holds now;
// ok is false when nft is not there to tell (iptables-legacy).
func RecordNat(ctx context.Context, ns string) (s NatState, ok bool, err error) {
	if !nftUsable() {
		return NatState{}, false, nil
	}
	c, err := readNat(ctx, ns)
	if err != nil {
		return NatState{}, false, err
	}
	return c.state(), true, nil
}

// RestoreNat deletes the nat chains and table created in ns since before
// was recorded, once the caller's rules there are gone.
func RestoreNat(ctx context.Context, ns string, before NatState) error {
	return restoreNat(ctx, ns, before)
}

// RemoveTaggedNat deletes every nat rule whose comment is t in the
// namespace at ns (found with iptables-save); a missing namespace holds
// none.
func RemoveTaggedNat(ctx context.Context, ns, t string) error { return removeTagged(ctx, ns, t) }

// CountTaggedNat is how many nat rules whose comment is t ns holds.
func CountTaggedNat(ctx context.Context, ns, t string) (int, error) { return countTagged(ctx, ns, t) }

// RuleACL is r as HAProxy anonymous ACLs, ANDed, for an "http-request
// allow if" line (another package's L7 proxy enforcing the same rules).
func RuleACL(r HTTPRule) string { return conditions(r) }

// ValidateRule says, in one line, what is wrong with r.
func ValidateRule(r HTTPRule) error { return r.validate() }
