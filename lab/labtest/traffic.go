package labtest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
)

// Listeners starts one TCP listener per port in ep's namespace; each
// counts the connections it accepts.
func Listeners(t *testing.T, ep lab.Endpoint, ports []uint16) func() map[uint16]int {
	t.Helper()
	var mu sync.Mutex
	counts := map[uint16]int{}
	for _, p := range ports {
		serve(t, ep, p, func(c net.Conn) {
			c.Close()
			mu.Lock()
			counts[p]++
			mu.Unlock()
		})
	}
	return func() map[uint16]int {
		mu.Lock()
		defer mu.Unlock()
		out := make(map[uint16]int, len(counts))
		for k, v := range counts {
			out[k] = v
		}
		return out
	}
}

// Connect opens n short TCP connections from ep's namespace to addr.
func Connect(t *testing.T, ep lab.Endpoint, addr netip.AddrPort, n int) {
	t.Helper()
	err := netnsx.Do(ep.NetnsPath(), func() error {
		for i := 0; i < n; i++ {
			c, err := net.DialTimeout("tcp4", addr.String(), 2*time.Second)
			if err != nil {
				return fmt.Errorf("connection %d to %s: %w", i, addr, err)
			}
			c.Close()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// CheckBalance waits for n accepts and checks that a uniform choice among
// the ports explains the counts: Pearson's chi-square below 30 (p ≈ 1.5e-6
// with 3 degrees of freedom for 4 endpoints, so a correct layout fails
// about once in 700,000 runs; kube-proxy's probabilities with a bug such
// as 1/n on every rule give a chi-square near 70 at n = 400).
func CheckBalance(t *testing.T, counts func() map[uint16]int, ports []uint16, n int) {
	t.Helper()
	var got map[uint16]int
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got = counts()
		total := 0
		for _, c := range got {
			total += c
		}
		if total == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d connections accepted: %v", total, n, got)
		}
	}
	exp := float64(n) / float64(len(ports))
	chi2 := 0.0
	for _, p := range ports {
		d := float64(got[p]) - exp
		chi2 += d * d / exp
	}
	t.Logf("accepts per endpoint port %v, chi-square %.1f", got, chi2)
	if chi2 > 30 {
		t.Fatalf("unbalanced: %v (chi-square %.1f > 30 for a uniform choice)", got, chi2)
	}
}

// Echo serves TCP on ep:port in ep's namespace, sending back whatever it
// receives, until the test ends.
func Echo(t *testing.T, ep lab.Endpoint, port uint16) {
	t.Helper()
	serve(t, ep, port, func(c net.Conn) {
		go func() {
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			io.Copy(c, c)
		}()
	})
}

// serve listens on ep:port in ep's namespace and hands every accepted
// connection to handle, until the test ends.
func serve(t *testing.T, ep lab.Endpoint, port uint16, handle func(net.Conn)) {
	t.Helper()
	var ln net.Listener
	err := netnsx.Do(ep.NetnsPath(), func() error {
		var err error
		ln, err = net.Listen("tcp4", net.JoinHostPort(ep.IP, strconv.Itoa(int(port))))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			handle(c)
		}
	}()
}

// Exchange connects from ep's namespace to addr (an Echo server) within
// timeout, sends a line and reads it back: data both ways. A dropped SYN
// shows as a net.Error whose Timeout() is true.
func Exchange(ep lab.Endpoint, addr netip.AddrPort, timeout time.Duration) error {
	return netnsx.Do(ep.NetnsPath(), func() error {
		c, err := net.DialTimeout("tcp4", addr.String(), timeout)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("ping\n")); err != nil {
			return err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || line != "ping\n" {
			return fmt.Errorf("echo from %s: %q, %v", addr, line, err)
		}
		return nil
	})
}
