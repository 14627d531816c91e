package l7proxy

import (
	"context"
	"time"
)

// The helpers below are l7proxy's process and nat-table hygiene, exported
// so that another lab proxy package (lab/ambient) stops its HAProxy
// processes and leaves a node's nat table as it found it the same way.

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

// OwnPids are the processes whose command line contains s (a config path
// prefix under a lab's state dir), found by scanning /proc.
func OwnPids(s string) []int { return ownPids(s) }

// KillOwn ends pid if its command line still contains s: SIGTERM, then
// SIGKILL after 3 s, and waits for it to go.
func KillOwn(pid int, s string) error { return killOwn(pid, s) }

// RemoveCgroup removes an emptied cgroup v2 dir, waiting out EBUSY.
func RemoveCgroup(dir string) error { return rmdirCgroup(dir) }

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

// ProcessCPU is utime+stime of a live process (for a proxy without a
// cgroup of its own).
func ProcessCPU(pid int) (time.Duration, error) { return procCPU(pid) }
