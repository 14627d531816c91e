package labtarget

import (
	"context"
	"slices"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
	"github.com/cnibench/cnibench/targets/labtarget/part"
)

// openParts opens the scenario's parts, with those the lab's config
// implies (its encryption, its test Services), in their declared phases:
// the agents read their sysctls after the tuning phase (cc-* shows
// there). A part that fails closes the ones opened before it.
func (t *Target) openParts(ctx context.Context) error {
	parts := append(slices.Clone(t.cfg.Parts), part.Implied(t.lab.Config, t.cfg.Parts)...)
	if t.lab.Config.ServiceDatapath != "" {
		parts = append(parts, servicesPart{t})
	}
	early, late := part.Until(part.Ordered(parts), part.Tuning)
	if err := t.stack.Open(ctx, t, early); err != nil {
		return err
	}
	t.readSysctls(ctx)
	return t.stack.Open(ctx, t, late)
}

// StartUsage implements suite.UsageSampler: with parts that meter (L7
// proxies, flow consumers, WireGuard daemons), their CPU and counters
// are the lab's datapath usage; without, nothing is read.
func (t *Target) StartUsage(ctx context.Context) (suite.UsageMark, error) {
	return t.stack.StartUsage(ctx)
}

// EndUsage implements suite.UsageSampler: the parts' usage since mark.
func (t *Target) EndUsage(ctx context.Context, mark suite.UsageMark) (*results.DatapathUsage, error) {
	return t.stack.EndUsage(ctx, mark, results.UsageSourceLab)
}
