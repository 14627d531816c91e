package engine

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// UDP_RR peers: a client address silent for peerIdle loses its socket;
// beyond maxPeers the shared socket answers everyone itself.
const (
	peerIdle = 10 * time.Second
	maxPeers = 1024
)

// UDP_RR serving, netserver style: one thread per client flow sleeping in a
// blocking recvfrom. UDP has no accept, so the thread reading the port's
// socket echoes a new client's first datagram itself, then opens a socket
// bound to the same local address and connected to that client; the kernel
// delivers the client's later datagrams to the connected socket (it matches
// more of the 4-tuple), whose own thread echoes them. Sharing one socket
// among a pool of threads instead measured up to 3x slower with 2 flows:
// the kernel wakes a different thread each time.
//
// Echoing is stateless, so a stray datagram that lands on another
// client's socket (only possible in the instant between bind and connect)
// is still echoed to its sender.
type udpPeer struct {
	key      string
	fd       int
	activity atomic.Uint64 // datagrams served, for the idle check
	lastSeen uint64        // janitor only
	idleFor  int           // janitor only: ticks without activity
	expired  atomic.Bool
}

type udpPeers struct {
	mu sync.Mutex
	m  map[string]*udpPeer
}

func (s *Server) udpRRServer(l *listener, errc chan<- error) {
	defer s.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	peers := &udpPeers{m: make(map[string]*udpPeer)}
	s.wg.Add(1)
	go s.udpPeerJanitor(peers)
	buf := make([]byte, 65536)
	var from peer
	var y yielder
	for {
		n, ok := s.recvNext(l, buf, &from, &y, errc)
		if !ok {
			return
		}
		_, _ = sendTo(l.fd, buf[:n], &from)
		key := string(unsafe.Slice((*byte)(unsafe.Pointer(&from.sa)), from.len))
		peers.mu.Lock()
		_, known := peers.m[key]
		full := len(peers.m) >= maxPeers
		peers.mu.Unlock()
		if known || full {
			continue
		}
		fd, err := peerSocket(l, &from)
		if err != nil {
			continue
		}
		if !s.conns.add(fd) {
			return
		}
		p := &udpPeer{key: key, fd: fd}
		peers.mu.Lock()
		peers.m[key] = p
		peers.mu.Unlock()
		s.wg.Add(1)
		go s.udpPeerWorker(p, peers)
	}
}

// peerSocket opens a UDP socket on l's local address connected to to.
func peerSocket(l *listener, to *peer) (int, error) {
	fd, err := newSocket(int(l.local.sa.Addr.Family), unix.SOCK_DGRAM, false)
	if err != nil {
		return -1, err
	}
	err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err == nil && l.dual {
		err = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0)
	}
	if err == nil {
		err = rawAddrCall(unix.SYS_BIND, fd, &l.local)
	}
	if err == nil {
		err = rawAddrCall(unix.SYS_CONNECT, fd, to)
	}
	if err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// rawAddrCall is bind(2) or connect(2) with a raw address.
func rawAddrCall(trap uintptr, fd int, a *peer) error {
	_, _, e := unix.Syscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&a.sa)), uintptr(a.len))
	if e != 0 {
		return e
	}
	return nil
}

// udpPeerWorker echoes one client's datagrams until the socket is shut down
// (server closing, or the janitor found the client idle).
func (s *Server) udpPeerWorker(p *udpPeer, peers *udpPeers) {
	defer s.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer func() {
		peers.mu.Lock()
		delete(peers.m, p.key)
		peers.mu.Unlock()
		s.conns.close(p.fd)
	}()
	buf := make([]byte, 65536)
	var from peer
	var y yielder
	for {
		y.tick()
		n, err := recvFrom(p.fd, buf, &from)
		if s.closing.Load() || p.expired.Load() {
			return
		}
		if err != nil {
			// ECONNREFUSED: an ICMP error for an earlier echo (the
			// client went away); the janitor will expire us.
			if err == unix.EINTR || err == unix.ECONNREFUSED {
				continue
			}
			return
		}
		p.activity.Add(1)
		_, _ = sendTo(p.fd, buf[:n], &from)
	}
}

// udpPeerJanitor shuts down the sockets of clients idle for peerIdle.
func (s *Server) udpPeerJanitor(peers *udpPeers) {
	defer s.wg.Done()
	const tick = time.Second
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		peers.mu.Lock()
		for _, p := range peers.m {
			a := p.activity.Load()
			if a != p.lastSeen {
				p.lastSeen, p.idleFor = a, 0
				continue
			}
			p.idleFor++
			if time.Duration(p.idleFor)*tick >= peerIdle && !p.expired.Load() {
				p.expired.Store(true)
				s.conns.shutdownFD(p.fd)
			}
		}
		peers.mu.Unlock()
	}
}
