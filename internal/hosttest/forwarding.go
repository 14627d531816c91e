package hosttest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Writing net.ipv4.ip_forward changes more than itself: the kernel copies
// it to conf.default.forwarding and every device's forwarding, and sets
// conf.all.accept_redirects to its opposite. These are saved and put back
// exactly, so a toggle leaves the root as it found it.
const (
	ipForward = "/proc/sys/net/ipv4/ip_forward"
	confDir   = "/proc/sys/net/ipv4/conf"
)

// saveForwarding reads ip_forward and every conf/*/{forwarding,
// accept_redirects} of the calling thread's namespace.
func saveForwarding() (map[string]string, error) {
	saved := map[string]string{}
	paths, _ := filepath.Glob(filepath.Join(confDir, "*", "forwarding"))
	more, _ := filepath.Glob(filepath.Join(confDir, "*", "accept_redirects"))
	for _, p := range append([]string{ipForward}, append(paths, more...)...) {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		saved[p] = strings.TrimSpace(string(b))
	}
	return saved, nil
}

// restoreForwarding writes ip_forward back first (which overwrites the
// per-device values), then each saved value; a device gone since is
// skipped.
func restoreForwarding(saved map[string]string) error {
	if err := os.WriteFile(ipForward, []byte(saved[ipForward]), 0o644); err != nil {
		return err
	}
	for p, v := range saved {
		if p == ipForward {
			continue
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// SetRootForwarding sets the root's ip_forward to v ("0" or "1"), as Docker
// does when it starts, until the test ends; then every value it touched is
// restored. It holds the toggle lock meanwhile: the test must not call Take
// before the cleanup has run.
func SetRootForwarding(t testing.TB, v string) {
	t.Helper()
	unlock, err := lockToggles(true)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := saveForwarding()
	if err != nil {
		unlock()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer unlock()
		if err := restoreForwarding(saved); err != nil {
			t.Errorf("restore root forwarding sysctls: %v", err)
		}
	})
	if err := os.WriteFile(ipForward, []byte(v), 0o644); err != nil {
		t.Fatal(fmt.Errorf("set root ip_forward=%s: %w", v, err))
	}
}
