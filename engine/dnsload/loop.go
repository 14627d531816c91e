package dnsload

import (
	"fmt"
	"runtime"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/engine/internal/epoll"
	"github.com/cnibench/cnibench/stats"
)

// Each event loop owns one connected, non-blocking UDP socket and the
// whole 16-bit ID space of its queries, like dnsperf's sockets: a query
// in flight is found by the ID of its response in a 65536-entry table. IDs
// come from a FIFO of free ones, so an ID is reused as late as possible;
// the ID of a query that timed out is held back (quarantined) for another
// Timeout, so its answer, if it still comes, is counted late instead of
// being taken for the answer to a newer query. Timeouts are found at the
// head of a FIFO of sends (every query has the same timeout), in O(1).

const (
	idFree uint8 = iota
	idLive
	idQuarantined
)

// sendBackoff is how long a closed loop pauses after a failed send, so a
// socket that refuses everything is not hammered in a busy loop.
var sendBackoff = 10 * time.Millisecond

// maxLead caps loop.lead, and so the CPU spent spinning before a send.
const maxLead = int64(200 * time.Microsecond)

// rcvBuf is the receive buffer asked for each socket: ~5000 answers.
const rcvBuf = 4 << 20

// inflight is the state of one query ID.
type inflight struct {
	intended, t0 int64 // intended and actual send times (ns since run.base)
	name         int32
	state        uint8
}

type sentRec struct {
	t0 int64
	id uint16
}

type quarRec struct {
	at int64 // when the ID may be reused
	id uint16
}

// counters are one loop's measurements; only the loop writes them until
// Run has waited for it.
type counters struct {
	hist, histU          *hdr.Histogram // corrected, uncorrected (open loop only)
	sent, responses, ok  int64
	bytesSent, bytesRecv int64
	rcodes               [16]int64
	errs                 Errors
}

type loop struct {
	ep epoll.Poller
	counters
	r  *run
	fd int
	k  int // queries in flight: exactly (closed loop) or at most (open loop)

	interval float64 // open loop: ns between this loop's sends
	phase    float64
	seq      int64 // open loop: index of the next send
	nextAt   int64 // open loop: intended time of the next send

	q           []inflight // by ID
	free        ring[uint16]
	quar        ring[quarRec]
	sent        ring[sentRec]
	outstanding int
	nameNext    int

	// lead is how much earlier than due an open loop asks to be woken
	// before a send: a moving average of how late timed wake-ups come
	// (tens of µs on VMs, where an idle vCPU must be rescheduled). Waking
	// early, the loop spins (polling the socket) until the send is due.
	lead, maxLead int64

	blocked      bool  // the last send said EAGAIN
	backoffUntil int64 // closed loop: no sends before this, after a failed send
	lastGo       int64

	parser dnsmessage.Parser
	sbuf   []byte
	rbuf   []byte
}

// newLoop makes loop idx of nloops, with k queries in flight.
func newLoop(r *run, idx, nloops, k int) (*loop, error) {
	l := &loop{r: r, fd: -1, k: k, q: make([]inflight, 1<<16)}
	l.hist = stats.NewHistogram()
	if r.o.QPS > 0 {
		l.histU = stats.NewHistogram()
		// QPS/nloops each, phases spread over one interval.
		l.interval = float64(nloops) / r.o.QPS * 1e9
		l.phase = l.interval * float64(idx) / float64(nloops)
		l.nextAt = int64(l.phase)
		// Spinning before sends may take at most a quarter of the time:
		// at high rates sends are too close for the CPU to idle deeply
		// anyway, and a client busy spinning would be its own bottleneck.
		l.maxLead = min(maxLead, int64(l.interval/4))
	}
	l.free.init(1 << 16)
	for id := range 1 << 16 {
		l.free.push(uint16(id))
	}
	l.quar.init(1 << 16)
	l.sent.init(1024)
	l.nameNext = idx * r.qs.len() / nloops // spread the loops over the names
	l.sbuf = make([]byte, 512)
	l.rbuf = make([]byte, 64<<10)

	family := unix.AF_INET
	if r.addr.Addr().Is6() {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %v", err)
	}
	l.fd = fd
	// Room for a burst of answers while the loop is descheduled: the
	// client must not be where answers are dropped. Above rmem_max only
	// with CAP_NET_ADMIN (SO_RCVBUFFORCE); this socket only, no sysctl.
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvBuf) != nil {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvBuf)
	}
	if err := unix.Connect(fd, sockaddr(r.addr)); err != nil {
		l.Close()
		return nil, fmt.Errorf("connect %s: %v", r.addr, err)
	}
	if err := l.ep.Init(); err != nil {
		l.Close()
		return nil, err
	}
	// Level-triggered, for input only (and errors).
	if err := l.ep.Ctl(unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: 0}); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// Wake interrupts the loop's epoll wait.
