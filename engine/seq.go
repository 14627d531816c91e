package engine

// seqTracker follows one UDP sender's sequence numbers the way iperf3 does:
// a datagram whose number is below the highest seen so far is out of order.
// Loss itself is computed from the sender's count (see lossPercent), which
// also covers datagrams lost after the last one received.
type seqTracker struct {
	next       uint64 // highest sequence number seen + 1
	received   uint64
	outOfOrder uint64
}

func (t *seqTracker) add(seq uint64) {
	t.received++
	if seq >= t.next {
		t.next = seq + 1
	} else {
		t.outOfOrder++
	}
}

// gaps is the receiver-only loss estimate: sequence numbers up to the
// highest seen that never arrived.
func (t *seqTracker) gaps() uint64 {
	if t.received >= t.next {
		return 0
	}
	return t.next - t.received
}
