package lab

import (
	"fmt"
	"os"
)

func (l *Lab) makeCgroups() error {
	if err := os.Mkdir(l.CgroupRoot, 0o755); err != nil {
		return fmt.Errorf("create cgroup: %w", err)
	}
	for _, ep := range l.Endpoints() {
		if err := os.Mkdir(ep.Cgroup, 0o755); err != nil {
			return fmt.Errorf("create cgroup: %w", err)
		}
	}
	return nil
}
