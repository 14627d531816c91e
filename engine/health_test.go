package engine

import (
	"fmt"
	"io"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestErrCauseAndPortExhaustion(t *testing.T) {
	wrapped := fmt.Errorf("connect 10.0.0.1:5205: %w", unix.EADDRNOTAVAIL)
	for _, c := range []struct {
		err  error
		want string
	}{
		{wrapped, "EADDRNOTAVAIL"},
		{fmt.Errorf("x: %w", unix.ECONNREFUSED), "ECONNREFUSED"},
		{fmt.Errorf("recv: %w", errTimeout), "timeout"},
		{fmt.Errorf("recv: %w", io.EOF), "eof"},
		{errNotClosed, "other"},
	} {
		if got := errCause(c.err); got != c.want {
			t.Errorf("errCause(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	if !portExhausted(wrapped) || portExhausted(unix.ECONNREFUSED) {
		t.Error("portExhausted must hold for EADDRNOTAVAIL only")
	}
	var f flow
	f.noteError(wrapped)
	f.noteError(fmt.Errorf("x: %w", unix.ECONNRESET))
	if !f.portExhausted || f.errors != 2 || f.causes["EADDRNOTAVAIL"] != 1 || f.causes["ECONNRESET"] != 1 {
		t.Errorf("flow after two errors: exhausted %v, errors %d, causes %v", f.portExhausted, f.errors, f.causes)
	}
}

func TestLongestGap(t *testing.T) {
	t0 := time.Now()
	rc := &runCtx{measStart: t0, measEnd: t0.Add(10 * time.Second)}
	var f flow
	for _, at := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 3 * time.Second, 9900 * time.Millisecond} {
		f.completed(rc, t0.Add(at))
	}
	if g := f.finalGap(rc); g != 6900*time.Millisecond {
		t.Errorf("longest gap = %s, want 6.9s (3s to 9.9s)", g)
	}
	var idle flow // completed nothing: the whole interval is one gap
	if g := idle.finalGap(rc); g != 10*time.Second {
		t.Errorf("gap of an idle flow = %s, want 10s", g)
	}
}

func TestParseSockstatTW(t *testing.T) {
	s := "sockets: used 14\nTCP: inuse 2 orphan 0 tw 4228 alloc 2 mem 114\nUDP: inuse 0 mem 0\n"
	if got := parseSockstatTW(s); got != 4228 {
		t.Errorf("tw = %d, want 4228", got)
	}
	if got := parseSockstatTW("UDP: inuse 0\n"); got != -1 {
		t.Errorf("tw without a TCP line = %d, want -1", got)
	}
}
