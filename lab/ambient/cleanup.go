package ambient

import (
	"path/filepath"

	"github.com/cnibench/cnibench/lab/haproxy"
)

// Cleanup removes what a mesh of prefix in stateDir left after a crash,
// with no live Mesh: the tagged rules (a waypoint's too) and routes in the namespaces the
// state file names and in every /run/netns/<prefix>*, the HAProxy
// processes whose command line names a config <stateDir>/<prefix>amb-*
// (found in /proc, so also without the state file), the proxies'
// cgroups and the files. Lab down deletes the namespaces and cgroups
// anyway; Cleanup is for a lab that stays up. Idempotent; needs root.
func Cleanup(stateDir, prefix string) error {
	m := &Mesh{Opts: Options{Prefix: prefix, StateDir: stateDir}}
	return m.owner().Cleanup(func() error {
		if m.Opts.CgroupParent == "" {
			return nil
		}
		return haproxy.RemoveCgroup(filepath.Join(m.Opts.CgroupParent, "amb-"+waypointName))
	})
}
