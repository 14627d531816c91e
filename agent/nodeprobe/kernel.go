package nodeprobe

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// What a node's kernel says of a feature.
const (
	KernelAvailable   = "available"
	KernelUnsupported = "unsupported"
	KernelUnknown     = "unknown" // the files that would tell were not readable
)

// KernelSupport is whether a node's kernel can do one kind of encryption
// between nodes, and the evidence, one line.
type KernelSupport struct {
	Support string `json:"support"` // KernelAvailable, KernelUnsupported or KernelUnknown
	Detail  string `json:"detail"`
}

// KernelEncryption is what a node's kernel offers the encryption CNIs
// put between nodes: WireGuard devices (Cilium's, Calico's, Flannel's
// WireGuard modes) and IPsec, ESP through XFRM (Cilium's IPsec mode,
// Flannel's ipsec backend).
type KernelEncryption struct {
	Release   string        `json:"release,omitempty"`
	WireGuard KernelSupport `json:"wireguard"`
	IPsec     KernelSupport `json:"ipsec"`
}

// KernelPaths say where the kernel's facts are read. A node probe pod
// sees its node's kernel in its own /sys/module (sysfs) and
// /proc/config.gz, /proc/sys/kernel/osrelease (procfs): they are the
// kernel's, whatever the mount namespace. It mounts neither the node's
// /lib/modules nor its /boot (a hostPath the node lacks would be created
// on it by the runtime), so those are read only where given: by a
// process that runs on the node itself.
type KernelPaths struct {
	// Root prefixes /sys/module and /proc; "" is "/". Tests point it at
	// a fake tree.
	Root string
	// Modules is the node's module tree (/lib/modules), "" when not
	// visible.
	Modules string
	// Boot is the node's /boot (config-<release>), "" when not visible.
	Boot string
}

// HostKernelPaths are the paths of the kernel the process runs on, for
// a process on the node itself, module tree and /boot included.
var HostKernelPaths = KernelPaths{Root: "/", Modules: "/lib/modules", Boot: "/boot"}

// ProbeKernelPaths are what a node probe pod reads: its node's /sys and
// /proc only.
var ProbeKernelPaths = KernelPaths{Root: "/"}

// kmod is a kernel part an encryption needs: its module name and the
// config symbol that builds it.
type kmod struct{ module, config string }

var (
	wireguardNeeds = []kmod{{"wireguard", "CONFIG_WIREGUARD"}}
	// Cilium's IPsec mode programs XFRM states and policies over netlink
	// (xfrm_user) for ESP (esp4).
	ipsecNeeds = []kmod{{"esp4", "CONFIG_INET_ESP"}, {"xfrm_user", "CONFIG_XFRM_USER"}}
)

// ReadKernelEncryption reads, without changing anything on the node
// (creating a WireGuard link would make the kernel load an installed
// module), whether its kernel has WireGuard and IPsec ESP: a module
// loaded or built in (/sys/module), the kernel's own config
// (/proc/config.gz, or /boot/config-<release>), the module tree's
// modules.builtin and modules.dep. Where none of them tells, the answer
// is KernelUnknown, never a guess.
func ReadKernelEncryption(p KernelPaths) *KernelEncryption {
	k := readKernelFacts(p)
	return &KernelEncryption{Release: k.release, WireGuard: k.support(wireguardNeeds), IPsec: k.support(ipsecNeeds)}
}

// kernelFacts is what was read of one kernel.
type kernelFacts struct {
	release string
	// sysModule says whether /sys/module/<name> exists: a loaded module,
	// or a built-in one with parameters or a version.
	sysModule func(name string) bool
	// config is the kernel's config, symbol → y, m or n ("is not set");
	// nil when not read. configFrom names the file.
	config     map[string]string
	configFrom string
	// builtin and installed are the module names of modules.builtin and
	// modules.dep; nil when not read. modulesFrom names the directory.
	builtin, installed map[string]bool
	modulesFrom        string
	// notRead says which sources were not readable, for an unknown.
	notRead []string
}

func readKernelFacts(p KernelPaths) *kernelFacts {
	root := p.Root
	if root == "" {
		root = "/"
	}
	k := &kernelFacts{sysModule: func(name string) bool {
		_, err := os.Stat(filepath.Join(root, "sys", "module", name))
		return err == nil
	}}
	if b, err := os.ReadFile(filepath.Join(root, "proc", "sys", "kernel", "osrelease")); err == nil {
		k.release = strings.TrimSpace(string(b))
	}
	k.readConfig(root, p.Boot)
	k.readModules(p.Modules)
	return k
}

// readConfig reads the kernel's config from /proc/config.gz
// (CONFIG_IKCONFIG_PROC), else /boot/config-<release> where /boot is
// visible.
func (k *kernelFacts) readConfig(root, boot string) {
	gz := filepath.Join(root, "proc", "config.gz")
	cfg, err := readGzipConfig(gz)
	if err == nil {
		k.config, k.configFrom = cfg, "/proc/config.gz"
		return
	}
	why := "/proc/config.gz: " + errText(err)
	if boot != "" && k.release != "" {
		f := filepath.Join(boot, "config-"+k.release)
		b, err := os.ReadFile(f)
		if err == nil {
			k.config, k.configFrom = ParseKernelConfig(b), f
			return
		}
		why += ", " + f + ": " + errText(err)
	}
	k.notRead = append(k.notRead, "the kernel's config ("+why+")")
}

func readGzipConfig(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	return ParseKernelConfig(b), nil
}

