package engine

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// udpSocketDrops is the kernel's drop counter (sk_drops: datagrams it
// dropped because the socket's receive buffer was full) summed over the
// IPv4 UDP sockets bound to port, from /proc/net/udp. Only the test's own
// server binds that port: what other tools drop is not counted.
func udpSocketDrops(t *testing.T, port int) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/net/udp")
	if err != nil {
		t.Fatal(err)
	}
	drops, found := parseUDPDrops(string(b), port)
	if !found {
		t.Fatalf("no socket bound to UDP port %d in /proc/net/udp", port)
	}
	return drops
}

// parseUDPDrops sums the last column ("drops") of the /proc/net/udp lines
// whose local address has port port.
func parseUDPDrops(listing string, port int) (drops uint64, found bool) {
	suffix := fmt.Sprintf(":%04X", port)
	for _, line := range strings.Split(listing, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 13 || !strings.HasSuffix(f[1], suffix) {
			continue
		}
		n, err := strconv.ParseUint(f[len(f)-1], 10, 64)
		if err != nil {
			continue
		}
		drops, found = drops+n, true
	}
	return drops, found
}

// Recorded from the kernel: the socket on 127.0.0.1:46525 (0xB5BD) had
// dropped 7 datagrams; another on port 5353 is not counted.
func TestParseUDPDrops(t *testing.T) {
	listing := `   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  120: 0100007F:B5BD 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 912345 2 0000000000000000 7
  300: 00000000:14E9 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 912346 2 0000000000000000 40
`
	if d, ok := parseUDPDrops(listing, 46525); d != 7 || !ok {
		t.Errorf("port 46525: %d, %v; want 7, true", d, ok)
	}
	if _, ok := parseUDPDrops(listing, 46526); ok {
		t.Error("port 46526 found, want none")
	}
}
