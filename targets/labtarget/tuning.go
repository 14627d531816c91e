package labtarget

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/tuning"
	"github.com/cnibench/cnibench/suite"
)

// tuningState is what the run's tunings did and how to undo them.
type tuningState struct {
	checks []tuning.Check
	undos  []func() error
	// skip is why nothing is measured in this scenario: a tuning that did
	// not apply ("" when all did). The scenario's results are then
	// skipped with it, never measured as if the tuning had held.
	skip string
}

// openTuning applies the scenario's tunings (the run's lab.Config.Tuning:
// unlike the lab's features they belong to the run, which undoes them,
// so a lab that was up already gets them too) in every namespace they
// concern and reads each back. One that is not applicable
// or fails is recorded as such and the scenario measures nothing; the
// run goes on with the other scenarios.
func (t *Target) openTuning(ctx context.Context) error {
	if len(t.cfg.Lab.Tuning) == 0 {
		return nil
	}
	t.tuning = &tuningState{}
	sites := tuning.LabSites(t.lab)
	for i := range sites {
		sites[i].CPUs = t.nodeCPUs(sites[i].Name)
	}
	for _, name := range t.cfg.Lab.Tuning {
		k, ok := tuning.Lookup(name)
		if !ok {
			return fmt.Errorf("unknown tuning %q (known: %s)", name, strings.Join(tuning.Names(), ", "))
		}
		t.progress("tuning %s ...", name)
		c, undo := tuning.Run(ctx, k, sites)
		t.tuning.checks = append(t.tuning.checks, c)
		t.tuning.undos = append(t.tuning.undos, undo)
		if err := ctx.Err(); err != nil {
			t.progress(" interrupted\n")
			return err
		}
		t.progress(" %s\n", c.Status)
		if c.Status != tuning.Applied && t.tuning.skip == "" {
			t.tuning.skip = fmt.Sprintf("tuning %s %s: %s; nothing measured under it", name, c.Status, c.Detail)
			t.notes = append(t.notes, t.tuning.skip)
		}
	}
	return nil
}

// tuningUnsupported says why this scenario cannot measure placement:
// a tuning that did not apply, or notrack on a path whose Service
// translation needs conntrack (kube-proxy's NAT: the backend's replies
// would not be translated back).
func tuningUnsupported(t *Target, placement string) error {
	if t.tuning == nil {
		return nil
	}
	if t.tuning.skip != "" {
		return fmt.Errorf("%s: %w", t.tuning.skip, suite.ErrUnsupported)
	}
	_, service := testServices[placement]
	if v, ok := datapath.Lookup(t.lab.Config.ServiceDatapath); service && ok && v.Netfilter && hasTuning(t.cfg.Lab, "notrack") {
		return fmt.Errorf("notrack on %s: %s translates Services with conntrack's NAT, which untracked replies bypass: %w",
			placement, t.lab.Config.ServiceDatapath, suite.ErrUnsupported)
	}
	return nil
}

func hasTuning(c lab.Config, name string) bool {
	for _, n := range c.Tuning {
		if n == name {
			return true
		}
	}
	return false
}

// closeTuning puts back what the tunings changed, last applied first.
func (t *Target) closeTuning() error {
	if t.tuning == nil {
		return nil
	}
	var errs []string
	for i := len(t.tuning.undos) - 1; i >= 0; i-- {
		if err := t.tuning.undos[i](); err != nil {
			errs = append(errs, err.Error())
		}
	}
	t.tuning.undos = nil
	if len(errs) > 0 {
		return fmt.Errorf("undo tuning: %s", strings.Join(errs, "; "))
	}
	return nil
}

// podMTU is the pods' MTU an applied mtu-N tuning set (0 without one):
// the results' "mtu" is then what the kernel held while measuring, not
// what the lab was built with.
func (t *Target) podMTU() int {
	if t.tuning == nil {
		return 0
	}
	for _, c := range t.tuning.checks {
		if n, ok := strings.CutPrefix(c.Name, "mtu-"); ok && c.Status == tuning.Applied {
			v, _ := strconv.Atoi(n)
			return v - (lab.MTU - t.lab.MTU) // less what the overlay takes
		}
	}
	return 0
}

// tuningDetails is the results' record of the tunings (nil without).
func (t *Target) tuningDetails() []tuning.Check {
	if t.tuning == nil {
		return nil
	}
	return t.tuning.checks
}

// nodeCPUs are the CPUs the named node's work runs on (nodeCPUsAt); nil
// for a name that is no node.
func (t *Target) nodeCPUs(name string) []int {
	for i, n := range t.lab.Nodes {
		if n.Name == name {
			return t.nodeCPUsAt(i)
		}
	}
	return nil
}

// nodeCPUsAt are the CPUs node i's work runs on in this run, where its
// daemons and proxies are pinned and node-rps steers what it receives:
// node0 hosts the clients (client CPUs), the other nodes the servers
// (server CPUs). Nil when nothing is pinned.
func (t *Target) nodeCPUsAt(i int) []int {
	if i == 0 {
		return t.clientCPUs
	}
	return t.serverCPUs
}