func (l *loop) Wake() { l.ep.Wake() }

// Close releases the descriptors; only after Run returned.
func (l *loop) Close() {
	if l.fd >= 0 {
		unix.Close(l.fd)
		l.fd = -1
	}
	l.ep.Close()
}

func (l *loop) Run() {
	r := l.r
	// Open-loop sends wait in epoll_pwait2 until their intended time, and
	// every µs they are late counts in the corrected latency. The kernel
	// stretches such a timeout by the thread's timer slack (50 µs by
	// default): a slack of 1 ns, which needs the goroutine on its own
	// thread, took the median lateness from 114 to 62 µs on a 2-vCPU VM;
	// the rest is the wake-up from idle, which lead takes care of.
	if l.interval > 0 {
		runtime.LockOSThread()
		if unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0) == nil {
			defer unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0) // back to the default
		}
		defer runtime.UnlockOSThread()
	}
	for !r.stop.Load() {
		now := r.now()
		l.blocked = false
		l.expire(now)
		l.fill(now)
		at, isSend := l.nextWake(now)
		ns := at - r.now()
		if isSend {
			ns -= l.lead // wake early; the rest is spun below
		}
		var t0 int64
		if isSend && ns > 0 {
			t0 = r.now()
		}
		n := l.ep.Wait(max(0, ns))
		if t0 > 0 && n == 0 {
			// Woke by the timeout: learn how late such wake-ups are.
			late := min(max(r.now()-(t0+ns), 0), l.maxLead)
			l.lead += (late - l.lead) / 8
		}
		readable := false
		for i := range n {
			if l.ep.Events[i].Fd < 0 {
				l.ep.DrainWake()
			} else {
				readable = true
			}
		}
		if readable {
			l.drain()
		}
		l.yield()
	}
	if observer != nil {
		for i := range l.q {
			if st := &l.q[i]; st.state == idLive {
				observer.inFlight(r, st.intended, st.t0)
			}
		}
		for seq := l.seq; l.interval > 0; seq++ {
			at := int64(l.phase + float64(seq)*l.interval)
			if at >= r.measTo {
				break
			}
			observer.unsent(r, at)
		}
	}
}

// yield passes through the Go scheduler every few ms (see engine/sched.go
// and httpload's loop: a goroutine that only makes syscalls otherwise
// loses its P to sysmon mid-syscall).
func (l *loop) yield() {
	now := l.r.now()
	if now-l.lastGo >= int64(4*time.Millisecond) {
		l.lastGo = now
		runtime.Gosched()
	}
}

// nextWake is when the loop has something to do without a packet coming,
// and whether that is an open-loop send.
func (l *loop) nextWake(now int64) (int64, bool) {
	r := l.r
	next := now + int64(time.Second)
	if l.blocked {
		return now + int64(50*time.Microsecond), false
	}
	if l.sent.n > 0 {
		next = min(next, l.sent.front().t0+r.timeout)
	}
	if l.outstanding < l.k {
		switch {
		case l.free.n == 0 && l.quar.n > 0:
			next = min(next, l.quar.front().at)
		case l.interval > 0:
			if l.nextAt <= next {
				return l.nextAt, true
			}
		case l.backoffUntil > now:
			next = min(next, l.backoffUntil)
		}
	}
	return next, false
}

