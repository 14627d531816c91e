package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/dnsload"
	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/nodeprobe"
)

// Client talks to one agent's control API.
type Client struct {
	name  string
	base  string
	token string
	http  *http.Client
}

// NewClient returns a client for the agent listening on control
// ("unix:/path" or "tcp:host:port"); name is used in error messages.
func NewClient(name, control, token string) (*Client, error) {
	network, addr, ok := strings.Cut(control, ":")
	if !ok || (network != "unix" && network != "tcp") {
		return nil, fmt.Errorf("agent %s: bad control address %q", name, control)
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
		DisableKeepAlives: false,
	}
	base := "http://agent"
	if network == "tcp" {
		base = "http://" + addr
	}
	return &Client{name: name, base: base, token: token, http: &http.Client{Transport: tr}}, nil
}

// NodeServices asks a node-probe agent (`agent --node-probe`) what the
// node's Service datapath holds now.
func (c *Client) NodeServices(ctx context.Context) (*nodeprobe.Report, error) {
	var r nodeprobe.Report
	if err := c.do(ctx, http.MethodGet, PathNodeServices, nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Name is the endpoint the agent runs on.
func (c *Client) Name() string { return c.name }

// Health asks the agent whether it is up.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	var h Health
	if err := c.do(ctx, http.MethodGet, PathHealth, nil, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// WaitReady polls Health until it answers or timeout passes.
func (c *Client) WaitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		hctx, cancel := context.WithTimeout(ctx, time.Second)
		_, last = c.Health(hctx)
		cancel()
		if last == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("agent %s did not become ready within %s: %v", c.name, timeout, last)
}

// Run asks the agent to run the client side of a test and returns its result.
func (c *Client) Run(ctx context.Context, o engine.Options) (*engine.Result, error) {
	return call[engine.Result](ctx, c, PathRun, o)
}

// RunHTTP asks the agent to run the client side of an HTTP load test.
func (c *Client) RunHTTP(ctx context.Context, o httpload.Options) (*httpload.Result, error) {
	return call[httpload.Result](ctx, c, PathHTTP, o)
}

// RunDNS asks the agent to run the client side of a DNS load test.
func (c *Client) RunDNS(ctx context.Context, o dnsload.Options) (*dnsload.Result, error) {
	return call[dnsload.Result](ctx, c, PathDNS, o)
}

// call posts options to a run endpoint and decodes its result.
func call[R any](ctx context.Context, c *Client, path string, in any) (*R, error) {
	var res R
	if err := c.do(ctx, http.MethodPost, path, in, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("agent %s: %w", c.name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("agent %s: reading answer: %w", c.name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("agent %s: %s", c.name, strings.TrimSpace(string(b)))
	}
	if want := resp.Header.Get(HeaderChecksum); want != "" {
		sum := sha256.Sum256(b)
		if hex.EncodeToString(sum[:]) != want {
			return fmt.Errorf("agent %s: answer failed its checksum (%d bytes): truncated or corrupted", c.name, len(b))
		}
	} else {
		return fmt.Errorf("agent %s: answer has no checksum header", c.name)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("agent %s: bad answer: %w", c.name, err)
	}
	return nil
}
