package dnsload

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/cnibench/cnibench/engine/dnsload/dnsapi"
	"github.com/cnibench/cnibench/engine/engineapi"
)

// ServiceRange holds the addresses the server's names resolve to: the
// upper half of 198.18.0.0/15 (RFC 2544, benchmarking), apart from the
// lab's nodes (198.18.0.0/24) and pods (198.19.0.0/16). Nothing is ever
// sent to them; they are DNS data only.
var ServiceRange = netip.MustParsePrefix("198.18.128.0/17")

// Server defaults and limits.
const (
	DefaultZone = "cluster.local"
	// DefaultTTL is the TTL of the answers, CoreDNS's kubernetes plugin
	// default.
	DefaultTTL = 5
	// MaxNames is the most names a server holds: one address each in
	// ServiceRange, from .128.1 on.
	MaxNames          = 1<<15 - 1
	DefaultDaemon     = "dnsmasq"
	daemonPackage     = "dnsmasq-base"
	defaultDaemonPath = "/usr/sbin/dnsmasq"
)

// ErrNotInstalled is returned (wrapped) when the DNS daemon is missing.
var ErrNotInstalled = errors.New("dnsmasq not installed (Debian package " + daemonPackage + ")")

// ServerSpec describes the DNS server to run: Names names like Kubernetes
// Service names, each with one A record, answered from memory (no
// recursion, no upstream, no cache), listening on one address only. A
// plain JSON-serialisable struct; Server is the running daemon.
type ServerSpec struct {
	// Listen is the IP address to listen on, and the only one. "":
	// 127.0.0.1.
	Listen string `json:"listen,omitempty"`
	// Port is the UDP (and TCP) port. 0: DefaultPort (53).
	Port int `json:"port,omitempty"`
	// Names is the number of names: fmt.Sprintf(NameFormat, i) for i in
	// 0..Names-1 resolves to Address(i). 0: DefaultNames (1000).
	Names int `json:"names,omitempty"`
	// NameFormat has exactly one %d and ends in Zone. "":
	// dnsapi.DefaultNameFormat, svc-%d.default.svc.cluster.local.
	NameFormat string `json:"name_format,omitempty"`
	// Zone is answered locally: a name under it that is not one of the
	// names gets NXDOMAIN, never a forward. "": DefaultZone
	// (cluster.local).
	Zone string `json:"zone,omitempty"`
	// TTL of the answers in seconds. 0: DefaultTTL (5).
	TTL int `json:"ttl,omitempty"`
	// Binary is the dnsmasq executable. "": dnsmasq from PATH, else
	// /usr/sbin/dnsmasq.
	Binary string `json:"binary,omitempty"`
	// ReadyTimeout bounds Start's wait for the first answer. 0: 5s.
	ReadyTimeout engineapi.Duration `json:"ready_timeout,omitempty"`
}

// Validate fills defaults and reports the first bad field as a one-line
// error. It does not look for the binary (NewServer does).
func (s *ServerSpec) Validate() error {
	if s.Listen == "" {
		s.Listen = "127.0.0.1"
	}
	ip, err := netip.ParseAddr(s.Listen)
	if err != nil || ip.Zone() != "" || ip.IsUnspecified() || ip.IsMulticast() {
		return fmt.Errorf("dnsload: server listen address %q is not a unicast IP address", s.Listen)
	}
	s.Listen = ip.Unmap().String()
	if s.Port == 0 {
		s.Port = DefaultPort
	}
	if s.Port < 1 || s.Port > 65535 {
		return fmt.Errorf("dnsload: server port %d out of range 1..65535", s.Port)
	}
	if s.Names == 0 {
		s.Names = DefaultNames
	}
	if s.Names < 1 || s.Names > MaxNames {
		return fmt.Errorf("dnsload: server names must be in 1..%d, got %d", MaxNames, s.Names)
	}
	if s.Zone == "" {
		s.Zone = DefaultZone
	}
	s.Zone = strings.TrimSuffix(s.Zone, ".")
	if s.Zone == "" || strings.ContainsAny(s.Zone, " \t\r\n/#") {
		return fmt.Errorf("dnsload: bad server zone %q", s.Zone)
	}
	if s.NameFormat == "" {
		s.NameFormat = dnsapi.DefaultNameFormat
	}
	if err := dnsapi.CheckNameFormat(s.NameFormat); err != nil {
		return err
	}
	for _, i := range []int{0, s.Names - 1} {
		n := s.Name(i)
		if !strings.HasSuffix(strings.TrimSuffix(n, "."), "."+s.Zone) {
			return fmt.Errorf("dnsload: server name %q is not under zone %q", n, s.Zone)
		}
		if strings.ContainsAny(n, " \t\r\n#") {
			return fmt.Errorf("dnsload: bad server name %q", n)
		}
		if _, err := appendQuery(nil, n, 0); err != nil {
			return err
		}
	}
	if s.TTL == 0 {
		s.TTL = DefaultTTL
	}
	if s.TTL < 0 || s.TTL > 86400 {
		return fmt.Errorf("dnsload: server ttl must be in 1..86400 s, got %d", s.TTL)
	}
	if s.ReadyTimeout < 0 {
		return fmt.Errorf("dnsload: server ready timeout must not be negative, got %s", time.Duration(s.ReadyTimeout))
	}
	if s.ReadyTimeout == 0 {
		s.ReadyTimeout = engineapi.Duration(5 * time.Second)
	}
	return nil
}

// Name is the i-th name, without the final dot.
func (s *ServerSpec) Name(i int) string {
	return strings.TrimSuffix(fmt.Sprintf(s.NameFormat, i), ".")
}

// Address is the A record of the i-th name: ServiceRange's address i+1.
func (s *ServerSpec) Address(i int) netip.Addr {
	a := ServiceRange.Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v += uint32(i) + 1
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// AddrPort is where the server listens; s must be validated.
func (s *ServerSpec) AddrPort() netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr(s.Listen), uint16(s.Port))
}

// binary finds the daemon.
func (s *ServerSpec) binary() (string, error) {
	if s.Binary != "" {
		p, err := exec.LookPath(s.Binary)
		if err != nil {
			return "", fmt.Errorf("dnsload: %s: %w", s.Binary, ErrNotInstalled)
		}
		return p, nil
	}
	if p, err := exec.LookPath(DefaultDaemon); err == nil {
		return p, nil
	}
	if st, err := os.Stat(defaultDaemonPath); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return defaultDaemonPath, nil
	}
	return "", fmt.Errorf("dnsload: %w", ErrNotInstalled)
}
