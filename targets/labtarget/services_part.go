package labtarget

import (
	"context"

	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/targets/labtarget/part"
)

// servicesPart programs the lab's test Services: not a part a scenario
// names (the Service datapath part, or --service-datapath, chooses the
// datapath the lab keeps), but opened in its phase among the parts, after
// the encryption and before the policy and proxies in front of them.
type servicesPart struct{ t *Target }

func (servicesPart) Name() string                  { return "services" }
func (servicesPart) Token() string                 { return "" }
func (servicesPart) Phase() part.Phase             { return part.Services }
func (servicesPart) Configure(*lab.Config)         {}
func (servicesPart) Conflicts(part.Scenario) error { return nil }

// Open programs and reads back the test Services (services.go).
func (p servicesPart) Open(ctx context.Context, _ part.Env) (part.Opened, error) {
	err := p.t.openServices(ctx)
	return servicesOpened(p), err
}

type servicesOpened struct{ t *Target }

func (servicesOpened) Checks() []results.Check { return nil }

// Close closes the datapath's handles; the test Services go with them.
func (o servicesOpened) Close() error {
	o.t.closeServices()
	return nil
}
