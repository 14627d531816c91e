package engine

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func TestTCPStream(t *testing.T) {
	s := startServer(t, 0)
	o := opts(s, TCPStream, 400*time.Millisecond)
	o.Streams = 2
	r := run(t, o)
	if r.BytesReceived <= 0 || r.ThroughputBitsSec <= 0 {
		t.Fatalf("no traffic: %+v", r)
	}
	// The receiver's interval is the measured one, plus drain time.
	if r.ReceiverSecondsRaw < 0.35 || r.ReceiverSecondsRaw > 0.8 {
		t.Errorf("receiver seconds %.3f, want about 0.4", r.ReceiverSecondsRaw)
	}
	// Everything sent in the interval arrives, give or take one write in
	// flight per stream at each end.
	if ratio := float64(r.BytesReceived) / float64(r.BytesSent); ratio < 0.95 || ratio > 1.05 {
		t.Errorf("received/sent = %d/%d = %.3f, want ~1", r.BytesReceived, r.BytesSent, ratio)
	}
	want := float64(r.BytesReceived) * 8 / r.ReceiverSecondsRaw
	if math.Abs(r.ThroughputBitsSec-want) > 1 {
		t.Errorf("throughput %g, want bytes*8/receiver seconds = %g", r.ThroughputBitsSec, want)
	}
	if r.ClientCPUUserSec+r.ClientCPUSysSec <= 0 {
		t.Errorf("no client CPU recorded")
	}
}

// Without the warmup cut, the server would count warmup bytes too: about
// twice what was sent in the measured interval, over twice the time.
func TestTCPStreamWarmupExcluded(t *testing.T) {
	s := startServer(t, 0)
	o := opts(s, TCPStream, 300*time.Millisecond)
	o.Warmup = Duration(300 * time.Millisecond)
	r := run(t, o)
	if r.ReceiverSecondsRaw < 0.25 || r.ReceiverSecondsRaw > 0.5 {
		t.Errorf("receiver seconds %.3f, want about 0.3 (warmup excluded)", r.ReceiverSecondsRaw)
	}
	if ratio := float64(r.BytesReceived) / float64(r.BytesSent); ratio < 0.8 || ratio > 1.25 {
		t.Errorf("received/sent = %.3f, want ~1 (warmup excluded)", ratio)
	}
}

// The pacer never sends faster than the rate and, given the CPU, reaches it.
// On a busy machine the sender can be descheduled longer than the bucket's
// 2 ms burst, and the credit lost then is not made up (by design: no
// catch-up bursts), so a run that falls short is retried; a run that
// overshoots, or inconsistent counters, fail at once.
func TestUDPStreamPaced(t *testing.T) {
	s := startServer(t, 0)
	for _, streams := range []int{1, 3} {
		var short []string
		for attempt := 1; ; attempt++ {
			o := opts(s, UDPStream, 500*time.Millisecond)
			o.Streams = streams
			o.MessageSize = 1000
			o.RateBitsPerSec = 20e6
			r := run(t, o)
			// 20 Mbit/s for 0.5 s of 1000-byte datagrams: 1250.
			if r.PacketsSent > 1400 || r.OfferedBitsSec > 22e6 {
				t.Fatalf("streams=%d: sent %d datagrams at %.3g bit/s, want at most ~1250 at 20e6", streams, r.PacketsSent, r.OfferedBitsSec)
			}
			if r.BytesSent != r.PacketsSent*1000 || r.BytesReceived != r.PacketsReceived*1000 {
				t.Fatalf("streams=%d: bytes %d/%d inconsistent with packets %d/%d", streams,
					r.BytesSent, r.BytesReceived, r.PacketsSent, r.PacketsReceived)
			}
			if r.PacketsReceived > r.PacketsSent || r.ThroughputBitsSec > r.OfferedBitsSec {
				t.Fatalf("streams=%d: received %d of %d, throughput %.3g > offered %.3g", streams,
					r.PacketsReceived, r.PacketsSent, r.ThroughputBitsSec, r.OfferedBitsSec)
			}
			ok := r.PacketsSent >= 1100 && r.OfferedBitsSec >= 18e6 &&
				r.LossPercent <= 5 && r.ThroughputBitsSec >= 0.9*r.OfferedBitsSec
			if ok {
				break
			}
			short = append(short, fmt.Sprintf("sent %d, offered %.3g bit/s, loss %.2f%%, throughput %.3g",
				r.PacketsSent, r.OfferedBitsSec, r.LossPercent, r.ThroughputBitsSec))
			if attempt == 3 {
				t.Fatalf("streams=%d: short of 1250 datagrams at 20e6 bit/s with ~0%% loss in %d runs: %s",
					streams, attempt, strings.Join(short, "; "))
			}
			t.Logf("streams=%d: run %d short (%s); again", streams, attempt, short[len(short)-1])
		}
	}
}

