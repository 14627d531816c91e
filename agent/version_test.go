package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/internal/version"
)

// oldAgent answers health as version v and refuses every run route as an
// agent of another version would: status with text.
func oldAgent(t *testing.T, v string, status int, text string) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != PathHealth {
			http.Error(w, text, status)
			return
		}
		b, _ := json.Marshal(Health{OK: true, Version: v, PID: 1})
		sum := sha256.Sum256(b)
		w.Header().Set(HeaderChecksum, hex.EncodeToString(sum[:]))
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient("node0-pod0", "tcp:"+strings.TrimPrefix(srv.URL, "http://"), "tok")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// An agent of another version that does not know the route or the
// options is named with both versions; one of this version, or a refusal
// for another reason (busy), keeps the agent's own words.
func TestRunKindNamesVersionMismatch(t *testing.T) {
	mine := version.Get().Version
	o := &engine.Options{Test: engine.TCPRR, Host: "127.0.0.1", RunnerOptions: engine.RunnerOptions{Duration: engine.Duration(time.Second)}}
	for _, tc := range []struct {
		agentVersion string
		status       int
		text, want   string
		hint         bool
	}{
		{"v0.1.0", http.StatusNotFound, "404 page not found", "agent node0-pod0: 404 page not found: the agent runs cnibench v0.1.0 and this CLI is " + mine, true},
		{"v0.1.0", http.StatusBadRequest, `bad rr options: json: unknown field "udp_gso"`, "the agent runs cnibench v0.1.0", true},
		{mine, http.StatusNotFound, "404 page not found", "agent node0-pod0: 404 page not found", false},
		{"v0.1.0", http.StatusConflict, "agent is already running a test", "agent node0-pod0: agent is already running a test", false},
	} {
		c := oldAgent(t, tc.agentVersion, tc.status, tc.text)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := c.RunKind(ctx, "rr", o)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "must be the same version") != tc.hint {
			t.Errorf("agent %s answering %d %q: error %v, want %q (version hint %v)", tc.agentVersion, tc.status, tc.text, err, tc.want, tc.hint)
		}
	}
}
