package epoll

import (
	"runtime"
	"testing"
	"time"
)

func newPoller(t *testing.T) *Poller {
	t.Helper()
	var p Poller
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return &p
}

// A timed wait with nothing ready returns 0 after about its timeout.
func TestWaitTimeout(t *testing.T) {
	p := newPoller(t)
	t0 := time.Now()
	if n := p.Wait(int64(3 * time.Millisecond)); n != 0 {
		t.Fatalf("Wait returned %d events, want 0", n)
	}
	if d := time.Since(t0); d < 3*time.Millisecond || d > time.Second {
		t.Fatalf("3 ms wait took %v", d)
	}
}

// An unbounded wait blocks in the syscall; with a single P, the runtime
// must still run other goroutines (here a timer's, which wakes the loop),
// or a loop waiting for its stop signal would never get it.
func TestWaitUnboundedLetsOthersRun(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := newPoller(t)
	woke := make(chan int, 1)
	go func() { woke <- p.Wait(-1) }()
	time.Sleep(20 * time.Millisecond) // the waiter is in epoll_pwait2 by now
	time.AfterFunc(5*time.Millisecond, p.Wake)
	select {
	case n := <-woke:
		if n != 1 || p.Events[0].Fd != -1 {
			t.Fatalf("Wait returned %d events (%+v), want the wake-up", n, p.Events[:n])
		}
		p.DrainWake()
	case <-time.After(5 * time.Second):
		t.Fatal("Wake did not interrupt an unbounded Wait within 5 s")
	}
	// Drained: the next short wait times out again.
	if n := p.Wait(int64(time.Millisecond)); n != 0 {
		t.Fatalf("after DrainWake, Wait returned %d events", n)
	}
}
