package policy

import (
	"errors"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// Check refuses a Site an enforcer must not open (the error is for the
// enforcer to prefix with its name): no namespace, the
// host's own network namespace (an enforcer would drop the machine's
// forwarded traffic), or no object prefix (Close could not tell ours).
func (s Site) Check() error {
	if s.Netns != "" && s.Prefix == "" {
		return errors.New("no object prefix given")
	}
	return netnsx.CheckNotHost(s.Netns)
}
