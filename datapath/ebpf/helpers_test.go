package ebpf

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	cebpf "github.com/cilium/ebpf"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/hosttest"
	"github.com/cnibench/cnibench/lab"
)

// TestMain lets the test binary double as the traffic client that the
// balance tests start inside a pod's namespace and cgroup (see client_test.go).
func TestMain(m *testing.M) {
	if os.Getenv(clientEnv) != "" {
		os.Exit(runClient())
	}
	os.Exit(hosttest.RunMain(m)) // next to a noisy neighbour when CNIBENCH_NOISY_NEIGHBOUR=1
}

func needRoot(t *testing.T) {
	t.Helper()
	if err := lab.RequirePrivileges(); err != nil {
		t.Skipf("skipping: %v", err)
	}
}

// skipUnsupported skips the test when err says the kernel lacks a feature.
func skipUnsupported(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, ErrUnsupported) || errors.Is(err, cebpf.ErrNotSupported) {
		t.Skipf("skipping: %v", err)
	}
}

// cgroup2Mount is where the cgroup v2 hierarchy is mounted, "" if nowhere.
func cgroup2Mount() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, " - ")
		if i < 0 {
			continue
		}
		pre, post := strings.Fields(line[:i]), strings.Fields(line[i+3:])
		if len(post) > 0 && post[0] == "cgroup2" && len(pre) >= 5 && pre[3] == "/" {
			return pre[4]
		}
	}
	return ""
}

// testCgroup creates an empty cgroup cnb-c2-<random> removed at cleanup.
func testCgroup(t *testing.T) string {
	t.Helper()
	needRoot(t)
	m := cgroup2Mount()
	if m == "" {
		t.Skip("skipping: no cgroup v2 hierarchy")
	}
	dir := filepath.Join(m, fmt.Sprintf("cnb-c2-%06d", rand.IntN(1000000)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.Remove(dir); err != nil {
			t.Errorf("remove cgroup %s: %v", dir, err)
		}
	})
	return dir
}

// newSocketLB attaches a SocketLB to a fresh test cgroup, closed at cleanup.
func newSocketLB(t *testing.T, opts Options) *SocketLB {
	t.Helper()
	cg := testCgroup(t)
	s, err := NewSocketLB(cg, opts)
	skipUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// dummySpec returns n Services of e endpoints each, in Spec order
// default/svc-0 .. svc-(n-1): VIPs from the Service CIDR 198.18.128.0/17,
// endpoints from 198.19.240.0/20, which nothing in a lab routes.
func dummySpec(n, e int) datapath.Spec {
	spec := datapath.Spec{Services: make([]datapath.Service, n)}
	for i := range n {
		// 198.18.128.0/17 holds 32768 addresses; ports make the rest unique.
		vip := netip.AddrFrom4([4]byte{198, 18, 128 + byte(i>>8&0x7f), byte(i)})
		s := datapath.Service{
			Namespace: "default", Name: fmt.Sprintf("svc-%d", i), PortName: "http",
			VIP: vip, Port: uint16(80 + i>>15), Protocol: datapath.TCP,
			Endpoints: make([]datapath.Endpoint, e),
		}
		for j := range e {
			k := i*e + j
			s.Endpoints[j] = datapath.Endpoint{IP: netip.AddrFrom4([4]byte{198, 19, 240 + byte(k>>16&0xf), byte(k >> 8)}), Port: uint16(8000 + k&0xff)}
		}
		spec.Services[i] = s
	}
	return spec
}
