package portshare

import (
	"net"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

func TestSplitCoversTheRangeWithoutOverlap(t *testing.T) {
	full := Range{32768, 60999}
	next := full.Lo
	for i := 0; i < 5; i++ {
		r, err := Split(full, i, 5)
		if err != nil {
			t.Fatal(err)
		}
		if r.Lo != next || r.Hi < r.Lo {
			t.Fatalf("share %d = %s, want it to start at %d", i, r, next)
		}
		next = r.Hi + 1
	}
	if next != full.Hi+1 {
		t.Fatalf("shares end at %d, want %d", next-1, full.Hi)
	}
}

func TestSplitRejectsBadShares(t *testing.T) {
	for _, c := range []struct{ i, n int }{{-1, 2}, {2, 2}, {0, 0}, {0, 20000}} {
		if _, err := Split(Range{32768, 60999}, c.i, c.n); err == nil {
			t.Errorf("Split(%d of %d) = nil error", c.i, c.n)
		}
	}
}

func TestParse(t *testing.T) {
	r, err := parse("32768\t60999\n")
	if err != nil || r != (Range{32768, 60999}) {
		t.Fatalf("parse = %v, %v", r, err)
	}
	for _, bad := range []string{"", "1", "x 2", "60999 32768", "0 10", "1 70000"} {
		if _, err := parse(bad); err == nil {
			t.Errorf("parse(%q) = nil error", bad)
		}
	}
}

// TestApplyPicksPortsInTheShare connects on loopback with a share applied
// and checks the kernel chose the local port inside it.
func TestApplyPicksPortsInTheShare(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	r, err := Of(3, 5)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := Apply(fd, r); err == ErrUnsupported {
			unix.Close(fd)
			t.Skip(err)
		} else if err != nil {
			t.Fatal(err)
		}
		if err := unix.Connect(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			t.Fatal(err)
		}
		sa, err := unix.Getsockname(fd)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		lp := sa.(*unix.SockaddrInet4).Port
		if lp < r.Lo || lp > r.Hi {
			t.Fatalf("local port %s outside the share %s", strconv.Itoa(lp), r)
		}
	}
}
