package engine

import (
	"io"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The pump serves every stream in turn and waits for none: a socket whose
// peer never reads fills and stays full while the two read ones carry on,
// each a fair share; a stream left out (its hello failed: fd -1) gets
// nothing; and the pump ends with the interval.
func TestStreamPumpTakesTurns(t *testing.T) {
	const streams = 4
	rc := &runCtx{flows: make([]flow, streams), pumped: make(chan struct{})}
	got := make([]chan int64, streams)
	for i := range streams - 1 {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.SetNonblock(fds[0], true); err != nil {
			t.Fatal(err)
		}
		rc.flows[i].fd = fds[0]
		t.Cleanup(func() { unix.Close(fds[0]) })
		peer := os.NewFile(uintptr(fds[1]), "peer")
		t.Cleanup(func() { peer.Close() })
		if i == 0 {
			continue // never read: full after its first writes
		}
		got[i] = make(chan int64, 1)
		go func(c chan<- int64) {
			n, _ := io.Copy(io.Discard, peer)
			c <- n
		}(got[i])
	}
	rc.flows[streams-1].fd = -1
	rc.measStart = time.Now()
	rc.measEnd = rc.measStart.Add(500 * time.Millisecond)
	msg := make([]byte, 64<<10)
	done := make(chan error, streams)
	for i := range rc.flows {
		go func() { done <- rc.pumpTurn(&rc.flows[i], rc.flows[i].fd, msg) }()
	}
	for range streams {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(rc.measStart); took > 2*time.Second {
		t.Errorf("the pump ended %v after the start of a 500 ms interval", took)
	}
	sndbuf, _ := unix.GetsockoptInt(rc.flows[0].fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
	if sent := rc.flows[0].bytesSent; sent > int64(2*sndbuf) {
		t.Errorf("the unread stream counts %d bytes sent, more than its buffers hold (%d)", sent, 2*sndbuf)
	}
	total := rc.flows[1].bytesSent + rc.flows[2].bytesSent
	for i := 1; i <= 2; i++ {
		unix.Shutdown(rc.flows[i].fd, unix.SHUT_WR)
		received, sent := <-got[i], rc.flows[i].bytesSent
		if sent <= 0 || received < sent {
			t.Errorf("stream %d: sent %d in the interval, the peer read %d", i, sent, received)
		}
		if share := float64(sent) / float64(total); share < 0.1 {
			t.Errorf("stream %d carried %.0f%% of the read streams' bytes: starved", i, 100*share)
		}
	}
	if rc.flows[streams-1].bytesSent != 0 {
		t.Errorf("the stream left out sent %d bytes", rc.flows[streams-1].bytesSent)
	}
}
