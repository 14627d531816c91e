package k8starget

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// Access is how the CLI reaches an agent's control API. Only control
// traffic (small JSON documents) takes this path; test traffic always flows
// between the agents themselves.
type Access interface {
	// Control returns the agent's control address for agent.NewClient
	// ("tcp:host:port" or "unix:/path").
	Control(ctx context.Context, pod *corev1.Pod) (string, error)
	// Close releases what Control set up.
	Close() error
	// Name is the access mode, recorded in the results.
	Name() string
}

// Direct dials pod IP:ControlPort (node IP for hostNetwork agents). It
// needs the CLI to run where pod IPs are routable: in a pod, on a node, or
// on a flat network (e.g. VPC CNI).
type Direct struct{}

// Control implements Access.
func (Direct) Control(_ context.Context, pod *corev1.Pod) (string, error) {
	if pod.Status.PodIP == "" {
		return "", fmt.Errorf("pod %s has no IP", pod.Name)
	}
	return "tcp:" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(ControlPort)), nil
}

// Close implements Access.
func (Direct) Close() error { return nil }

// Name implements Access.
func (Direct) Name() string { return AccessDirect }

// PortForward reaches each agent through the API server's pods/portforward
// (websocket, falling back to SPDY as kubectl does) on a local port of
// 127.0.0.1. It works wherever kubectl works. A forward that drops (API
// server restart, idle proxies) is re-established on the same local port,
// so the next request goes through again; a request caught by the drop
// fails, and the agent client's checksums make sure a cut answer is never
// taken for a whole one.
type PortForward struct {
	Config    *rest.Config
	Clientset kubernetes.Interface
	Log       io.Writer // forwarder messages; nil = discarded

	mu       sync.Mutex
	forwards []*forward
}

type forward struct {
	stop   chan struct{}
	done   chan struct{}
	pod    string // namespace/name
	remote int    // the pod's port
}

// Control implements Access: it starts a forward to the pod's control port.
func (a *PortForward) Control(ctx context.Context, pod *corev1.Pod) (string, error) {
	return a.ControlOn(ctx, pod, ControlPort)
}

// ControlOn implements PortAccess: a forward to another port of the pod
// (the node probes' control port).
func (a *PortForward) ControlOn(ctx context.Context, pod *corev1.Pod, port int) (string, error) {
	dialer, err := a.dialer(pod)
	if err != nil {
		return "", err
	}
	f := &forward{stop: make(chan struct{}), done: make(chan struct{}), pod: pod.Namespace + "/" + pod.Name, remote: port}
	local, ended, err := a.start(ctx, dialer, 0, port, f.stop)
	if err != nil {
		close(f.stop)
		return "", fmt.Errorf("port-forward to pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	a.mu.Lock()
	a.forwards = append(a.forwards, f)
	a.mu.Unlock()
	go a.supervise(dialer, local, ended, f)
	return "tcp:" + net.JoinHostPort("127.0.0.1", strconv.Itoa(local)), nil
}

func (a *PortForward) dialer(pod *corev1.Pod) (httpstream.Dialer, error) {
	url := a.Clientset.CoreV1().RESTClient().Post().Resource("pods").
		Namespace(pod.Namespace).Name(pod.Name).SubResource("portforward").URL()
	rt, upgrader, err := spdy.RoundTripperFor(a.Config)
	if err != nil {
		return nil, fmt.Errorf("port-forward transport: %w", err)
	}
	spdyDialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, url)
	ws, err := portforward.NewSPDYOverWebsocketDialer(url, a.Config)
	if err != nil {
		return nil, fmt.Errorf("port-forward transport: %w", err)
	}
	return portforward.NewFallbackDialer(ws, spdyDialer, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	}), nil
}

// start runs one forwarder in the background and returns its local port
// once it listens, and a channel that yields when the forwarder ends.
func (a *PortForward) start(ctx context.Context, dialer httpstream.Dialer, local, remote int, stop chan struct{}) (int, <-chan error, error) {
	ready := make(chan struct{})
	log := a.Log
	if log == nil {
		log = io.Discard
	}
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"},
		[]string{strconv.Itoa(local) + ":" + strconv.Itoa(remote)}, stop, ready, io.Discard, log) // out only says "Handling connection"
	if err != nil {
		return 0, nil, err
	}
	ended := make(chan error, 1)
	go func() { ended <- pf.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-ended:
		if err == nil {
			err = errors.New("stopped before it was ready")
		}
		return 0, nil, err
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) == 0 {
		return 0, nil, fmt.Errorf("port-forward has no local port: %v", err)
	}
	return int(ports[0].Local), ended, nil
}

// supervise re-establishes a forward on the same local port whenever the
// one before it ended, until Close.
func (a *PortForward) supervise(dialer httpstream.Dialer, local int, ended <-chan error, f *forward) {
	defer close(f.done)
	for {
		select {
		case <-f.stop:
			return
		case err := <-ended:
			if a.Log != nil {
				fmt.Fprintf(a.Log, "port-forward to 127.0.0.1:%d lost (%v): re-establishing\n", local, err)
			}
		}
		for {
			select {
			case <-f.stop:
				return
			case <-time.After(time.Second):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, e, err := a.start(ctx, dialer, local, f.remote, f.stop)
			cancel()
			if err == nil {
				ended = e
				break
			}
		}
	}
}

// Name implements Access.
func (a *PortForward) Name() string { return AccessPortForward }

// Releaser is an Access that holds something per pod (a forward), released
// when the pod is gone for good (deleted after reading it, replaced).
type Releaser interface {
	Release(pod *corev1.Pod)
}

// Release implements Releaser: it stops the forwards to pod, which would
// otherwise retry a deleted pod every second until Close.
func (a *PortForward) Release(pod *corev1.Pod) {
	key := pod.Namespace + "/" + pod.Name
	a.mu.Lock()
	var gone, kept []*forward
	for _, f := range a.forwards {
		if f.pod == key {
			gone = append(gone, f)
		} else {
			kept = append(kept, f)
		}
	}
	a.forwards = kept
	a.mu.Unlock()
	for _, f := range gone {
		close(f.stop)
		<-f.done
	}
}

// release releases pod's hold in access, if it keeps any.
func release(access Access, pod *corev1.Pod) {
	if r, ok := access.(Releaser); ok {
		r.Release(pod)
	}
}

// Close implements Access: it stops every forward.
func (a *PortForward) Close() error {
	a.mu.Lock()
	fs := a.forwards
	a.forwards = nil
	a.mu.Unlock()
	for _, f := range fs {
		close(f.stop)
		<-f.done
	}
	return nil
}
