package policy

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// HostIface finds PodPolicy.HostIface: the interface the node namespace
// at nodeNetns routes pod through (the host side of the pod's veth in
// the lab), asked of the kernel so that callers need not know the lab's
// interface naming.
func HostIface(nodeNetns string, pod netip.Addr) (string, error) {
	var name string
	err := netnsx.Do(nodeNetns, func() error {
		routes, err := netlink.RouteGet(net.IP(pod.AsSlice()))
		if err != nil {
			return err
		}
		if len(routes) == 0 || routes[0].LinkIndex == 0 {
			return fmt.Errorf("no route")
		}
		l, err := netlink.LinkByIndex(routes[0].LinkIndex)
		if err != nil {
			return err
		}
		name = l.Attrs().Name
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("policy: host interface of pod %v in %s: %w", pod, nodeNetns, err)
	}
	return name, nil
}
