package engine

import (
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// Session table bounds: sessions idle for sessionTTL are dropped when the
// table grows past sessionSweep entries; past maxSessions new ones are
// ignored, so a flood of session ids cannot exhaust memory.
const (
	sessionTTL   = time.Minute
	sessionSweep = 256
	maxSessions  = 4096
)

// udpSession is the server's view of one UDP_STREAM session (a run's
// warmup or measured part).
type udpSession struct {
	streams     map[uint32]*seqTracker
	bytes       uint64
	seen        uint64    // data datagrams, dropped ones included (dropEvery)
	first, last time.Time // first datagram (session creation), last counted
}

type udpSessions struct {
	m      map[uint64]*udpSession
	lastID uint64
	lastS  *udpSession
}

func (t *udpSessions) get(id uint64, now time.Time, create bool) *udpSession {
	if t.lastS != nil && t.lastID == id {
		return t.lastS
	}
	s := t.m[id]
	if s == nil {
		if !create {
			return nil
		}
		if t.m == nil {
			t.m = make(map[uint64]*udpSession)
		}
		if len(t.m) >= sessionSweep {
			for k, v := range t.m {
				if now.Sub(v.last) > sessionTTL {
					delete(t.m, k)
				}
			}
		}
		if len(t.m) >= maxSessions {
			return nil
		}
		s = &udpSession{streams: make(map[uint32]*seqTracker), first: now}
		t.m[id] = s
	}
	t.lastID, t.lastS = id, s
	return s
}

// data accounts one data datagram of n bytes; false when dropEvery
// made it ignore the datagram.
func (s *udpSession) data(h udpHdr, n int, now time.Time, dropEvery uint64) bool {
	s.seen++
	if dropEvery > 0 && s.seen%dropEvery == 0 {
		return false
	}
	st := s.streams[h.stream]
	if st == nil {
		st = &seqTracker{}
		s.streams[h.stream] = st
	}
	st.add(h.seq)
	s.bytes += uint64(n)
	s.last = now
	return true
}

func (s *udpSession) report() udpReport {
	var r udpReport
	if s == nil {
		return r
	}
	for _, st := range s.streams {
		r.packets += st.received
		r.outOfOrder += st.outOfOrder
	}
	r.bytes = s.bytes
	r.firstNs = s.first.UnixNano()
	r.lastNs = r.firstNs + s.last.Sub(s.first).Nanoseconds()
	return r
}

// recvNext waits for the next datagram on a UDP server's socket, yielding
// the thread now and then, and retries what is transient; ok is false when
// the server is closing or the socket failed (the failure sent to errc).
func (s *Server) recvNext(l *listener, buf []byte, from *peer, y *yielder, errc chan<- error) (n int, ok bool) {
	for {
		y.tick()
		n, err := recvFrom(l.fd, buf, from)
		if s.closing.Load() {
			return 0, false
		}
		if err == nil {
			return n, true
		}
		if !retryable(err) && err != unix.ECONNREFUSED {
			fail(errc, fmt.Errorf("%s server: recv on %s: %w", l.test, l.addr, err))
			return 0, false
		}
	}
}

// udpStreamServer counts UDP_STREAM datagrams per session on one thread (as
// iperf3's receiver) and answers hellos and report requests.
func (s *Server) udpStreamServer(l *listener, errc chan<- error) {
	defer s.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := make([]byte, 65536)
	out := make([]byte, reportLen)
	var from peer
	var sessions udpSessions
	var y yielder
	for {
		n, ok := s.recvNext(l, buf, &from, &y, errc)
		if !ok {
			return
		}
		h, ok := parseUDPHdr(buf[:n])
		if !ok {
			continue
		}
		now := time.Now()
		switch h.kind {
		case kindData:
			if ss := sessions.get(h.session, now, true); ss != nil {
				kept := ss.data(h, n, now, s.dropEvery)
				if s.dropEvery > 0 {
					s.dataSeen.Add(1)
					if !kept {
						s.dropsInjected.Add(1)
					}
				}
			}
		case kindHello:
			h.kind = kindHelloAck
			h.put(out)
			_, _ = sendTo(l.fd, out[:hdrLen], &from)
		case kindReportReq:
			rep := sessions.get(h.session, now, false).report()
			h.kind = kindReport
			h.put(out)
			rep.put(out[hdrLen:])
			_, _ = sendTo(l.fd, out[:reportLen], &from)
		}
	}
}
