package agent

import (
	"context"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
)

// The sysctls endpoint answers what /proc/sys shows in the agent's own
// network namespace, behind the token, and names what it cannot read.
func TestSysctlsEndpoint(t *testing.T) {
	c, bad := serveRoutes(t, "tok")
	got, err := c.Sysctls(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range SysctlKeys {
		b, rerr := os.ReadFile("/proc/sys/" + strings.ReplaceAll(k, ".", "/"))
		want := strings.Join(strings.Fields(string(b)), " ")
		switch v, ok := got.Values[k]; {
		case rerr == nil && (!ok || v != want):
			t.Errorf("%s = %q, /proc/sys says %q", k, v, want)
		case rerr != nil && (ok || got.Unreadable[k] == ""):
			t.Errorf("%s unreadable here (%v) but answered %q, unreadable %q", k, rerr, v, got.Unreadable[k])
		}
	}
	if got.Values["net.ipv4.ip_local_port_range"] == "" {
		t.Error("ip_local_port_range missing")
	}
	if _, err := bad.Sysctls(context.Background()); err == nil {
		t.Error("answered without the token")
	}
}

// serveRoutes serves a handler's routes with token on a loopback port: a
// client with the token and one with a wrong token.
func serveRoutes(t *testing.T, token string) (c, bad *Client) {
	t.Helper()
	h := &handler{token: token}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h.routes()}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	if c, err = NewClient("a", "tcp:"+ln.Addr().String(), token); err != nil {
		t.Fatal(err)
	}
	bad, _ = NewClient("a", "tcp:"+ln.Addr().String(), "wrong-"+token)
	return c, bad
}
