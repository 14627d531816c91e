package engine

import (
	"sync"

	"golang.org/x/sys/unix"
)

// fdSet tracks open sockets so that another goroutine can shutdown() them:
// that wakes a thread blocked in recv, send, connect or accept at once,
// which closing the fd would not. Fds are only closed under the lock, so a
// shutdown never hits a recycled fd number.
type fdSet struct {
	mu     sync.Mutex
	fds    map[int]struct{}
	closed bool
}

// add registers fd; it returns false (and closes fd) once the set is shut.
func (s *fdSet) add(fd int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = unix.Close(fd)
		return false
	}
	if s.fds == nil {
		s.fds = make(map[int]struct{})
	}
	s.fds[fd] = struct{}{}
	return true
}

// close unregisters and closes fd.
func (s *fdSet) close(fd int) {
	s.mu.Lock()
	delete(s.fds, fd)
	_ = unix.Close(fd)
	s.mu.Unlock()
}

// shutdown wakes every blocked user of the set and refuses new fds.
func (s *fdSet) shutdown() {
	s.mu.Lock()
	s.closed = true
	for fd := range s.fds {
		_ = unix.Shutdown(fd, unix.SHUT_RDWR)
	}
	s.mu.Unlock()
}

// shutdownFD wakes the users of one registered fd.
func (s *fdSet) shutdownFD(fd int) {
	s.mu.Lock()
	if _, ok := s.fds[fd]; ok {
		_ = unix.Shutdown(fd, unix.SHUT_RDWR)
	}
	s.mu.Unlock()
}

// closeAll closes whatever is still registered.
func (s *fdSet) closeAll() {
	s.mu.Lock()
	s.closed = true
	for fd := range s.fds {
		_ = unix.Close(fd)
	}
	s.fds = nil
	s.mu.Unlock()
}