// readModules reads modules.builtin and modules.dep of the running
// kernel's module tree.
func (k *kernelFacts) readModules(modules string) {
	if modules == "" {
		k.notRead = append(k.notRead, "the node's /lib/modules (not mounted in the probe)")
		return
	}
	if k.release == "" {
		k.notRead = append(k.notRead, "the module tree (the kernel release was not read)")
		return
	}
	dir := filepath.Join(modules, k.release)
	builtin, err1 := os.ReadFile(filepath.Join(dir, "modules.builtin"))
	dep, err2 := os.ReadFile(filepath.Join(dir, "modules.dep"))
	if err1 != nil || err2 != nil {
		k.notRead = append(k.notRead, "the module tree ("+errText(errors.Join(err1, err2))+")")
		return
	}
	k.builtin, k.installed, k.modulesFrom = ParseModuleList(builtin), ParseModuleList(dep), dir
}

// support decides one encryption from the parts it needs: available when
// every part is, unsupported when one part is (the first such part's
// evidence), unknown otherwise.
func (k *kernelFacts) support(needs []kmod) KernelSupport {
	var avail, unknown []string
	for _, m := range needs {
		s := k.module(m)
		switch s.Support {
		case KernelUnsupported:
			return s
		case KernelAvailable:
			avail = append(avail, s.Detail)
		default:
			unknown = append(unknown, s.Detail)
		}
	}
	if len(unknown) > 0 {
		return KernelSupport{KernelUnknown, strings.Join(unknown, "; ")}
	}
	return KernelSupport{KernelAvailable, strings.Join(avail, "; ")}
}

// module decides one part, from the strongest evidence read.
func (k *kernelFacts) module(m kmod) KernelSupport {
	if k.sysModule(m.module) {
		return KernelSupport{KernelAvailable, fmt.Sprintf("module %s loaded or built in (/sys/module/%s)", m.module, m.module)}
	}
	switch k.config[m.config] {
	case "y":
		return KernelSupport{KernelAvailable, fmt.Sprintf("%s=y, built in (%s)", m.config, k.configFrom)}
	case "n":
		// On a kernel new enough to know the symbol, an out-of-tree
		// module (wireguard-dkms) is refused by the symbol's own tree.
		return KernelSupport{KernelUnsupported, fmt.Sprintf("%s is not set (%s)", m.config, k.configFrom)}
	case "m":
		switch {
		case k.installed == nil:
			return KernelSupport{KernelUnknown, fmt.Sprintf("%s=m (%s): a module, not loaded; whether it is installed was not read: %s", m.config, k.configFrom, strings.Join(k.notRead, ", "))}
		case k.installed[m.module]:
			return KernelSupport{KernelAvailable, fmt.Sprintf("%s=m, module %s installed (%s/modules.dep), loaded on first use", m.config, m.module, k.modulesFrom)}
		}
		return KernelSupport{KernelUnsupported, fmt.Sprintf("%s=m (%s) but no %s module installed (%s/modules.dep)", m.config, k.configFrom, m.module, k.modulesFrom)}
	}
	// Not in the config (not read, or a kernel older than the symbol):
	// the module tree decides.
	switch {
	case k.builtin == nil:
		return KernelSupport{KernelUnknown, fmt.Sprintf("no /sys/module/%s; not readable: %s", m.module, strings.Join(k.notRead, ", "))}
	case k.builtin[m.module]:
		return KernelSupport{KernelAvailable, fmt.Sprintf("module %s built in (%s/modules.builtin)", m.module, k.modulesFrom)}
	case k.installed[m.module]:
		return KernelSupport{KernelAvailable, fmt.Sprintf("module %s installed (%s/modules.dep), loaded on first use", m.module, k.modulesFrom)}
	}
	return KernelSupport{KernelUnsupported, fmt.Sprintf("no %s module loaded, built in or installed (/sys/module, %s/modules.builtin, modules.dep)", m.module, k.modulesFrom)}
}

// ParseKernelConfig reads a kernel config (.config, /proc/config.gz
// unpacked): symbol → y, m, the value, or n for "# CONFIG_X is not set".
func ParseKernelConfig(b []byte) map[string]string {
	cfg := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if sym, ok := strings.CutPrefix(line, "# "); ok {
			if sym, ok := strings.CutSuffix(sym, " is not set"); ok && strings.HasPrefix(sym, "CONFIG_") {
				cfg[sym] = "n"
			}
			continue
		}
		if sym, v, ok := strings.Cut(line, "="); ok && strings.HasPrefix(sym, "CONFIG_") {
			cfg[sym] = v
		}
	}
	return cfg
}

// ParseModuleList reads modules.builtin ("kernel/net/ipv4/esp4.ko") or
// modules.dep ("kernel/drivers/net/wireguard/wireguard.ko.zst: deps…"):
// the module names, as the kernel names them (dashes are underscores).
func ParseModuleList(b []byte) map[string]bool {
	mods := map[string]bool{}
	for line := range strings.SplitSeq(string(b), "\n") {
		path, _, _ := strings.Cut(strings.TrimSpace(line), ":")
		name := filepath.Base(path)
		i := strings.Index(name, ".ko")
		if i <= 0 || (len(name) > i+3 && name[i+3] != '.') {
			continue
		}
		mods[strings.ReplaceAll(name[:i], "-", "_")] = true
	}
	return mods
}

// errText is err on one line, "not found" for a missing file.
func errText(err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return "not found"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return oneLineText(err.Error())
}