// A server that drops every 10th datagram must show 10% loss end to end.
func TestUDPStreamLoss(t *testing.T) {
	s := startServer(t, 10)
	o := opts(s, UDPStream, 400*time.Millisecond)
	o.RateBitsPerSec = 30e6
	dropsBefore := udpSocketDrops(t, s.Port(UDPStream))
	r := run(t, o)
	kernelDrops := udpSocketDrops(t, s.Port(UDPStream)) - dropsBefore
	if r.PacketsSent < 500 {
		t.Fatalf("only %d datagrams sent", r.PacketsSent)
	}
	// What the server read (seen) lost exactly every 10th datagram to the
	// injection; what the kernel dropped before (its socket's drop
	// counter) is the rest of the loss. On a busy host the receiving
	// thread waits for a CPU while its socket buffer fills, so the total
	// is above 10% (15.9% at a load of 3 × the cores): the kernel's share
	// is counted, not bounded.
	seen, injected := s.dataSeen.Load(), s.dropsInjected.Load()
	if injected != seen/10 {
		t.Errorf("injected %d drops of %d datagrams read, want every 10th: %d", injected, seen, seen/10)
	}
	if got, want := uint64(r.PacketsReceived), seen-injected; got != want {
		t.Errorf("received %d, want the %d read less the %d injected drops: %d", got, seen, injected, want)
	}
	// Every datagram sent was read or dropped by the kernel at the
	// server's socket. The socket may also have dropped up to
	// udpTries-1 hellos and as many report requests (the client sends
	// them again).
	if seen > uint64(r.PacketsSent) {
		t.Fatalf("the server read %d datagrams of %d sent", seen, r.PacketsSent)
	}
	lostBefore := uint64(r.PacketsSent) - seen
	if kernelDrops < lostBefore || kernelDrops > lostBefore+2*(udpTries-1) {
		t.Errorf("%d sent, %d read: %d lost before the server, but the socket dropped %d", r.PacketsSent, seen, lostBefore, kernelDrops)
	}
	t.Logf("loss %.2f%%: %d injected, %d dropped by the kernel, of %d sent", r.LossPercent, injected, kernelDrops, r.PacketsSent)
	if want := lossPercent(r.PacketsSent, r.PacketsReceived); r.LossPercent != want {
		t.Errorf("loss %.3f, want %.3f", r.LossPercent, want)
	}
}

// Warmup datagrams use another session: counting them would make the
// server receive about twice what was sent.
func TestUDPStreamWarmupExcluded(t *testing.T) {
	s := startServer(t, 0)
	o := opts(s, UDPStream, 300*time.Millisecond)
	o.Warmup = Duration(300 * time.Millisecond)
	o.MessageSize = 1000
	o.RateBitsPerSec = 20e6
	r := run(t, o)
	// 750 is the measured interval at the rate; the warm-up's would make
	// it ~1,500. Only the upper bound is this test's: a sender starved of
	// CPU for longer than the pacer's burst (a loaded 2-core host: 169
	// sent, seen in CI) sends less, never more, and the pacer's own
	// accuracy is TestUDPStreamPaced's.
	if r.PacketsSent == 0 || r.PacketsSent > 900 {
		t.Errorf("sent %d, want at most ~750 (the measured interval only, not the warm-up's)", r.PacketsSent)
	}
	if r.PacketsReceived > r.PacketsSent || r.PacketsReceived < r.PacketsSent*9/10 {
		t.Errorf("received %d of %d sent, want about all and never more", r.PacketsReceived, r.PacketsSent)
	}
}

func TestUDPStreamUnpaced(t *testing.T) {
	s := startServer(t, 0)
	o := opts(s, UDPStream, 300*time.Millisecond)
	r := run(t, o)
	if r.PacketsSent == 0 || r.PacketsReceived == 0 || r.PacketsReceived > r.PacketsSent {
		t.Errorf("sent %d received %d", r.PacketsSent, r.PacketsReceived)
	}
	if r.LossPercent < 0 || r.LossPercent > 100 {
		t.Errorf("loss %g out of range", r.LossPercent)
	}
}

// With UDP GSO the server still counts datagrams of the message size, one
// sequence number each, and the result records the option.
func TestUDPStreamGSO(t *testing.T) {
	s := startServer(t, 0)
	o := opts(s, UDPStream, 300*time.Millisecond)
	o.MessageSize = 1000
	o.RateBitsPerSec = 100e6
	o.UDPGSO = true
	r := run(t, o)
	if !r.Options.UDPGSO {
		t.Errorf("result does not record UDP GSO: %+v", r.Options)
	}
	if r.PacketsSent < 1000 || r.PacketsReceived > r.PacketsSent || r.PacketsReceived < r.PacketsSent*9/10 {
		t.Errorf("sent %d received %d, want >= 1000 and about all", r.PacketsSent, r.PacketsReceived)
	}
	if r.BytesSent != r.PacketsSent*1000 || r.BytesReceived != r.PacketsReceived*1000 {
		t.Errorf("bytes %d/%d inconsistent with %d/%d datagrams of 1000 B", r.BytesSent, r.BytesReceived, r.PacketsSent, r.PacketsReceived)
	}
	if r.PacketsOutOfOrder != 0 {
		t.Errorf("%d out of order on loopback", r.PacketsOutOfOrder)
	}
}
