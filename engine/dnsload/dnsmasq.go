package dnsload

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
)

// The server is dnsmasq, not unbound or knot-resolver:
//   - it is what kube-dns ran in front of its resolver for years, so it is
//     a Kubernetes DNS server in its own right;
//   - Debian's dnsmasq-base is the bare binary: installing it starts no
//     system service (unbound's package enables one on port 53 of the
//     host), and the whole configuration is one file and a hosts file;
//   - a hosts file is held in memory in dnsmasq's hash table and answered
//     without recursion, forwarding or cache expiry, so every query takes
//     the same path. It is single-threaded, like a CoreDNS pod pinned to
//     one CPU, which is what the lab's servers are.

// writeConfig writes dnsmasq.conf and the hosts file into dir and returns
// the config's path.
func writeConfig(dir string, s *ServerSpec) (string, error) {
	hosts := filepath.Join(dir, "hosts")
	f, err := os.OpenFile(hosts, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return "", err
	}
	w := bufio.NewWriter(f)
	for i := range s.Names {
		fmt.Fprintf(w, "%s %s\n", s.Address(i), s.Name(i))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	conf := filepath.Join(dir, "dnsmasq.conf")
	text := fmt.Sprintf(`# Written by cnibench (engine/dnsload): %d names under %s, from memory.
# Listen on this address only, not on the wildcard.
listen-address=%s
bind-interfaces
port=%d
# No upstream, no /etc/hosts, no resolv.conf polling, no cache: answers
# come from the hosts file below, and unknown names under the zone get
# NXDOMAIN instead of a forward.
no-resolv
no-poll
no-hosts
addn-hosts=%s
local=/%s/
local-ttl=%d
cache-size=0
log-facility=-
pid-file=%s
`, s.Names, s.Zone, s.Listen, s.Port, hosts, s.Zone, s.TTL, filepath.Join(dir, "dnsmasq.pid"))
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return "", err
	}
	return conf, nil
}
