package engine

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/stats"
)

func TestRequestResponse(t *testing.T) {
	s := startServer(t, 0)
	cases := []struct {
		test    Test
		mode    Mode
		streams int
		size    int
	}{
		{TCPRR, Blocking, 1, 0},
		{TCPRR, Blocking, 2, 4000}, // multi-segment messages
		{TCPRR, BusyPoll, 2, 0},
		{UDPRR, Blocking, 1, 0},
		{UDPRR, Blocking, 2, 100}, // sequence-numbered requests
		{UDPRR, BusyPoll, 2, 0},
		{TCPCRR, Blocking, 1, 0},
		{TCPCRR, Blocking, 2, 0},
		{TCPCRR, BusyPoll, 2, 0},
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s/%s/streams=%d/size=%d", c.test, c.mode, c.streams, c.size)
		t.Run(name, func(t *testing.T) {
			o := opts(s, c.test, 250*time.Millisecond)
			o.Mode, o.Streams, o.MessageSize = c.mode, c.streams, c.size
			r := run(t, o)
			checkRR(t, r, c.mode, c.streams)
		})
	}
}

// checkRR checks a request/response result for internal consistency.
func checkRR(t *testing.T, r *Result, mode Mode, streams int) {
	t.Helper()
	if r.Mode != mode || r.Streams != streams {
		t.Errorf("mode %q streams %d, want %q %d", r.Mode, r.Streams, mode, streams)
	}
	if r.Transactions <= 0 || r.Latency == nil {
		t.Fatalf("no transactions: %+v", r)
	}
	if r.Errors != 0 {
		t.Errorf("%d errors: %s", r.Errors, r.ErrorMsg)
	}
	l := r.Latency
	if l.Count != r.Transactions {
		t.Errorf("latency count %d != transactions %d", l.Count, r.Transactions)
	}
	if math.Abs(r.RatePerSec-float64(r.Transactions)/r.Seconds) > 1e-6 {
		t.Errorf("rate %g != transactions/seconds %g", r.RatePerSec, float64(r.Transactions)/r.Seconds)
	}
	p := []float64{l.MinUs, l.P50Us, l.P90Us, l.P99Us, l.P999Us, l.MaxUs}
	for i := 1; i < len(p); i++ {
		if p[i] < p[i-1] {
			t.Errorf("percentiles out of order: min,p50,p90,p99,p99.9,max = %v", p)
		}
	}
	if l.MinUs <= 0 {
		t.Errorf("min latency %g", l.MinUs)
	}
	// Every measured transaction lies inside the interval and flows run them
	// back to back: their total time is at most streams*seconds, and (for
	// RR) a good part of it.
	busy := l.MeanUs * float64(l.Count) / 1e6
	if limit := float64(streams) * r.Seconds * 1.01; busy > limit {
		t.Errorf("latencies add up to %.3fs, more than streams*seconds = %.3fs", busy, limit)
	}
	// Busy-polling flows can only run transactions while they have a CPU;
	// on a loaded machine (load 8 on 2 cores) they get little of the
	// interval, so the bar is the client's CPU time then: they spin inside
	// their transactions, never between them.
	span := float64(streams) * r.Seconds
	if cpu := r.ClientCPUUserSec + r.ClientCPUSysSec; mode == BusyPoll && cpu < span {
		span = cpu
	}
	if r.Test != TCPCRR && busy < 0.3*span {
		t.Errorf("latencies add up to only %.3fs of %.3fs (streams × interval, or the client's CPU time if less): flows not back to back?", busy, span)
	}
	h, err := l.Decode()
	if err != nil || h.TotalCount() != r.Transactions {
		t.Errorf("histogram does not decode to the transactions: %v", err)
	}
	if _, err := stats.Merge(l, l); err != nil {
		t.Errorf("merge: %v", err)
	}
}

// A UDP_RR server that never answers requests (only the setup probe) must
// produce timeouts counted in Errors, and the run must still end on time.
func TestUDPRRTimeouts(t *testing.T) {
	old := udpRRTimeout
	udpRRTimeout = 50 * time.Millisecond
	defer func() { udpRRTimeout = old }()

	fd, port := udpSocket(t)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		var from peer
		for n := 0; ; n++ {
			m, err := recvFrom(fd, buf, &from)
			select {
			case <-stop:
				return
			default:
			}
			// Echo the 2-byte probe and every 4th request only.
			if err == nil && (m == 2 || n%4 == 0) {
				_, _ = sendTo(fd, buf[:m], &from)
			}
		}
	}()
	defer func() {
		close(stop)
		_ = unix.Shutdown(fd, unix.SHUT_RDWR)
		<-done
		_ = unix.Close(fd)
	}()
	o := Options{Test: UDPRR, Host: "127.0.0.1", Port: port, RunnerOptions: kinds.RunnerOptions{Duration: Duration(400 * time.Millisecond)}}
	start := time.Now()
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Errorf("run took %s", d)
	}
	if r.Errors == 0 || r.ErrorMsg == "" {
		t.Errorf("no timeouts counted: errors %d msg %q", r.Errors, r.ErrorMsg)
	}
	if r.Transactions == 0 || r.Latency.Count != r.Transactions {
		t.Errorf("transactions %d latency count %d", r.Transactions, r.Latency.Count)
	}
}

// udpSocket binds a raw UDP socket on a free loopback port.
func udpSocket(t *testing.T) (fd, port int) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fd, sa.(*unix.SockaddrInet4).Port
}