// expire times out the queries whose answer is overdue and frees the IDs
// whose quarantine is over.
func (l *loop) expire(now int64) {
	r := l.r
	for l.sent.n > 0 {
		s := l.sent.front()
		st := &l.q[s.id]
		if st.state != idLive || st.t0 != s.t0 {
			l.sent.pop() // answered
			continue
		}
		if now-s.t0 < r.timeout {
			break
		}
		l.sent.pop()
		st.state = idQuarantined
		l.quar.push(quarRec{at: now + r.timeout, id: s.id})
		l.outstanding--
		if r.inWindow(now) && !r.stop.Load() {
			l.errs.Timeout++
			l.noteFirst(r.timeoutMsg)
		}
	}
	for l.quar.n > 0 && l.quar.front().at <= now {
		id := l.quar.pop().id
		l.q[id].state = idFree
		l.free.push(id)
	}
}

// fill sends what is due: up to k in flight in a closed loop, the
// schedule (capped at k in flight) in an open loop.
func (l *loop) fill(now int64) {
	for l.outstanding < l.k && l.free.n > 0 && !l.blocked {
		intended := now
		if l.interval > 0 {
			if l.nextAt > now {
				return
			}
			intended = l.nextAt
		} else if now < l.backoffUntil {
			return
		}
		if !l.send(intended) {
			return
		}
		if l.interval > 0 {
			l.seq++
			l.nextAt = int64(l.phase + float64(l.seq)*l.interval)
		}
		now = l.r.now()
	}
}

// send sends the next name's query; false when the socket said EAGAIN
// (the query is not sent and stays due).
func (l *loop) send(intended int64) bool {
	r := l.r
	name := l.nameNext
	pkt := r.qs.packet(name)
	id := l.free.pop()
	b := l.sbuf[:len(pkt)]
	copy(b, pkt)
	b[0], b[1] = byte(id>>8), byte(id)
	var t0 int64
	var err error
	for try := 0; ; try++ {
		t0 = r.now()
		_, err = unix.Write(l.fd, b)
		if (err == unix.ECONNREFUSED && try == 0) || err == unix.EINTR {
			// A pending ICMP error of an earlier packet, reported on
			// this send: this one was not sent yet.
			if err == unix.ECONNREFUSED {
				l.noteICMP(t0, err)
			}
			continue
		}
		break
	}
	if err == unix.EAGAIN || err == unix.ENOBUFS {
		l.free.pushFront(id)
		l.blocked = true
		return false
	}
	if l.nameNext++; l.nameNext == r.qs.len() {
		l.nameNext = 0
	}
	if err != nil {
		l.free.push(id)
		if r.inWindow(t0) && !r.stop.Load() {
			l.errs.Send++
			if l.errs.First == "" {
				l.errs.First = "send to " + r.addr.String() + ": " + err.Error()
			}
		}
		l.backoffUntil = t0 + int64(sendBackoff)
		return true
	}
	st := &l.q[id]
	st.intended, st.t0, st.name, st.state = intended, t0, int32(name), idLive
	l.sent.push(sentRec{t0: t0, id: id})
	l.outstanding++
	if observer != nil {
		observer.sent(r, intended, t0)
	}
	if r.inWindow(t0) {
		l.counters.sent++
		l.bytesSent += int64(len(b))
	}
	return true
}

// drain reads every response queued on the socket; in a closed loop each
// answer sends the next query at once.
func (l *loop) drain() {
	r := l.r
	for {
		n, err := unix.Read(l.fd, l.rbuf)
		now := r.now()
		switch err {
		case nil:
		case unix.EAGAIN:
			return
		case unix.EINTR:
			continue
		case unix.ECONNREFUSED, unix.EHOSTUNREACH, unix.ENETUNREACH:
			l.noteICMP(now, err)
			continue
		default:
			if r.inWindow(now) && !r.stop.Load() {
				if l.errs.First == "" {
					l.errs.First = "receive from " + r.addr.String() + ": " + err.Error()
				}
			}
			return
		}
		l.handle(l.rbuf[:n], now)
		l.fill(now)
	}
}

