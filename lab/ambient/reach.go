package ambient

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// ProveHTTP shows an HTTP server address the run dials (a ClusterIP, or a
// pod's address) is reached through the mesh: GET / from pod from gets a
// 200 while from's node's proxy sends one more connection into a tunnel
// and another node's proxy accepts one more in mTLS. It returns the
// check line. The capture of Prove is not repeated: it proved what a
// tunnel carries.
func (m *Mesh) ProveHTTP(ctx context.Context, from Pod, addr string) (string, error) {
	before, err := m.Counters()
	if err != nil {
		return "", err
	}
	status, err := get(ctx, from, addr)
	if err != nil {
		return "", fmt.Errorf("ambient: GET http://%s/ from %s: %w", addr, from.Name, err)
	}
	after, err := m.Counters()
	if err != nil {
		return "", err
	}
	tun := after[from.Node].Tunnels - before[from.Node].Tunnels
	var into []string
	for node, c := range after {
		if node != from.Node && c.Inbound > before[node].Inbound {
			into = append(into, "ztunnel-"+node)
		}
	}
	if !strings.Contains(status, " 200 ") || tun == 0 || len(into) == 0 {
		return "", fmt.Errorf("ambient: GET http://%s/ from %s got %q with %d tunnels from ztunnel-%s and mTLS arrivals at %v: want 200 through a tunnel to another node", addr, from.Name, status, tun, from.Node, into)
	}
	return fmt.Sprintf("GET http://%s/ 200 via ztunnel-%s → %s (mTLS)", addr, from.Node, strings.Join(into, ", ")), nil
}

// get sends GET / on a new connection from pod p and returns the status
// line.
func get(ctx context.Context, p Pod, addr string) (string, error) {
	var c net.Conn
	err := netnsx.Do(p.Netns, func() (err error) {
		c, err = (&net.Dialer{Timeout: 3 * time.Second}).DialContext(ctx, "tcp4", addr)
		return err
	})
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", addr); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}
