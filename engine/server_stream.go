package engine

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cnibench/cnibench/engine/internal/epoll"
	"golang.org/x/sys/unix"
)

// The TCP_STREAM server reads every stream of one client session from one
// thread, each ready socket in turn, as iperf3's server does with select():
// the worker that accepted a stream hands it over and goes back to
// accept. It mirrors the client's pump (streampump.go).
//
// Why: with a goroutine per stream on Go's netpoller, the receiving CPU
// made 42 syscalls and twice iperf3's context switches per MB (the
// netpoller's epoll_wait, futex wakeups of the parked reader, EAGAIN
// reads); iperf3 made 30 (BENCHMARKS.md, "TCP_STREAM against iperf3").

// streamLoops is the server's set of session reader loops.
type streamLoops struct {
	mu sync.Mutex
	m  map[uint64]*streamLoop
}

// streamLoop reads the streams of one session until the last one ends.
type streamLoop struct {
	session uint64
	live    int         // streams joined and not yet ended; under streamLoops.mu
	ended   atomic.Bool // live fell to 0 outside the loop: Wake makes it exit

	p       epoll.Poller
	mu      sync.Mutex // guards streams: join adds from a worker thread
	streams map[int32]*streamRecv
}

// streamRecv is one stream's receive state.
type streamRecv struct {
	fd       int
	count    int64
	counting bool
	warmEnd  time.Time
}

// joinStream hands a stream whose hello was read (extra bytes of data
// already read behind it) to its session's loop, starting the loop if it
// is the session's first stream. It returns false, leaving fd with the
// caller, if the loop cannot take it.
func (s *Server) joinStream(session uint64, fd, extra int, warmEnd time.Time) bool {
	if unix.SetNonblock(fd, true) != nil {
		return false
	}
	r := &streamRecv{fd: fd, warmEnd: warmEnd, counting: !time.Now().Before(warmEnd)}
	if r.counting {
		r.count = int64(extra)
	}
	ls := &s.streams
	ls.mu.Lock()
	lp := ls.m[session]
	start := lp == nil
	if start {
		lp = &streamLoop{session: session, streams: make(map[int32]*streamRecv)}
		if lp.p.Init() != nil || s.closing.Load() {
			lp.p.Close()
			ls.mu.Unlock()
			return false
		}
		if ls.m == nil {
			ls.m = make(map[uint64]*streamLoop)
		}
		ls.m[session] = lp
		s.wg.Add(1)
	}
	lp.live++
	ls.mu.Unlock()
	if start {
		go func() {
			defer s.wg.Done()
			s.runStreamLoop(lp)
		}()
	}
	// Level-triggered: a stream ready but not read this pass stays ready.
	// Added under lp.mu, which the loop takes to look the stream up.
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)}
	lp.mu.Lock()
	lp.streams[int32(fd)] = r
	err := lp.p.Ctl(unix.EPOLL_CTL_ADD, fd, &ev)
	if err != nil {
		delete(lp.streams, int32(fd))
	}
	lp.mu.Unlock()
	if err != nil {
		if s.leaveLoop(lp) {
			lp.ended.Store(true)
			lp.p.Wake()
		}
		return false
	}
	return true
}

// runStreamLoop waits for readable streams and reads each once per pass,
// up to one read buffer, until the session's last stream has ended.
func (s *Server) runStreamLoop(lp *streamLoop) {
	defer lp.p.Close()
	buf := make([]byte, tcpServerBuf)
	for {
		// Raw while the streams flow, as the client's pump polls: no
		// entry into and exit from the scheduler around each wake-up (one
		// stream, paired rounds: 1.04× iperf3 with it over 71, 0.95× with
		// the scheduler's wait over 26, intervals overlapping;
		// BENCHMARKS.md, 2026-12-03). After
		// 10 ms with nothing to read, an idle session, the scheduler's
		// wait, which gives the P back for as long as it lasts.
		n := lp.p.RawWait(10)
		if n == 0 {
			n = lp.p.Wait(-1)
		}
		for _, ev := range lp.p.Events[:n] {
			if ev.Fd == -1 {
				lp.p.DrainWake()
				if lp.ended.Load() {
					return
				}
				continue
			}
			lp.mu.Lock()
			r := lp.streams[ev.Fd]
			lp.mu.Unlock()
			if r == nil {
				continue // ended earlier in this pass
			}
			if done, ok := r.read(buf); done {
				if s.endStream(lp, r, ok) {
					return
				}
			}
		}
	}
}

// read reads what the socket holds, up to len(buf): iperf3 reads until its
// block is full or the socket is empty. done reports EOF (ok) or a broken
// connection (!ok).
func (r *streamRecv) read(buf []byte) (done, ok bool) {
	got := 0
	for got < len(buf) {
		n, err := rawRead(r.fd, buf[got:])
		if err == unix.EAGAIN || err == unix.EINTR {
			break
		}
		if err != nil {
			return true, false
		}
		if n == 0 {
			r.add(got)
			return true, true
		}
		got += n
	}
	r.add(got)
	return false, true
}

// add counts n bytes read now, if the warmup has passed.
func (r *streamRecv) add(n int) {
	if n == 0 {
		return
	}
	if !r.counting && !time.Now().Before(r.warmEnd) {
		r.counting = true
	}
	if r.counting {
		r.count += int64(n)
	}
}

// endStream answers a stream that reached EOF with its count and the time
// from warmEnd to EOF (a broken one gets nothing: the client reports it),
// closes it and reports whether it was the session's last.
func (s *Server) endStream(lp *streamLoop, r *streamRecv, eof bool) (last bool) {
	if eof {
		ns := max(time.Since(r.warmEnd), 0)
		var trailer [trailLen]byte
		binary.BigEndian.PutUint64(trailer[0:], uint64(r.count))
		binary.BigEndian.PutUint64(trailer[8:], uint64(ns))
		// The send buffer is empty (the client only sent), so 16 bytes fit.
		_, _ = rawWrite(r.fd, trailer[:])
	}
	lp.mu.Lock()
	delete(lp.streams, int32(r.fd))
	lp.mu.Unlock()
	_ = lp.p.Ctl(unix.EPOLL_CTL_DEL, r.fd, nil)
	s.conns.close(r.fd)
	return s.leaveLoop(lp)
}

// leaveLoop counts a stream out of its loop and reports whether it was the
// last; the loop then leaves the set, so the session's next stream (if a
// client reuses the id) starts a new one.
func (s *Server) leaveLoop(lp *streamLoop) bool {
	ls := &s.streams
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if lp.live--; lp.live > 0 {
		return false
	}
	delete(ls.m, lp.session)
	return true
}