// handle matches a response to its query and accounts it.
func (l *loop) handle(b []byte, now int64) {
	r := l.r
	count := r.inWindow(now) && !r.stop.Load()
	if len(b) < 12 {
		if count {
			l.errs.Malformed++
			l.noteFirst("malformed response (shorter than a DNS header)")
		}
		return
	}
	id := uint16(b[0])<<8 | uint16(b[1])
	st := &l.q[id]
	switch st.state {
	case idQuarantined:
		if count {
			l.errs.Late++
		}
		return
	case idFree:
		if count {
			l.errs.Stray++
		}
		return
	}
	rcode, v := check(&l.parser, b, r.qs.packet(int(st.name)))
	switch v {
	case vMalformed:
		if count {
			l.errs.Malformed++
			if l.errs.First == "" {
				l.errs.First = "malformed response for " + r.names[st.name]
			}
		}
		return
	case vStray:
		if count {
			l.errs.Stray++
		}
		return
	}
	// The query ends here.
	if observer != nil {
		observer.answered(r, st.intended, st.t0, now)
	}
	st.state = idFree
	l.free.push(id)
	l.outstanding--
	if !count {
		return
	}
	if now-st.t0 >= r.timeout {
		// Overdue, not yet expired: lost, never a latency.
		l.errs.Timeout++
		l.errs.Late++
		l.noteFirst(r.timeoutMsg)
		return
	}
	l.responses++
	l.bytesRecv += int64(len(b))
	l.rcodes[rcode&15]++
	switch v {
	case vOK:
		l.ok++
	case vRcode:
		l.errs.Rcode++
		if l.errs.First == "" {
			l.errs.First = rcodeName(rcode) + " for " + r.names[st.name]
		}
	case vNoAnswer:
		l.errs.NoAnswer++
		if l.errs.First == "" {
			l.errs.First = "no A record in the answer for " + r.names[st.name]
		}
	}
	stats.Record(l.hist, time.Duration(now-st.intended))
	if l.histU != nil {
		stats.Record(l.histU, time.Duration(now-st.t0))
	}
}

func (l *loop) noteICMP(now int64, err error) {
	r := l.r
	if r.inWindow(now) && !r.stop.Load() {
		l.errs.ICMP++
		if l.errs.First == "" {
			l.errs.First = "ICMP error from " + r.addr.String() + ": " + err.Error()
		}
	}
}

// noteFirst keeps msg if it is the first error; messages built per packet
// are only built when First is empty, so errors cost no allocation.
func (l *loop) noteFirst(msg string) {
	if l.errs.First == "" {
		l.errs.First = msg
	}
}

// ring is a FIFO; push grows it when full.
type ring[T any] struct {
	buf     []T
	head, n int
}

func (q *ring[T]) init(size int) { q.buf = make([]T, size) }

func (q *ring[T]) front() T { return q.buf[q.head] }

func (q *ring[T]) pop() T {
	v := q.buf[q.head]
	q.head++
	if q.head == len(q.buf) {
		q.head = 0
	}
	q.n--
	return v
}

func (q *ring[T]) push(v T) {
	if q.n == len(q.buf) {
		q.grow()
	}
	i := q.head + q.n
	if i >= len(q.buf) {
		i -= len(q.buf)
	}
	q.buf[i] = v
	q.n++
}

func (q *ring[T]) pushFront(v T) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.head--
	if q.head < 0 {
		q.head = len(q.buf) - 1
	}
	q.buf[q.head] = v
	q.n++
}

func (q *ring[T]) grow() {
	nb := make([]T, 2*len(q.buf))
	for i := range q.n {
		j := q.head + i
		if j >= len(q.buf) {
			j -= len(q.buf)
		}
		nb[i] = q.buf[j]
	}
	q.buf, q.head = nb, 0
}
