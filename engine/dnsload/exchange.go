package dnsload

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// Answer is the response to one Query.
type Answer struct {
	Rcode string        `json:"rcode"`       // "NOERROR", "NXDOMAIN", ...
	A     []netip.Addr  `json:"a,omitempty"` // the A records of the answer section
	RTT   time.Duration `json:"rtt"`
}

// Query sends one A query for name to server over UDP and waits up to
// timeout for its response: a readiness probe and a debugging aid (the
// load engine itself is Run). Any RCODE is an Answer; the error is for no
// response, in one line.
func Query(ctx context.Context, server netip.AddrPort, name string, timeout time.Duration) (*Answer, error) {
	pkt, err := appendQuery(nil, name, uint16(time.Now().UnixNano()))
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	resp, err := exchange(ctx, server, pkt, timeout)
	if err != nil {
		return nil, fmt.Errorf("dnsload: %w", err)
	}
	a := &Answer{RTT: time.Since(t0)}
	var p dnsmessage.Parser
	h, err := p.Start(resp)
	if err != nil {
		return nil, fmt.Errorf("dnsload: malformed response from %s: %v", server, err)
	}
	a.Rcode = rcodeName(int(h.RCode))
	if err := p.SkipAllQuestions(); err != nil {
		return nil, fmt.Errorf("dnsload: malformed response from %s: %v", server, err)
	}
	for {
		ah, err := p.AnswerHeader()
		if err == dnsmessage.ErrSectionDone {
			return a, nil
		}
		if err != nil {
			return nil, fmt.Errorf("dnsload: malformed response from %s: %v", server, err)
		}
		if ah.Type != dnsmessage.TypeA || ah.Class != dnsmessage.ClassINET {
			if err := p.SkipAnswer(); err != nil {
				return nil, fmt.Errorf("dnsload: malformed response from %s: %v", server, err)
			}
			continue
		}
		ar, err := p.AResource()
		if err != nil {
			return nil, fmt.Errorf("dnsload: malformed response from %s: %v", server, err)
		}
		a.A = append(a.A, netip.AddrFrom4(ar.A))
	}
}

// exchange sends query and returns the first response to it (same ID and
// question, any RCODE) within timeout, or a one-line error naming server.
func exchange(ctx context.Context, server netip.AddrPort, query []byte, timeout time.Duration) ([]byte, error) {
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(server))
	if err != nil {
		return nil, fmt.Errorf("cannot query %s: %v", server, rootErr(err))
	}
	defer c.Close()
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	if _, err := c.Write(query); err != nil {
		return nil, fmt.Errorf("cannot query %s: %v", server, rootErr(err))
	}
	var p dnsmessage.Parser
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, syscall.ECONNREFUSED) {
				return nil, fmt.Errorf("no answer from %s: connection refused (ICMP port unreachable: is a DNS server listening there?)", server)
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, fmt.Errorf("no answer from %s within %s", server, timeout)
			}
			return nil, fmt.Errorf("no answer from %s: %v", server, rootErr(err))
		}
		resp := buf[:n]
		if n < 12 || resp[0] != query[0] || resp[1] != query[1] {
			continue
		}
		if _, v := check(&p, resp, query); v == vStray || v == vMalformed {
			continue
		}
		return resp, nil
	}
}

// rootErr strips net's wrapping down to the cause, for one-line messages
// that name the address once.
func rootErr(err error) error {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}
