package httpload

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/cnibench/cnibench/engine/engineapi"
	"github.com/cnibench/cnibench/engine/internal/portshare"
	"github.com/cnibench/cnibench/engine/kinds"
)

// Short connections with a PortShare come from the share's ports, and the
// result says which.
func TestShortConnectionsUseThePortShare(t *testing.T) {
	var mu sync.Mutex
	ports := map[int]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, p, _ := net.SplitHostPort(r.RemoteAddr)
		n, _ := strconv.Atoi(p)
		mu.Lock()
		ports[n] = true
		mu.Unlock()
	}))
	defer srv.Close()
	want, err := portshare.Of(2, 5)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), Options{URL: srv.URL, RunnerOptions: kinds.RunnerOptions{Duration: ms(300)}, Connections: 4,
		PortShare: &engineapi.PortShare{Index: 2, Count: 5}})
	if err != nil {
		t.Fatal(err)
	}
	if r.PortShareNote != "" {
		t.Skip(r.PortShareNote)
	}
	if r.LocalPorts != want.String() {
		t.Errorf("LocalPorts = %q, want %q", r.LocalPorts, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ports) < 20 {
		t.Fatalf("only %d client ports seen", len(ports))
	}
	for p := range ports {
		if p < want.Lo || p > want.Hi {
			t.Fatalf("client port %d outside the share %s", p, want)
		}
	}
}
