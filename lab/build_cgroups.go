package lab

import (
	"fmt"
	"os"
)

// makeCgroups creates the lab's cgroup v2 dir and one cgroup per node and
// pod below it, for Start to put processes in.
func (l *Lab) makeCgroups() error {
	if err := os.Mkdir(l.CgroupRoot, 0o755); err != nil {
		return fmt.Errorf("create cgroup: %w", err)
	}
	for _, ep := range l.Endpoints() {
		if err := os.Mkdir(ep.Cgroup, 0o755); err != nil {
			return fmt.Errorf("create cgroup: %w", err)
		}
	}
	for _, n := range l.Nodes {
		if n.WireGuard != nil && n.WireGuard.Cgroup != "" {
			if err := os.Mkdir(n.WireGuard.Cgroup, 0o755); err != nil {
				return fmt.Errorf("create cgroup: %w", err)
			}
		}
	}
	return nil
}
