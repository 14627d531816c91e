package l7proxy

// Cleanup removes what a deployment of prefix in stateDir left after a
// crash, with no live Deployment: it deletes the tagged nat rules in the
// namespaces the state file names and in every /run/netns/<prefix>*
// (and the nat tables and chains the state file says were created for
// them; without it those stay, as they cannot be told from others'),
// kills the HAProxy processes whose command line names a config
// <stateDir>/<prefix>l7-*.cfg (found by scanning /proc, so even without
// the state file), removes the proxies' cgroups and the files. Lab down
// kills processes in the lab's namespaces and cgroups and deletes them
// anyway; Cleanup is for a lab that stays up. Idempotent; needs root.
func Cleanup(stateDir, prefix string) error {
	d := &Deployment{Opts: Options{Prefix: prefix, StateDir: stateDir}}
	return d.owner().Cleanup(nil)
}
