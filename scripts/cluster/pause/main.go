// Command pause is the sandbox ("pause") container of the test cluster
// (scripts/test-cluster.sh): it holds a pod's namespaces open and exits on
// SIGTERM or SIGINT, like Kubernetes' own pause, without a registry to pull
// that from. Packed into an image with `cnibench k8s image --binary`; the
// image's default arguments are ignored.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	// As PID 1 of the sandbox, reap any orphan re-parented to us.
	signal.Notify(sig, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			return
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
