package iptables

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strconv"

	"github.com/cnibench/cnibench/lab/policy/internal/nfrule"
)

// Name limits of the kernel: an iptables chain name has at most 28
// characters, an ipset name 31.
const (
	maxChain = 28
	maxSet   = 31
)

// names derives every object name from the lab prefix plus "POL", so that
// Close and Verify find exactly ours (other parts of the lab use the same
// lab prefix for their own chains): <p>FWD (dispatch), <p>DROP (the
// counted drop), <p>I<hash7>/<p>E<hash7> (a pod's ingress/egress chain),
// <p>I<hash4>-<rule in base 36> (a rule's peer set). Hashes keep names
// within the limits whatever the pod names; Program refuses a spec whose
// pods' hashes collide.
type names struct{ p string }

func newNames(labPrefix string) (names, error) {
	n := names{p: labPrefix + "POL"}
	// The longest names: a chain, and a set of rule 32767 (the scale limit).
	if l := len(n.Chain("x", nfrule.Dir{Short: "I"})); l > maxChain {
		return n, fmt.Errorf("policy iptables: prefix %q too long: chain names of %d characters (max %d)", labPrefix, l, maxChain)
	}
	if l := len(n.Set("x", nfrule.Dir{Short: "I"}, 1<<15)); l > maxSet {
		return n, fmt.Errorf("policy iptables: prefix %q too long: set names of %d characters (max %d)", labPrefix, l, maxSet)
	}
	return n, nil
}

func (n names) ours() string { return n.p }
func (n names) fwd() string  { return n.p + "FWD" }
func (n names) drop() string { return n.p + "DROP" }

func (n names) Chain(pod string, d nfrule.Dir) string { return n.p + d.Short + hash(pod)[:7] }

func (n names) Set(pod string, d nfrule.Dir, rule int) string {
	return n.p + d.Short + hash(pod)[:4] + "-" + strconv.FormatInt(int64(rule), 36)
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base32.StdEncoding.EncodeToString(sum[:])
}
