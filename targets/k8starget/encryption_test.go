package k8starget

import (
	"strings"
	"testing"
)

// The CNI's encryption mode is read from where each CNI keeps it, and
// "unknown" says where it was not looked for.
func TestCNIEncryption(t *testing.T) {
	calico := func(env map[string]string) *CNI {
		return &CNI{Plugin: "calico", Components: []Component{{Plugin: "calico", Env: env}}}
	}
	for _, c := range []struct {
		cni  *CNI
		want string
	}{
		{&CNI{Plugin: "cilium", Cilium: &CiliumConfig{Keys: map[string]string{"enable-wireguard": "true"}}}, "wireguard (cilium enable-wireguard=true)"},
		{&CNI{Plugin: "cilium", Cilium: &CiliumConfig{Keys: map[string]string{"enable-ipsec": "True"}}}, "ipsec (cilium"},
		{&CNI{Plugin: "cilium", Cilium: &CiliumConfig{Keys: map[string]string{}}}, `none (cilium enable-wireguard=""`},
		{calico(map[string]string{"FELIX_WIREGUARDENABLED": "true"}), "wireguard (calico"},
		{calico(map[string]string{"FELIX_WIREGUARDENABLED": "false"}), "none (calico"},
		{calico(nil), "unknown (calico: not in the agent's env"},
		{&CNI{Plugin: "flannel", FlannelBackend: "wireguard"}, "wireguard (flannel backend)"},
		{&CNI{Plugin: "flannel", FlannelBackend: "vxlan"}, "none (flannel backend vxlan)"},
		{&CNI{Plugin: "unknown"}, "unknown (unknown:"},
	} {
		if got := c.cni.encryption(); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want %q…", c.cni.Plugin, got, c.want)
		}
	}
}
