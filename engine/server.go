package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Server is the receiving side of every test, one fixed port per test so a
// client (or a Service VIP) needs no control connection. Like netserver it
// serves each TCP connection on its own OS thread with blocking raw
// sockets: a pool of threads all blocked in accept(), grown whenever the
// last idle one takes a connection. TCP_STREAM is the exception, as with
// iperf3: a session's streams are read by one loop (server_stream.go).
//
// Use: Listen (optional: binds every port, so errors such as "address
// already in use" come back before anything runs), then Serve until ctx is
// done. Ready is closed once the ports are bound. A Server is single-use.
type Server struct {
	// Bind is the IP to listen on; "" listens on all addresses (IPv6
	// dual-stack, or IPv4 only where IPv6 is unavailable).
	Bind string
	// Ports maps a test to its port; nil or a missing test means
	// DefaultPort. 0 picks a free port (see Port); a negative port turns
	// that test off.
	Ports map[Test]int

	// dropEvery makes the UDP_STREAM server ignore every Nth data datagram
	// of a session; tests use it to check loss accounting end to end.
	dropEvery uint64
	// dataSeen and dropsInjected count, while dropEvery is set, the data
	// datagrams the UDP_STREAM server read and those it then ignored: on a
	// busy host the kernel drops more (the receiver's socket buffer fills
	// while its thread waits for a CPU), and a test tells the two apart
	// with these and the socket's own drop counter.
	dataSeen, dropsInjected atomic.Uint64

	mu       sync.Mutex
	ready    chan struct{}
	ls       []*listener
	listened bool
	serving  bool

	closing atomic.Bool
	done    chan struct{} // closed when Serve starts shutting down
	conns   fdSet         // accepted connections, shut down on exit
	streams streamLoops   // TCP_STREAM's reader loop per client session
	wg      sync.WaitGroup
}

// listener is one bound test port and its worker pool.
type listener struct {
	test        Test
	fd          int
	port        int
	addr        string
	local       peer // bound address, raw (UDP_RR binds per-client sockets to it)
	dual        bool // IPv6 socket also taking IPv4
	idle, total atomic.Int32
}

// Pool bounds: at most maxWorkers threads per port; a TCP worker whose
// connection ended exits if more than maxSpare others are idle.
const (
	maxWorkers    = 2048
	maxSpare      = 16
	listenBacklog = 4096
	tcpServerBuf  = 128 << 10 // iperf3's default read size
)

// Ready is closed once Listen has bound every port.
func (s *Server) Ready() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready == nil {
		s.ready = make(chan struct{})
	}
	return s.ready
}

// Port returns the port test is bound to, or 0 if it is not listening.
func (s *Server) Port(t Test) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.ls {
		if l.test == t {
			return l.port
		}
	}
	return 0
}

// Listen binds every test's port (SO_REUSEADDR, backlog 4096 for TCP). On
// error nothing stays open and the error names the test and address.
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listened {
		return errors.New("engine: server is already listening")
	}
	for _, t := range Tests {
		port, ok := s.Ports[t]
		if !ok {
			port = DefaultPort[t]
		}
		if port < 0 {
			continue
		}
		l, err := listen(s.Bind, t, port)
		if err != nil {
			for _, l := range s.ls {
				_ = unix.Close(l.fd)
			}
			s.ls = nil
			return err
		}
		s.ls = append(s.ls, l)
	}
	s.listened = true
	if s.ready == nil {
		s.ready = make(chan struct{})
	}
	close(s.ready)
	return nil
}

