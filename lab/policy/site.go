package policy

import (
	"errors"
	"fmt"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// Check refuses a Site an enforcer must not open (the error is for the
// enforcer to prefix with its name): no namespace, the
// host's own network namespace (an enforcer would drop the machine's
// forwarded traffic), or no object prefix (Close could not tell ours).
func (s Site) Check() error {
	if s.Netns == "" {
		return errors.New("no network namespace given")
	}
	if s.Prefix == "" {
		return errors.New("no object prefix given")
	}
	id, err := netnsx.IDOf(s.Netns)
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", s.Netns, err)
	}
	for _, host := range []string{"/proc/1/ns/net", "/proc/self/ns/net"} {
		if h, err := netnsx.IDOf(host); err == nil && h == id {
			return fmt.Errorf("refusing to program the host's network namespace (%s)", s.Netns)
		}
	}
	return nil
}
