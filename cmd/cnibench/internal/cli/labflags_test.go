package cli

import (
	"testing"

	"github.com/spf13/pflag"
)

// A --sysctl spelled with slashes replaces the default of the same kernel
// sysctl instead of being applied beside it in map order (found by
// FuzzLabFlags).
func TestSysctlSpellingsOneKey(t *testing.T) {
	var lf labFlags
	fs := pflag.NewFlagSet("lab", pflag.ContinueOnError)
	lf.register(fs)
	if err := fs.Parse([]string{"--sysctl", "net/ipv4/tcp_tw_reuse=0", "--sysctl", "net.core.somaxconn=128", "--sysctl", "net/core/somaxconn=256"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := lf.config(fs, &globals{labName: "fz", stateDir: "/run/cnibench"})
	if err != nil {
		t.Fatal(err)
	}
	if _, dup := cfg.Sysctls["net.ipv4.tcp_tw_reuse"]; dup || cfg.Sysctls["net/ipv4/tcp_tw_reuse"] != "0" {
		t.Errorf("tcp_tw_reuse: %v, want only the user's net/ipv4/tcp_tw_reuse=0", cfg.Sysctls)
	}
	if _, dup := cfg.Sysctls["net.core.somaxconn"]; dup || cfg.Sysctls["net/core/somaxconn"] != "256" {
		t.Errorf("somaxconn: %v, want the last one given, 256", cfg.Sysctls)
	}
}
