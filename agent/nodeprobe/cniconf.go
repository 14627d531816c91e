package nodeprobe

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/containernetworking/cni/libcni"
)

// DefaultCNIConfDir is where container runtimes (containerd, CRI-O) read
// the CNI config unless configured otherwise; a node probe pod mounts the
// node's, read-only, at the same path.
const DefaultCNIConfDir = "/etc/cni/net.d"

// cniExtensions are the config files a runtime considers (libcni.ConfFiles
// as containerd's go-cni calls it).
var cniExtensions = []string{".conf", ".conflist", ".json"}

// CNIConfig is the CNI network a node's container runtime sets pods up
// with: what names the CNI when no DaemonSet of a known one runs (the
// bridge or ptp plugins configured by the node image, a managed cluster's
// own).
type CNIConfig struct {
	Dir string `json:"dir"`
	// Files are every config file in Dir, by name: the runtime's order.
	Files []string `json:"files,omitempty"`
	// File is the one the runtime loads: the first by name (containerd
	// loads only it, and fails rather than skip it when it is broken).
	File       string `json:"file,omitempty"`
	Network    string `json:"network,omitempty"` // its "name"
	CNIVersion string `json:"cni_version,omitempty"`
	// Plugins are the types of its plugin chain, in order: the first sets
	// up the pod's interface, the others are chained onto it (portmap,
	// bandwidth, tuning, …).
	Plugins []string `json:"plugins,omitempty"`
	// Error says why no network was read: no config file, or File is not
	// a CNI config.
	Error string `json:"error,omitempty"`
}

// ParseCNIConfig reads one config file's content as libcni (and so the
// runtime) does: a .conflist is a network with a plugin chain, a .conf or
// .json a single plugin. Plugin files in a directory beside it (CNI 1.1's
// <dir>/<network>/*.conf) are not read. The error is one line naming the
// file.
func ParseCNIConfig(name string, data []byte) (*CNIConfig, error) {
	c := &CNIConfig{File: name}
	if strings.HasSuffix(name, ".conflist") {
		list, err := libcni.ConfListFromBytes(data)
		if err != nil {
			return nil, fmt.Errorf("%s: not a CNI config list: %s", name, oneLineText(err.Error()))
		}
		if len(list.Plugins) == 0 {
			return nil, fmt.Errorf("%s: CNI config list %q has no plugins", name, list.Name)
		}
		c.Network, c.CNIVersion = list.Name, list.CNIVersion
		for _, p := range list.Plugins {
			c.Plugins = append(c.Plugins, p.Network.Type)
		}
		return c, nil
	}
	conf, err := libcni.NetworkPluginConfFromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("%s: not a CNI config: %s", name, oneLineText(err.Error()))
	}
	c.Network, c.CNIVersion, c.Plugins = conf.Network.Name, conf.Network.CNIVersion, []string{conf.Network.Type}
	return c, nil
}

// ReadCNIConfig reads the network the runtime loads from dir ("" is
// DefaultCNIConfDir). It never fails: what could not be read is the
// result's Error.
func ReadCNIConfig(dir string) *CNIConfig {
	if dir == "" {
		dir = DefaultCNIConfDir
	}
	c := &CNIConfig{Dir: dir}
	paths, err := libcni.ConfFiles(dir, cniExtensions)
	if err != nil {
		c.Error = fmt.Sprintf("read %s: %v", dir, err)
		return c
	}
	for _, p := range paths {
		c.Files = append(c.Files, filepath.Base(p))
	}
	sort.Strings(c.Files)
	if len(c.Files) == 0 {
		c.Error = fmt.Sprintf("no CNI config file (%s) in %s", strings.Join(cniExtensions, ", "), dir)
		return c
	}
	c.File = c.Files[0]
	data, err := os.ReadFile(filepath.Join(dir, c.File))
	if err != nil {
		c.Error = fmt.Sprintf("read %s: %v", c.File, errors.Unwrap(err))
		return c
	}
	parsed, err := ParseCNIConfig(c.File, data)
	if err != nil {
		c.Error = err.Error()
		return c
	}
	parsed.Dir, parsed.Files = c.Dir, c.Files
	return parsed
}

func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }
