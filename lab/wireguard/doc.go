// Package wireguard encrypts a lab's node-to-node traffic with
// WireGuard the way a CNI's transparent encryption does (Cilium's and
// Calico's WireGuard mode): every node has a WireGuard device with a
// peer per other node, and pod traffic to another node goes through it.
//
// This machine's kernel has no WireGuard module, so the devices are
// userspace: golang.zx2c4.com/wireguard (wireguard-go, the same protocol,
// ChaCha20-Poly1305 over Noise IK) on a TUN device, one daemon per node,
// run as a re-executed copy of the running binary (Daemon) inside the
// node's namespace and its own cgroup, so its CPU is counted apart. The
// kernel's own WireGuard is detected (KernelSupport) and recorded; where
// it exists it would be faster, which the results say.
package wireguard
