package nodeprobe

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Config files as CNIs ship them (testdata/cni): the network, its version
// and the plugin chain in order; a half-written file is one error naming it.
func TestParseCNIConfig(t *testing.T) {
	cases := []struct {
		file, network, version string
		plugins                []string
	}{
		// scripts/cluster/net.sh cni_conf for cnbk-node0: the test cluster's default mode.
		{"10-cnbk.conflist", "cnbk-pods", "1.0.0", []string{"bridge"}},
		{"05-cilium.conflist", "cilium", "0.3.1", []string{"cilium-cni"}},
		{"10-flannel.conflist", "cbr0", "0.3.1", []string{"flannel", "portmap"}},
		{"10-calico.conflist", "k8s-pod-network", "0.3.1", []string{"calico", "bandwidth", "portmap"}},
		{"10-containerd-net.conflist", "containerd-net", "1.0.0", []string{"bridge", "portmap"}},
		{"10-ptp.conf", "kubenet-ptp", "0.4.0", []string{"ptp"}},
	}
	for _, c := range cases {
		data, err := os.ReadFile(filepath.Join("testdata", "cni", c.file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseCNIConfig(c.file, data)
		if err != nil {
			t.Errorf("%s: %v", c.file, err)
			continue
		}
		if got.File != c.file || got.Network != c.network || got.CNIVersion != c.version || !slices.Equal(got.Plugins, c.plugins) {
			t.Errorf("%s: %+v, want network %s, version %s, plugins %v", c.file, got, c.network, c.version, c.plugins)
		}
	}
	bad := map[string]struct {
		data string
		want string
	}{
		"10-broken.conflist": {cniFile(t, "10-broken.conflist"), "10-broken.conflist: not a CNI config list: error parsing configuration list: unexpected end of JSON input"},
		// A conflist saved as .conf: the runtime finds no plugin type in it.
		"10-list.conf":       {cniFile(t, "10-cnbk.conflist"), "10-list.conf: not a CNI config: error parsing configuration: missing 'type'"},
		"10-empty.conflist":  {`{"cniVersion":"1.0.0","name":"none","plugins":[]}`, "10-empty.conflist: not a CNI config list: error parsing configuration list: no plugins in list"},
		"10-noname.conflist": {`{"cniVersion":"1.0.0","plugins":[{"type":"bridge"}]}`, "10-noname.conflist: not a CNI config list: error parsing configuration list: no name"},
	}
	for name, c := range bad {
		got, err := ParseCNIConfig(name, []byte(c.data))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: %+v, %v; want the error %q", name, got, err, c.want)
		}
	}
}

func cniFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "cni", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The runtime's choice: the first config file by name, other files and
// directories ignored; a broken first file is the error (containerd does
// not fall back to the next); no file, or no directory, says so.
func TestReadCNIConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if c := ReadCNIConfig(dir); c.Error != "no CNI config file (.conf, .conflist, .json) in "+dir || c.File != "" {
		t.Errorf("empty dir: %+v", c)
	}
	write("10-cnbk.conflist", cniFile(t, "10-cnbk.conflist"))
	write("cilium-cni.log", "not a config")
	write("00-old.conflist.bak", "{")
	if err := os.Mkdir(filepath.Join(dir, "00-multus.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := ReadCNIConfig(dir)
	if c.Error != "" || c.Dir != dir || c.File != "10-cnbk.conflist" || !slices.Equal(c.Files, []string{"10-cnbk.conflist"}) || !slices.Equal(c.Plugins, []string{"bridge"}) {
		t.Errorf("one bridge conflist: %+v", c)
	}
	write("05-cilium.conflist", cniFile(t, "05-cilium.conflist"))
	c = ReadCNIConfig(dir)
	if c.File != "05-cilium.conflist" || !slices.Equal(c.Plugins, []string{"cilium-cni"}) || !slices.Equal(c.Files, []string{"05-cilium.conflist", "10-cnbk.conflist"}) {
		t.Errorf("cilium written beside the bridge: %+v, want the first by name", c)
	}
	write("01-broken.conflist", cniFile(t, "10-broken.conflist"))
	c = ReadCNIConfig(dir)
	if c.File != "01-broken.conflist" || len(c.Plugins) != 0 || !strings.HasPrefix(c.Error, "01-broken.conflist: not a CNI config list: ") || strings.Contains(c.Error, "\n") {
		t.Errorf("a broken first file: %+v, want its one-line error", c)
	}
	missing := filepath.Join(dir, "absent")
	if c := ReadCNIConfig(missing); !strings.Contains(c.Error, "no CNI config file") || !strings.Contains(c.Error, missing) {
		t.Errorf("no directory: %+v", c)
	}
}
