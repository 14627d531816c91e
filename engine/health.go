package engine

import (
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// stallGap is the longest a request/response flow may go without completing
// a transaction before its sample is marked Stalled: longer than a lost
// SYN's first retransmission (1 s) plus margin would hide, so a sample with
// even one such hole is flagged rather than averaged into a rate.
var stallGap = time.Second

// errCause names an error for Result.ErrorsByCause: the errno's symbol
// ("EADDRNOTAVAIL", "ECONNREFUSED", ...), "timeout", "eof" or "other".
func errCause(err error) string {
	var e unix.Errno
	switch {
	case errors.As(err, &e):
		if n := unix.ErrnoName(e); n != "" {
			return strings.ToUpper(n)
		}
		return "errno " + strconv.Itoa(int(e))
	case errors.Is(err, errTimeout):
		return "timeout"
	case errors.Is(err, io.EOF):
		return "eof"
	}
	return "other"
}

// portExhausted reports an error that means the client ran out of local
// ports for this destination: connect() or bind() found no free 4-tuple.
func portExhausted(err error) bool {
	return errors.Is(err, unix.EADDRNOTAVAIL)
}

// completed records a finished transaction at end for the stall check: the
// gap since the previous one (or the start of the measured interval).
func (f *flow) completed(rc *runCtx, end time.Time) {
	last := f.lastDone
	if last.Before(rc.measStart) {
		last = rc.measStart
	}
	if g := end.Sub(last); g > f.longestGap {
		f.longestGap = g
	}
	f.lastDone = end
}

// finalGap closes the stall check at the end of the measured interval: a
// flow that stopped completing transactions near the end has a gap too.
func (f *flow) finalGap(rc *runCtx) time.Duration {
	last := f.lastDone
	if last.Before(rc.measStart) {
		last = rc.measStart
	}
	return max(f.longestGap, rc.measEnd.Sub(last))
}

// timeWaitSockets returns the TCP sockets in TIME_WAIT in this process's
// network namespace, from the "tw" field of /proc/net/sockstat (one small
// read, per namespace, IPv4 and IPv6 together); -1 if it cannot be read.
func timeWaitSockets() int64 {
	b, err := os.ReadFile("/proc/net/sockstat")
	if err != nil {
		return -1
	}
	return parseSockstatTW(string(b))
}

func parseSockstatTW(s string) int64 {
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "TCP:" {
			continue
		}
		for i := 1; i+1 < len(f); i += 2 {
			if f[i] == "tw" {
				if n, err := strconv.ParseInt(f[i+1], 10, 64); err == nil {
					return n
				}
			}
		}
	}
	return -1
}
