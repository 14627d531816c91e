package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cnibench/cnibench/agent/nodeprobe"
	"github.com/cnibench/cnibench/engine/kinds"
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
		// Below the agent's idle limit (defaultLimits.idle): the client
		// drops a kept-alive connection before the agent can close it
		// under a new request.
		IdleConnTimeout: 90 * time.Second,
	}
	base := "http://agent"
	if network == "tcp" {
		base = "http://" + addr
	}
	return &Client{name: name, base: base, token: token, http: &http.Client{Transport: tr}}, nil
}

// NodeServices asks a node-probe agent (`agent --node-probe`) what the
// node's Service datapath holds now, and what q asks beyond the counts.
func (c *Client) NodeServices(ctx context.Context, q nodeprobe.Query) (*nodeprobe.Report, error) {
	var r nodeprobe.Report
	path := PathNodeServices
	if v := probeValues(q); len(v) > 0 {
		path += "?" + v.Encode()
	}
	if err := c.do(ctx, http.MethodGet, path, nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// probeValues is q as URL parameters (probeQuery reads them back).
// Frontends travel apart from endpoints: a probe older than them ignores
// the parameter rather than misreading the Service ports it names.
func probeValues(q nodeprobe.Query) url.Values {
	v := url.Values{}
	if q.Live {
		v.Set("live", "1")
	}
	if len(q.EndpointsOf) > 0 {
		v.Set("endpoints", strings.Join(q.EndpointsOf, ","))
	}
	if len(q.Frontends) > 0 {
		v.Set("frontends", strings.Join(q.Frontends, ","))
	}
	if q.CNIConfig {
		v.Set("cni", "1")
	}
	return v
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

// RunKind asks the agent to run the client side of a test of a
// registered kind: options are the kind's (a pointer to its options
// type), the result is its NewResult's type. An agent that does not know
// the request (not found, or options it cannot read) is asked its
// version: an agent of another cnibench version than this CLI's is the
// usual cause, and the error says so.
func (c *Client) RunKind(ctx context.Context, kind string, options any) (any, error) {
	k, ok := kinds.Lookup(kind)
	if !ok || k.Run == nil {
		return nil, fmt.Errorf("agent %s: kind %q does not run through agents", c.name, kind)
	}
	res := k.NewResult()
	if err := c.runCall(ctx, PathKind+kind, options, res); err != nil {
		return nil, c.versionHint(ctx, err)
	}
	return res, nil
}

// do is one plain request (health, node services): an answer lost on the
// way is an error, the caller may simply ask again.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = b
	}
	rp, err := c.send(ctx, method, path, body, nil)
	if err != nil {
		return fmt.Errorf("agent %s: %w", c.name, err)
	}
	if rp.status == http.StatusNotImplemented { // keeps errors.ErrUnsupported across the wire (probe.go)
		return &unsupportedError{msg: fmt.Sprintf("agent %s: %s", c.name, rp.text())}
	}
	if rp.status != http.StatusOK {
		return fmt.Errorf("agent %s: %s", c.name, rp.text())
	}
	if err := rp.verify(); err != nil {
		return fmt.Errorf("agent %s: %w", c.name, err)
	}
	return c.decode(rp.body, out)
}

// reply is one answer as received.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (rp *reply) text() string { return strings.TrimSpace(string(rp.body)) }

// errChecksum marks a document damaged on the way.
var errChecksum = errors.New("answer failed its checksum")

// verify checks the body against its checksum header, so a truncated or
// corrupted document is never taken for a whole one.
func (rp *reply) verify() error {
	want := rp.header.Get(HeaderChecksum)
	if want == "" {
		return errors.New("answer has no checksum header")
	}
	if checksum(rp.body) != want {
		return fmt.Errorf("%w (%d bytes): truncated or corrupted", errChecksum, len(rp.body))
	}
	return nil
}

// send makes one request and reads the whole answer.
func (c *Client) send(ctx context.Context, method, path string, body []byte, hdr http.Header) (*reply, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading answer: %w", err)
	}
	return &reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// decode reads a checked document strictly: an unknown field means CLI
// and agent disagree on the protocol.
func (c *Client) decode(b []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("agent %s: bad answer: %w", c.name, err)
	}
	return nil
}
