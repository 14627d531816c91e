package nodeprobe

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kernelTree is a fake node: its release, the module directories under
// /sys/module, and golden files (testdata/kernel) as its /proc/config.gz,
// /boot/config-<release>, and the module tree's modules.dep and
// modules.builtin; "" leaves a file out.
type kernelTree struct {
	release                string
	sysModules             []string
	procConfig, bootConfig string
	dep, builtin           string
}

// make writes the tree and returns the paths a probe (no module tree or
// /boot) or a process on the node reads it by.
func (k kernelTree) make(t *testing.T, host bool) KernelPaths {
	t.Helper()
	root := t.TempDir()
	write := func(rel string, b []byte) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "kernel", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if k.release != "" {
		write("proc/sys/kernel/osrelease", []byte(k.release+"\n"))
	}
	for _, m := range k.sysModules {
		if err := os.MkdirAll(filepath.Join(root, "sys/module", m), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if k.procConfig != "" {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		_, _ = zw.Write(golden(k.procConfig))
		_ = zw.Close()
		write("proc/config.gz", gz.Bytes())
	}
	if k.bootConfig != "" {
		write("boot/config-"+k.release, golden(k.bootConfig))
	}
	if k.dep != "" {
		write("lib/modules/"+k.release+"/modules.dep", golden(k.dep))
	}
	if k.builtin != "" {
		write("lib/modules/"+k.release+"/modules.builtin", golden(k.builtin))
	}
	p := KernelPaths{Root: root}
	if host {
		p.Modules, p.Boot = filepath.Join(root, "lib/modules"), filepath.Join(root, "boot")
	}
	return p
}

// What a node's kernel offers WireGuard and IPsec, from what a probe pod
// (its node's /sys and /proc only) or a process on the node (module tree
// and /boot too) can read: the strongest evidence decides, and where none
// tells the answer is unknown, never a guess.
func TestReadKernelEncryption(t *testing.T) {
	const fc, deb = "6.18.44-fc-v669", "6.1.0-28-amd64"
	for _, c := range []struct {
		name      string
		tree      kernelTree
		host      bool
		wg, ipsec string // support: detail prefix
	}{
		// The test cluster's nodes: a kernel without module support whose
		// config says no WireGuard, no ESP; a probe and the host agree.
		{"test machine, probe", kernelTree{release: fc, sysModules: []string{"vxlan", "bridge"}, procConfig: "config-6.18.44-fc-v669"}, false,
			"unsupported: CONFIG_WIREGUARD is not set (/proc/config.gz)", "unsupported: CONFIG_INET_ESP is not set (/proc/config.gz)"},
		{"test machine, host", kernelTree{release: fc, sysModules: []string{"vxlan"}, procConfig: "config-6.18.44-fc-v669"}, true,
			"unsupported: CONFIG_WIREGUARD is not set", "unsupported: CONFIG_INET_ESP is not set"},
		// A distribution kernel, modules not loaded, seen by a probe: no
		// /proc/config.gz, no module tree: it cannot tell.
		{"distribution kernel, probe", kernelTree{release: deb, bootConfig: "config-6.1.0-debian", dep: "modules.dep-uncompressed", builtin: "modules.builtin-minimal"}, false,
			"unknown: no /sys/module/wireguard; not readable: the kernel's config (/proc/config.gz: not found), the node's /lib/modules (not mounted in the probe)",
			"unknown: no /sys/module/esp4; not readable:"},
		// The same seen from the node: its /boot config and module tree.
		{"distribution kernel, host", kernelTree{release: deb, bootConfig: "config-6.1.0-debian", dep: "modules.dep-uncompressed", builtin: "modules.builtin-minimal"}, true,
			"available: CONFIG_WIREGUARD=m, module wireguard installed (", "available: CONFIG_INET_ESP=m, module esp4 installed ("},
		// Loaded (Cilium's WireGuard mode on): /sys/module tells a probe.
		{"loaded modules, probe", kernelTree{release: deb, sysModules: []string{"wireguard", "esp4", "xfrm_user"}}, false,
			"available: module wireguard loaded or built in (/sys/module/wireguard)", "available: module esp4 loaded or built in (/sys/module/esp4); module xfrm_user loaded"},
		// Loaded WireGuard, ESP not: IPsec stays unknown to a probe.
		{"wireguard loaded, esp not, probe", kernelTree{release: deb, sysModules: []string{"wireguard"}}, false,
			"available: module wireguard", "unknown: no /sys/module/esp4"},
		{"zstd modules, host", kernelTree{release: "6.8.0-49-generic", dep: "modules.dep-zstd", builtin: "modules.builtin-minimal"}, true,
			"available: module wireguard installed (", "available: module esp4 installed ("},
		{"built in, host", kernelTree{release: deb, dep: "modules.dep-no-encryption", builtin: "modules.builtin-encryption"}, true,
			"available: module wireguard built in (", "available: module esp4 built in ("},
		{"no module anywhere, host", kernelTree{release: deb, dep: "modules.dep-no-encryption", builtin: "modules.builtin-minimal"}, true,
			"unsupported: no wireguard module loaded, built in or installed (/sys/module, ", "unsupported: no esp4 module loaded, built in or installed"},
		// A module the config builds but the node lacks (a modules-extra
		// package not installed).
		{"config m, module not installed, host", kernelTree{release: deb, bootConfig: "config-6.1.0-debian", dep: "modules.dep-no-encryption", builtin: "modules.builtin-minimal"}, true,
			"unsupported: CONFIG_WIREGUARD=m (", "unsupported: CONFIG_INET_ESP=m ("},
		// The config alone: a module, but whether installed is not read.
		{"config m, no module tree", kernelTree{release: deb, procConfig: "config-6.1.0-debian"}, false,
			"unknown: CONFIG_WIREGUARD=m (/proc/config.gz): a module, not loaded; whether it is installed was not read: the node's /lib/modules (not mounted in the probe)",
			"unknown: CONFIG_INET_ESP=m"},
		// Before in-tree WireGuard: the symbol does not exist, an
		// out-of-tree module may.
		{"old kernel, dkms wireguard, host", kernelTree{release: "5.4.0-1", bootConfig: "config-5.4-no-wireguard-symbol", dep: "modules.dep-dkms-wireguard", builtin: "modules.builtin-minimal"}, true,
			"available: module wireguard installed (", "available: CONFIG_INET_ESP=m, module esp4 installed ("},
		{"old kernel, probe", kernelTree{release: "5.4.0-1", procConfig: "config-5.4-no-wireguard-symbol"}, false,
			"unknown: no /sys/module/wireguard; not readable: the node's /lib/modules (not mounted in the probe)", "unknown: CONFIG_INET_ESP=m"},
		// Nothing readable at all.
		{"nothing", kernelTree{}, true, "unknown: no /sys/module/wireguard; not readable: the kernel's config (/proc/config.gz: not found), the module tree (the kernel release was not read)", "unknown:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := ReadKernelEncryption(c.tree.make(t, c.host))
			if got.Release != c.tree.release {
				t.Errorf("release %q, want %q", got.Release, c.tree.release)
			}
			for _, f := range []struct {
				name string
				got  KernelSupport
				want string
			}{{"WireGuard", got.WireGuard, c.wg}, {"IPsec", got.IPsec, c.ipsec}} {
				if s := f.got.Support + ": " + f.got.Detail; !strings.HasPrefix(s, f.want) || strings.Contains(s, "\n") {
					t.Errorf("%s: %q, want %q…", f.name, s, f.want)
				}
			}
		})
	}
}

// Config lines as the kernel writes them; module lists of either file,
// compressed or not, named as the kernel names modules.
func TestParseKernelFiles(t *testing.T) {
	cfg := ParseKernelConfig([]byte("#\n# CONFIG_WIREGUARD is not set\nCONFIG_XFRM_USER=y\nCONFIG_INET_ESP=m\nCONFIG_CC_VERSION_TEXT=\"gcc (GCC) 15.3.0\"\n# CONFIG_X is set\n"))
	for sym, want := range map[string]string{"CONFIG_WIREGUARD": "n", "CONFIG_XFRM_USER": "y", "CONFIG_INET_ESP": "m", "CONFIG_CC_VERSION_TEXT": `"gcc (GCC) 15.3.0"`, "CONFIG_X": ""} {
		if cfg[sym] != want {
			t.Errorf("%s = %q, want %q", sym, cfg[sym], want)
		}
	}
	mods := ParseModuleList([]byte("kernel/drivers/net/wireguard/wireguard.ko.zst: kernel/net/ipv4/udp_tunnel.ko.zst\nkernel/net/xfrm/xfrm_user.ko\nkernel/drivers/hid/hid-generic.ko.xz:\nkernel/x/not.kofoo\n\n"))
	for _, m := range []string{"wireguard", "xfrm_user", "hid_generic"} {
		if !mods[m] {
			t.Errorf("%s not read: %v", m, mods)
		}
	}
	if mods["udp_tunnel"] || mods["not"] || len(mods) != 3 {
		t.Errorf("a dependency or a non-module read as a module: %v", mods)
	}
}
