package engine

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// netConn wraps a connected socket in a net.Conn served by Go's netpoller.
// The net.Conn holds its own dup of fd (and makes the shared file
// description non-blocking); fd stays with its owner, so shutdown(fd) from
// an fdSet still wakes the conn's reader or writer.
//
// Why: bulk transfer wants no per-write sleep and wakeup. With one OS thread
// per stream blocked in send(), 4 streams pinned to one CPU reached about
// half of iperf3 -P 4 (one thread multiplexing its sockets). The client's
// streams are written by one pump (streampump.go) and the server's read by
// one loop per session (server_stream.go), both taking turns as iperf3
// does; the client uses its net.Conn only for the hello and the trailer.
// Request/response engines keep blocking sockets: there the wakeup is what
// netperf measures.
func netConn(fd int) (net.Conn, error) {
	dfd, err := unix.Dup(fd)
	if err != nil {
		return nil, fmt.Errorf("dup socket: %w", err)
	}
	unix.CloseOnExec(dfd)
	f := os.NewFile(uintptr(dfd), "socket")
	defer f.Close() // FileConn dups again
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("socket to net.Conn: %w", err)
	}
	return c, nil
}
