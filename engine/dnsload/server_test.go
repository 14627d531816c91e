package dnsload

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// freePort returns a loopback port free for both UDP and TCP (dnsmasq
// binds both).
func freePort(t *testing.T) int {
	t.Helper()
	for range 20 {
		u, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		port := u.LocalAddr().(*net.UDPAddr).Port
		tc, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		u.Close()
		if err == nil {
			tc.Close()
			return port
		}
	}
	t.Fatal("no free port on 127.0.0.1")
	return 0
}

// startServer runs dnsmasq on 127.0.0.1 on a free port until the test
// ends; it skips the test when dnsmasq is not installed.
func startServer(t *testing.T, spec ServerSpec) *Server {
	t.Helper()
	if spec.Listen == "" {
		spec.Listen = "127.0.0.1"
	}
	if spec.Port == 0 {
		spec.Port = freePort(t)
	}
	s, err := NewServer(spec)
	if errors.Is(err, ErrNotInstalled) {
		t.Skipf("%v: apt-get install %s", err, daemonPackage)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestServerAnswers(t *testing.T) {
	s := startServer(t, ServerSpec{Names: 50})
	ctx := context.Background()
	addr := s.Spec.AddrPort()
	for _, i := range []int{0, 7, 49} {
		a, err := Query(ctx, addr, s.Spec.Name(i), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if a.Rcode != "NOERROR" || len(a.A) != 1 || a.A[0] != s.Spec.Address(i) {
			t.Errorf("%s: %s %v, want NOERROR [%s]", s.Spec.Name(i), a.Rcode, a.A, s.Spec.Address(i))
		}
		if !ServiceRange.Contains(a.A[0]) {
			t.Errorf("%s outside %s", a.A[0], ServiceRange)
		}
	}
	// Unknown names in the zone: NXDOMAIN, never forwarded; outside the
	// zone: refused (there is no upstream).
	for name, want := range map[string]string{
		s.Spec.Name(50):            "NXDOMAIN",
		"nope.svc.cluster.local":   "NXDOMAIN",
		"example.com":              "REFUSED",
		"svc-0.default.svc.local.": "REFUSED",
	} {
		a, err := Query(ctx, addr, name, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if a.Rcode != want || len(a.A) != 0 {
			t.Errorf("%s: %s %v, want %s", name, a.Rcode, a.A, want)
		}
	}
	// Listening on 127.0.0.1 only: 127.0.0.2 (also loopback) is refused.
	other := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), addr.Port())
	if _, err := Query(ctx, other, s.Spec.Name(0), 300*time.Millisecond); err == nil {
		t.Errorf("server answers on %s too: it must listen on %s only", other, addr)
	}
	// No system files: the config is ours only.
	conf, err := os.ReadFile(s.conf)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"no-resolv", "no-hosts", "bind-interfaces", "listen-address=127.0.0.1", "cache-size=0"} {
		if !strings.Contains(string(conf), want+"\n") {
			t.Errorf("config lacks %q", want)
		}
	}
}

func TestServerStopLeavesNothing(t *testing.T) {
	s := startServer(t, ServerSpec{Names: 3})
	pid, dir := s.Pid(), s.Dir
	if pid <= 0 {
		t.Fatal("no pid")
	}
	if _, err := os.Stat(dir + "/dnsmasq.pid"); err != nil {
		t.Errorf("pid file not in the server's dir: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("dnsmasq pid %d still exists after Stop (kill 0: %v)", pid, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still exists after Stop", dir)
	}
	if _, err := Query(context.Background(), s.Spec.AddrPort(), s.Spec.Name(0), 200*time.Millisecond); err == nil {
		t.Error("still answering after Stop")
	}
	if err := s.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestServerStartHooks(t *testing.T) {
	port := freePort(t)
	s, err := NewServer(ServerSpec{Port: port, Names: 2})
	if errors.Is(err, ErrNotInstalled) {
		t.Skipf("%v: apt-get install %s", err, daemonPackage)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	var started []string
	probes := 0
	s.StartCmd = func(c *exec.Cmd) error {
		started = c.Args
		return c.Start()
	}
	s.ProbeIn = func(fn func() error) error { probes++; return fn() }
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if strings.Join(started, " ") != strings.Join(s.Argv(), " ") {
		t.Errorf("StartCmd got %q, want Argv %q", started, s.Argv())
	}
	if probes < 1 {
		t.Error("ProbeIn not used for the readiness probe")
	}
	if err := s.Start(context.Background()); err == nil {
		t.Error("second Start accepted")
	}
}

func TestServerStartFailures(t *testing.T) {
	// The port is taken: dnsmasq exits, and the error says why.
	u, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	s, err := NewServer(ServerSpec{Port: u.LocalAddr().(*net.UDPAddr).Port, Names: 2})
	if errors.Is(err, ErrNotInstalled) {
		t.Skipf("%v: apt-get install %s", err, daemonPackage)
	}
	if err != nil {
		t.Fatal(err)
	}
	err = s.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "exited during startup") || !strings.Contains(err.Error(), "in use") || strings.Contains(err.Error(), "\n") {
		t.Errorf("port in use: got %v, want a one-line 'exited during startup ... in use'", err)
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Errorf("failed Start left %s", s.Dir)
	}

	// StartCmd fails.
	s, err = NewServer(ServerSpec{Port: freePort(t), Names: 2})
	if err != nil {
		t.Fatal(err)
	}
	s.StartCmd = func(*exec.Cmd) error { return errors.New("no such endpoint") }
	if err := s.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "no such endpoint") {
		t.Errorf("StartCmd failure: got %v", err)
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Errorf("failed Start left %s", s.Dir)
	}

	// Something that is not a DNS server: the readiness wait times out.
	s, err = NewServer(ServerSpec{Port: freePort(t), Names: 2, Binary: "sleep", ReadyTimeout: ms(300)})
	if err != nil {
		t.Fatal(err)
	}
	s.StartCmd = func(c *exec.Cmd) error {
		c.Args = []string{c.Path, "30"}
		return c.Start()
	}
	t0 := time.Now()
	err = s.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "not answering after 300ms") || strings.Contains(err.Error(), "\n") {
		t.Errorf("silent daemon: got %v", err)
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("Start took %s to give up (ready timeout 300ms)", d)
	}
	if s.Pid() > 0 {
		if err := syscall.Kill(s.Pid(), 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d left running after a failed Start", s.Pid())
		}
	}
}

