package flows

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// spin burns d of the calling thread's CPU.
func spin(d time.Duration) {
	for start := ownThreadCPU(); ownThreadCPU()-start < d; {
	}
}

// TestThreadCPUClock: another thread's clock, read from here, is that
// thread's CPU (what it burned), not this one's.
func TestThreadCPUClock(t *testing.T) {
	tid, burned, read := make(chan int), make(chan time.Duration), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid <- unix.Gettid()
		spin(40 * time.Millisecond)
		burned <- ownThreadCPU()
		<-read
	}()
	id := <-tid
	own := ownThreadCPU()
	spin(80 * time.Millisecond) // this thread's CPU must not show there
	b := <-burned
	c, err := threadCPU(id)
	close(read)
	if err != nil {
		t.Fatal(err)
	}
	if c < b || c-b > 30*time.Millisecond || c < 40*time.Millisecond {
		t.Errorf("thread %d read %v from here, it measured %v itself (burned ≥ 40 ms)", id, c, b)
	}
	if ownThreadCPU()-own < 80*time.Millisecond {
		t.Errorf("own clock did not count the 80 ms spun")
	}
	if _, err := threadCPU(1<<22 + 1); err == nil { // above PID_MAX_LIMIT
		t.Error("a thread that does not exist: want an error")
	}
}

// busySource is a fakeSource whose consumer burns cpu before waiting.
type busySource struct {
	fakeSource
	cpu  time.Duration
	busy chan struct{}
}

func (b *busySource) run(emit func(Event), lost func(uint64)) error {
	spin(b.cpu)
	close(b.busy)
	<-b.stopped
	return errStopped
}

// TestConsumerCPU: ConsumerCPU counts the consumer's thread (the 50 ms
// its source burned), not the CPU other goroutines use meanwhile, and
// keeps its last value after Close.
func TestConsumerCPU(t *testing.T) {
	src := &busySource{fakeSource: fakeSource{stopped: make(chan struct{})}, cpu: 50 * time.Millisecond, busy: make(chan struct{})}
	r := &Recorder{site: Site{Node: "node0"}, src: src, done: make(chan struct{}), byKind: map[string]uint64{}}
	if c, err := r.ConsumerCPU(); err != nil || c != 0 {
		t.Fatalf("before Start: %v %v, want 0", c, err)
	}
	r.Start()
	runtime.LockOSThread()
	spin(100 * time.Millisecond)
	runtime.UnlockOSThread()
	<-src.busy
	c, err := r.ConsumerCPU()
	if err != nil || c < 50*time.Millisecond || c > 90*time.Millisecond {
		t.Fatalf("running: %v %v, want the consumer's 50 ms (not the test's 100)", c, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if after, err := r.ConsumerCPU(); err != nil || after < c || after > 90*time.Millisecond {
		t.Errorf("after Close: %v %v, want its last value ≥ %v", after, err, c)
	}
}
