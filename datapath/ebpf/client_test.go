package ebpf

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
)

// The balance tests run this client as a separate process (the test binary
// re-executed) so that it really lives in a pod's namespace and cgroup, as
// an application would: socket LB acts on the cgroup of the process that
// creates the socket.
const (
	clientEnv = "CNB_C2_CLIENT" // "tcpVIP:port udpVIP:port conns"
	replyWait = 2 * time.Second
)

// clientReport is what the client prints (JSON) on stdout.
type clientReport struct {
	TCP       map[string]int `json:"tcp"`        // endpoint name -> connections it accepted
	UDP       map[string]int `json:"udp"`        // endpoint name -> unconnected datagrams it answered
	Connected map[string]int `json:"connected"`  // endpoint name -> connected-UDP exchanges
	Errors    []string       `json:"errors"`     // first few failures
	Failures  int            `json:"failures"`   // all failures
	BadSource int            `json:"bad_source"` // UDP replies not from the VIP
	// Tuples counts the distinct (protocol, source port) pairs the flows
	// used: two UDP sockets can draw the same random port, and then share
	// one conntrack entry pair.
	Tuples int `json:"tuples"`
	used   map[string]bool
}

// use records the source port of one flow's socket (the source address
// is the pod's for every flow; an unbound socket shows 0.0.0.0).
func (r *clientReport) use(proto string, a net.Addr) {
	if r.used == nil {
		r.used = map[string]bool{}
	}
	_, port, _ := net.SplitHostPort(a.String())
	if k := proto + " " + port; !r.used[k] {
		r.used[k] = true
		r.Tuples++
	}
}

func (r *clientReport) fail(format string, a ...any) {
	r.Failures++
	if len(r.Errors) < 5 {
		r.Errors = append(r.Errors, fmt.Sprintf(format, a...))
	}
}

// runClient: conns TCP connections to the TCP VIP (each reads the name of
// the endpoint that accepted it), conns/10 unconnected UDP requests from
// fresh sockets and conns/10 connected-UDP exchanges to the UDP VIP, all
// replies checked to come from the VIP.
func runClient() int {
	f := strings.Fields(os.Getenv(clientEnv))
	if len(f) != 3 {
		fmt.Fprintf(os.Stderr, "%s: want \"tcpVIP:port udpVIP:port conns\", got %q\n", clientEnv, os.Getenv(clientEnv))
		return 2
	}
	n, _ := strconv.Atoi(f[2])
	r := clientReport{TCP: map[string]int{}, UDP: map[string]int{}, Connected: map[string]int{}}
	for range n {
		c, err := net.DialTimeout("tcp4", f[0], replyWait)
		if err != nil {
			r.fail("tcp dial %s: %v", f[0], err)
			continue
		}
		r.use("tcp", c.LocalAddr())
		c.SetDeadline(time.Now().Add(replyWait))
		b, err := io.ReadAll(c)
		c.Close()
		if err != nil || len(b) == 0 {
			r.fail("tcp read from %s: %q %v", f[0], b, err)
			continue
		}
		r.TCP[string(b)]++
	}
	vip, err := net.ResolveUDPAddr("udp4", f[1])
	if err != nil {
		r.fail("%v", err)
	}
	for i := 0; vip != nil && i < n/10; i++ {
		udpUnconnected(&r, vip)
		udpConnected(&r, vip)
	}
	json.NewEncoder(os.Stdout).Encode(&r)
	return 0
}

func udpUnconnected(r *clientReport, vip *net.UDPAddr) {
	c, err := net.ListenUDP("udp4", nil)
	if err != nil {
		r.fail("udp socket: %v", err)
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(replyWait))
	if _, err := c.WriteToUDP([]byte("ping"), vip); err != nil {
		r.fail("udp sendto %s: %v", vip, err)
		return
	}
	r.use("udp", c.LocalAddr())
	buf := make([]byte, 64)
	k, from, err := c.ReadFromUDP(buf)
	if err != nil {
		r.fail("udp recvfrom: %v", err)
		return
	}
	if from.String() != vip.String() {
		r.BadSource++
		r.fail("udp reply from %s, want the VIP %s", from, vip)
	}
	r.UDP[string(buf[:k])]++
}

func udpConnected(r *clientReport, vip *net.UDPAddr) {
	c, err := net.DialUDP("udp4", nil, vip)
	if err != nil {
		r.fail("udp connect %s: %v", vip, err)
		return
	}
	defer c.Close()
	r.use("udp", c.LocalAddr())
	// getpeername(2) itself (Go caches the dialled address).
	var peer string
	if rc, err := c.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			if sa, err := unix.Getpeername(int(fd)); err == nil {
				if in, ok := sa.(*unix.SockaddrInet4); ok {
					peer = (&net.UDPAddr{IP: in.Addr[:], Port: in.Port}).String()
				}
			}
		})
	}
	if peer != vip.String() {
		r.BadSource++
		r.fail("connected udp: getpeername %q, want the VIP %s", peer, vip)
	}
	c.SetDeadline(time.Now().Add(replyWait))
	if _, err := c.Write([]byte("ping")); err != nil {
		r.fail("connected udp send: %v", err)
		return
	}
	buf := make([]byte, 64)
	k, from, err := c.ReadFromUDP(buf)
	if err != nil {
		r.fail("connected udp recv: %v", err)
		return
	}
	if from.String() != vip.String() {
		r.BadSource++
		r.fail("connected udp reply from %s, want the VIP %s", from, vip)
	}
	r.Connected[string(buf[:k])]++
}

// runClientIn starts the client in ep (namespace and cgroup) and returns its report.
func runClientIn(t *testing.T, l *lab.Lab, ep lab.Endpoint, tcpVIP, udpVIP string, conns int) clientReport {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %d", clientEnv, tcpVIP, udpVIP, conns))
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := l.Start(ep, cmd, nil); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("client in %s: %v\n%s", ep.Name, err, errb.String())
	}
	var r clientReport
	if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
		t.Fatalf("client output %q: %v\nstderr: %s", out.String(), err, errb.String())
	}
	t.Logf("client in %s (%v): tcp %v, udp %v, connected udp %v, failures %d %v",
		ep.Name, time.Since(start).Round(time.Millisecond), r.TCP, r.UDP, r.Connected, r.Failures, r.Errors)
	return r
}

// serve runs, in ep's namespace, a TCP server that writes ep's name on
// every connection and closes it, and a UDP server that answers every
// datagram with ep's name; both on port, stopped at cleanup.
func serve(t *testing.T, ep lab.Endpoint, port int) {
	t.Helper()
	addr := net.JoinHostPort(ep.IP, strconv.Itoa(port))
	var ln net.Listener
	var pc net.PacketConn
	err := netnsx.Do(ep.NetnsPath(), func() error {
		var err error
		if ln, err = net.Listen("tcp4", addr); err != nil {
			return err
		}
		pc, err = net.ListenPacket("udp4", addr)
		return err
	})
	if err != nil {
		t.Fatalf("listen in %s: %v", ep.Name, err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		pc.Close()
		wg.Wait()
	})
	wg.Add(2)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(ep.Name))
			c.Close()
		}
	}()
	go func() {
		defer wg.Done()
		buf := make([]byte, 64)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo([]byte(ep.Name), from)
		}
	}()
}