func TestServerSpecErrors(t *testing.T) {
	for _, c := range []struct {
		spec ServerSpec
		want string
	}{
		{ServerSpec{Listen: "localhost"}, `listen address "localhost" is not a unicast IP`},
		{ServerSpec{Listen: "0.0.0.0"}, "not a unicast IP"},
		{ServerSpec{Port: 70000}, "port 70000 out of range"},
		{ServerSpec{Names: MaxNames + 1}, "names must be in 1..32767"},
		{ServerSpec{Names: -1}, "names must be in"},
		{ServerSpec{NameFormat: "svc.cluster.local"}, "exactly one %d"},
		{ServerSpec{NameFormat: "svc-%d-%s.cluster.local"}, "exactly one %d"},
		{ServerSpec{NameFormat: "svc-%d.example.com"}, `not under zone "cluster.local"`},
		{ServerSpec{NameFormat: strings.Repeat("a", 64) + "%d.cluster.local"}, "bad name"},
		{ServerSpec{TTL: -1}, "ttl must be in"},
		{ServerSpec{Zone: "bad zone"}, "bad server zone"},
		{ServerSpec{Binary: "cnb-no-such-dnsmasq"}, "not installed"},
	} {
		_, err := NewServer(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: got %v, want one line containing %q", c.spec, err, c.want)
		}
	}
	var s ServerSpec
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if s.Listen != "127.0.0.1" || s.Port != 53 || s.Names != DefaultNames || s.Zone != DefaultZone || s.TTL != DefaultTTL {
		t.Errorf("defaults: %+v", s)
	}
	if s.Address(0).String() != "198.18.128.1" || s.Address(MaxNames-1).String() != "198.18.255.255" {
		t.Errorf("addresses: %s .. %s", s.Address(0), s.Address(MaxNames-1))
	}
	if s.Name(3) != "svc-3.default.svc.cluster.local" {
		t.Errorf("name 3: %s", s.Name(3))
	}
}
