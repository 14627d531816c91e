package nodeprobe

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// legacyNATInUse reports whether the namespace at netns ("" = ours) has an
// iptables-legacy (x_tables) nat table: /proc/net/ip_tables_names lists
// the legacy tables a namespace has instantiated. nftables netlink cannot
// read them, so a kube-proxy there is invisible to the probe.
func legacyNATInUse(netns string) (bool, error) {
	var b []byte
	read := func(path string) error {
		var err error
		b, err = os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			b, err = nil, nil // ip_tables not loaded: no legacy table anywhere
		}
		return err
	}
	var err error
	if netns == "" {
		err = read("/proc/net/ip_tables_names")
	} else {
		// /proc/thread-self/net is the namespace of the thread Do runs on.
		err = netnsx.Do(netns, func() error { return read("/proc/thread-self/net/ip_tables_names") })
	}
	if err != nil {
		return false, fmt.Errorf("iptables-legacy check: %w", err)
	}
	for _, t := range strings.Fields(string(b)) {
		if t == iptNATTable {
			return true, nil
		}
	}
	return false, nil
}