// Serve serves every test until ctx is done, then closes every socket,
// waits for every worker thread and returns nil. It calls Listen first if
// that has not been done. A listener that fails returns its error.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	listened, serving := s.listened, s.serving
	s.serving = true
	s.mu.Unlock()
	if serving {
		return errors.New("engine: server is already serving")
	}
	if !listened {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	spareP()
	s.done = make(chan struct{})
	errc := make(chan error, len(s.ls))
	for _, l := range s.ls {
		switch l.test {
		case UDPStream:
			s.wg.Add(1)
			go s.udpStreamServer(l, errc)
		case UDPRR:
			s.wg.Add(1)
			go s.udpRRServer(l, errc)
		case TCPCRR:
			s.startCRR(l, errc)
		default:
			s.spawn(l, s.tcpWorker, errc)
		}
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	// shutdown() wakes threads blocked in accept or recv on these fds.
	s.closing.Store(true)
	close(s.done)
	for _, l := range s.ls {
		_ = unix.Shutdown(l.fd, unix.SHUT_RDWR)
	}
	s.conns.shutdown()
	s.wg.Wait()
	for _, l := range s.ls {
		_ = unix.Close(l.fd)
	}
	s.conns.closeAll()
	return err
}

// spawn starts one more worker on l unless the server is closing or the
// pool is full.
func (s *Server) spawn(l *listener, worker func(*listener, chan<- error), errc chan<- error) {
	if s.closing.Load() || l.total.Add(1) > maxWorkers {
		l.total.Add(-1)
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer l.total.Add(-1)
		worker(l, errc)
	}()
}

// fail reports a listener's fatal error to Serve without blocking.
func fail(errc chan<- error, err error) {
	select {
	case errc <- err:
	default:
	}
}

// listen opens one test's socket.
func listen(bind string, t Test, port int) (*listener, error) {
	sotype := unix.SOCK_STREAM
	if t == UDPStream || t == UDPRR {
		sotype = unix.SOCK_DGRAM
	}
	shown := bind
	if shown == "" {
		shown = "*"
	}
	addr := net.JoinHostPort(shown, strconv.Itoa(port))
	wrap := func(what string, err error) error {
		return fmt.Errorf("%s server: %s %s: %w", t, what, addr, err)
	}
	var family int
	var sa unix.Sockaddr
	if bind == "" {
		family, sa = unix.AF_INET6, &unix.SockaddrInet6{Port: port}
	} else {
		ip := net.ParseIP(bind)
		if ip == nil {
			return nil, wrap("listen on", fmt.Errorf("bind address %q is not an IP", bind))
		}
		family, sa = sockaddr(ip, port)
	}
	fd, err := newSocket(family, sotype, false)
	if err == unix.EAFNOSUPPORT && bind == "" {
		family, sa = unix.AF_INET, &unix.SockaddrInet4{Port: port}
		fd, err = newSocket(family, sotype, false)
	}
	if err != nil {
		return nil, wrap("socket for", err)
	}
	bad := func(what string, err error) (*listener, error) {
		_ = unix.Close(fd)
		return nil, wrap(what, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return bad("SO_REUSEADDR on", err)
	}
	if bind == "" && family == unix.AF_INET6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0); err != nil {
			return bad("IPV6_V6ONLY on", err)
		}
	}
	if err := unix.Bind(fd, sa); err != nil {
		return bad("listen on", err)
	}
	if sotype == unix.SOCK_STREAM {
		if err := unix.Listen(fd, listenBacklog); err != nil {
			return bad("listen on", err)
		}
	}
	l := &listener{test: t, fd: fd, dual: bind == "" && family == unix.AF_INET6}
	l.local.len = unix.SizeofSockaddrAny
	if _, _, e := unix.Syscall(unix.SYS_GETSOCKNAME, uintptr(fd),
		uintptr(unsafe.Pointer(&l.local.sa)), uintptr(unsafe.Pointer(&l.local.len))); e != 0 {
		return bad("getsockname of", e)
	}
	got, err := unix.Getsockname(fd)
	if err != nil {
		return bad("getsockname of", err)
	}
	switch a := got.(type) {
	case *unix.SockaddrInet4:
		port = a.Port
	case *unix.SockaddrInet6:
		port = a.Port
	}
	addr = net.JoinHostPort(shown, strconv.Itoa(port))
	l.port, l.addr = port, addr
	return l, nil
}

// retryable reports errors after which a server loop should carry on,
// briefly pausing on resource exhaustion.
func retryable(err error) bool {
	switch err {
	case unix.EINTR, unix.ECONNABORTED, unix.EPROTO, unix.EAGAIN:
		return true
	case unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM:
		time.Sleep(10 * time.Millisecond)
		return true
	}
	return false
}
