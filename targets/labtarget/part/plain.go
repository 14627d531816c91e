package part

import (
	"context"

	"github.com/cnibench/cnibench/lab"
)

// Plain is a part with nothing to open: a choice the lab is built with
// (vxlan, a Service datapath) or a name a schedule reads (churn).
type Plain struct {
	PartName, PartToken string
	PartPhase           Phase
	// Config changes the lab config (nil: nothing); Conflict says why the
	// part cannot go with a finished scenario (nil: it always can).
	Config   func(c *lab.Config)
	Conflict func(self Part, s Scenario) error
}

func (p Plain) Name() string  { return p.PartName }
func (p Plain) Token() string { return p.PartToken }
func (p Plain) Phase() Phase  { return p.PartPhase }

// Configure implements Part.
func (p Plain) Configure(c *lab.Config) {
	if p.Config != nil {
		p.Config(c)
	}
}

// Conflicts implements Part.
func (p Plain) Conflicts(s Scenario) error {
	if p.Conflict != nil {
		return p.Conflict(p, s)
	}
	return nil
}

// Open implements Part: nothing to open.
func (Plain) Open(context.Context, Env) (Opened, error) { return nil, nil }

// Exact is a Def's Parse for one name: the part it returns, ok only for name.
func Exact(p Part) func(string) (Part, bool, error) {
	return func(n string) (Part, bool, error) { return p, n == p.Name(), nil }
}

// One registers a part of a single name.
func One(p Part) { Register(Def{Help: []string{p.Name()}, Parse: Exact(p)}) }
