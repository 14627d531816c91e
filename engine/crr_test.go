package engine

import (
	"io"
	"net"
	"strconv"
	"testing"
	"time"
)

// The TCP_CRR server answers and closes first, as netserver does: the
// client sees the response and then EOF without closing anything itself.
func TestCRRServerClosesFirst(t *testing.T) {
	s := startServer(t, 0)
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port(TCPCRR))))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := make([]byte, hdrLen+1)
	h := tcpHello{test: TCPCRR, session: 1, msgSize: 1}
	h.put(req)
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	resp := make([]byte, 8)
	if _, err := io.ReadFull(c, resp[:1]); err != nil {
		t.Fatalf("response: %v", err)
	}
	if n, err := c.Read(resp); err != io.EOF {
		t.Fatalf("after the response: %d bytes, %v; want EOF (the server closes first)", n, err)
	}
}

// Clients that connect and send nothing, more of them than CRR workers,
// are handed threads of their own: the others still get served.
func TestCRRSilentClientsDoNotBlock(t *testing.T) {
	s := startServer(t, 0)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port(TCPCRR)))
	for range 8 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	r := run(t, opts(s, TCPCRR, 500*time.Millisecond))
	if r.Transactions < 10 || r.Errors != 0 || r.Stalled || r.PortExhaustion {
		t.Errorf("CRR beside silent clients: %d transactions, %d errors, stalled %v (gap %.2fs), exhausted %v",
			r.Transactions, r.Errors, r.Stalled, r.LongestGapSec, r.PortExhaustion)
	}
}
