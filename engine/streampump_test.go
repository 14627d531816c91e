package engine

import (
	"io"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The pump serves every stream in turn: each of three sockets drained at
// the same pace gets about a third of the bytes, and a stream left out
// (its hello failed: fd -1) gets none while the others carry on.
func TestStreamPumpTakesTurns(t *testing.T) {
	const streams = 4
	rc := &runCtx{flows: make([]flow, streams), pumped: make(chan struct{})}
	got := make([]chan int64, streams)
	for i := range rc.flows {
		rc.flows[i].fd = -1
		if i == streams-1 {
			continue // left out
		}
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.SetNonblock(fds[0], true); err != nil {
			t.Fatal(err)
		}
		rc.flows[i].fd = fds[0]
		t.Cleanup(func() { unix.Close(fds[0]) })
		got[i] = make(chan int64, 1)
		peer := os.NewFile(uintptr(fds[1]), "peer")
		go func(c chan<- int64) {
			n, _ := io.Copy(io.Discard, peer)
			peer.Close()
			c <- n
		}(got[i])
	}
	rc.measStart = time.Now()
	rc.measEnd = rc.measStart.Add(300 * time.Millisecond)
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
	var total int64
	for i := range streams - 1 {
		unix.Shutdown(rc.flows[i].fd, unix.SHUT_WR)
		received := <-got[i]
		sent := rc.flows[i].bytesSent
		if sent <= 0 || received < sent {
			t.Errorf("stream %d: sent %d in the interval, the peer read %d", i, sent, received)
		}
		total += sent
	}
	for i := range streams - 1 {
		if share := float64(rc.flows[i].bytesSent) / float64(total); share < 0.2 || share > 0.5 {
			t.Errorf("stream %d carried %.0f%% of the bytes, want about a third", i, 100*share)
		}
	}
	if rc.flows[streams-1].bytesSent != 0 {
		t.Errorf("the stream left out sent %d bytes", rc.flows[streams-1].bytesSent)
	}
}
