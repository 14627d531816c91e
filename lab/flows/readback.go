package flows

import (
	"errors"
	"fmt"
	"strings"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// Reading our programs back from the kernel, for Installed (the "on"
// check) and Leftovers (the "off" check): tcx programs and cls_bpf
// filters named cnb_flows_* on a namespace's links.

// progPrefix starts both program names; the kernel keeps 15 characters
// of a program's name ("cnb_flows_from_", "cnb_flows_to_po").
const progPrefix = "cnb_flows_"

// bpfHooks lists "<iface> <dir> <how>" for each of our programs attached
// to links (all links of the namespace when links is nil) of h's namespace.
func bpfHooks(netns string, h *netlink.Handle, links []netlink.Link) ([]string, error) {
	if links == nil {
		var err error
		if links, err = h.LinkList(); err != nil {
			return nil, fmt.Errorf("list links: %w", err)
		}
	}
	var out []string
	for _, l := range links {
		name := l.Attrs().Name
		for _, dir := range []struct {
			name   string
			at     cebpf.AttachType
			parent uint32
		}{{"ingress", cebpf.AttachTCXIngress, netlink.HANDLE_MIN_INGRESS}, {"egress", cebpf.AttachTCXEgress, netlink.HANDLE_MIN_EGRESS}} {
			n, err := tcxOurs(netns, l.Attrs().Index, dir.at)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", name, dir.name, err)
			}
			for range n {
				out = append(out, name+" "+dir.name+" tcx")
			}
			fs, err := h.FilterList(l, dir.parent)
			if err != nil {
				continue // no clsact qdisc: no filters
			}
			for _, f := range fs {
				if bf, ok := f.(*netlink.BpfFilter); ok && strings.HasPrefix(bf.Name, progPrefix) {
					out = append(out, name+" "+dir.name+" cls_bpf")
				}
			}
		}
	}
	return out, nil
}

// tcxOurs counts the programs named cnb_flows_* on a tcx hook.
func tcxOurs(netns string, ifindex int, at cebpf.AttachType) (int, error) {
	var res *link.QueryResult
	err := netnsx.Do(netns, func() error {
		var err error
		res, err = link.QueryPrograms(link.QueryOptions{Target: ifindex, Attach: at})
		return err
	})
	if errors.Is(err, cebpf.ErrNotSupported) {
		return 0, nil // no tcx on this kernel: nothing of ours there
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, ap := range res.Programs {
		p, err := cebpf.NewProgramFromID(ap.ID)
		if err != nil {
			continue // detached meanwhile
		}
		info, err := p.Info()
		p.Close()
		if err == nil && strings.HasPrefix(info.Name, progPrefix) {
			n++
		}
	}
	return n, nil
}

// installed is the number of our programs attached on the recorder's links.
func (s *ebpfSource) installed() (int, error) {
	links := make([]netlink.Link, 0, len(s.hooks))
	seen := map[int]bool{}
	for _, a := range s.hooks {
		if !seen[a.ifindex] {
			seen[a.ifindex] = true
			l, err := s.h.LinkByIndex(a.ifindex)
			if err != nil {
				return 0, fmt.Errorf("flows: %s: %w", a.iface, err)
			}
			links = append(links, l)
		}
	}
	hs, err := bpfHooks(s.site.Netns, s.h, links)
	return len(hs), err
}

// Leftovers lists what of this package is still in site's node
// namespace: programs on any link, the NFLOG table, a bound NFLOG group
// (opts.Group). Empty after Close: the "off" check.
func Leftovers(site Site, opts Options) ([]string, error) {
	h, err := netnsx.NewHandle(site.Netns)
	if err != nil {
		return nil, fmt.Errorf("flows: %w", err)
	}
	defer h.Close()
	out, err := bpfHooks(site.Netns, h, nil)
	if err != nil {
		return nil, fmt.Errorf("flows: %s: %w", site.Node, err)
	}
	nf, err := nflogLeftovers(site, opts)
	if err != nil {
		return nil, fmt.Errorf("flows: %s: %w", site.Node, err)
	}
	return append(out, nf...), nil
}
