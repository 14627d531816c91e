package k8starget

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// Execer runs a command in a pod's container and returns what it wrote
// on stdout: how the Hubble toggle asks a Cilium agent for its state (as
// cilium-cli does for `cilium status`). Tests stand in for it.
type Execer interface {
	Exec(ctx context.Context, namespace, pod, container string, command []string) ([]byte, error)
}

// PodExec is the API server's pods/exec, over websocket with a fallback
// to SPDY, as kubectl exec does.
type PodExec struct {
	Config    *rest.Config
	Clientset kubernetes.Interface
}

// Exec implements Execer; a failing command's error carries the last
// line it wrote on stderr.
func (e *PodExec) Exec(ctx context.Context, namespace, pod, container string, command []string) ([]byte, error) {
	req := e.Clientset.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(e.Config, "GET", req.URL().String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(e.Config, "POST", req.URL())
	if err != nil {
		return nil, err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndex(msg, "\n"); i >= 0 {
			msg = msg[i+1:]
		}
		if msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return nil, fmt.Errorf("exec %s in pod %s/%s: %w", strings.Join(command, " "), namespace, pod, err)
	}
	return stdout.Bytes(), nil
}
