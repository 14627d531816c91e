package k8starget

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cnibench/cnibench/suite"
)

// SampleCount says how many samples of plan will run and how many are
// skipped, and why (a placement the cluster cannot host, a test the
// target cannot run), for the run's header: the skipped ones cost no
// time and must not be counted as if they did.
func (t *Target) SampleCount(plan *suite.Plan) string {
	run, skipped := 0, 0
	seen := map[string]bool{}
	var reasons []string
	for _, spec := range plan.Specs {
		for _, pl := range plan.Placements {
			var err error
			what := pl
			// The last pair's placement: host-to-host has one pair only.
			if _, err = t.placement(pl, max(1, t.cfg.Pairs)-1); !errors.Is(err, suite.ErrUnsupported) {
				err, what = t.CheckTest(spec), spec.Name
			}
			if err == nil {
				run += plan.Rounds
				continue
			}
			skipped += plan.Rounds
			if why := what + ": " + strings.TrimPrefix(err.Error(), suite.ErrUnsupported.Error()+": "); !seen[why] {
				seen[why] = true
				reasons = append(reasons, why)
			}
		}
	}
	s := fmt.Sprintf("%d samples, about %s of measurement", run, (time.Duration(run) * time.Duration(plan.Duration+plan.Warmup)).Round(time.Second))
	if skipped > 0 {
		s += fmt.Sprintf("; %d skipped (%s)", skipped, strings.Join(reasons, "; "))
	}
	return s
}
