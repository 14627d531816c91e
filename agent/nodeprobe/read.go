package nodeprobe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultBPFFS is where a node mounts the BPF filesystem Cilium pins to.
const DefaultBPFFS = "/sys/fs/bpf"

// Options say which node the probe reports on and where it reads.
type Options struct {
	// Node is the name reported in Report.Node.
	Node string
	// NetNS is the network namespace whose nftables are read, as a path
	// (/run/netns/x, /proc/<pid>/ns/net); "" is the probe's own (a
	// hostNetwork pod's is the node's).
	NetNS string
	// BPFFS is the BPF filesystem mount point; "" is DefaultBPFFS.
	BPFFS string
	// CNIConfDir is where the node's CNI config is read (Query.CNIConfig);
	// "" is DefaultCNIConfDir.
	CNIConfDir string
	// Kernel is where the kernel's encryption support is read
	// (Query.CNIConfig); the zero value is a probe pod's view
	// (ProbeKernelPaths).
	Kernel KernelPaths
	// Query asks for more than the counts.
	Query Query
}

// Query asks a probe for what a churn needs beyond a sweep's counts.
type Query struct {
	// Live: Report.Keys (and Services) name only the Service ports the
	// datapath uses now: kube-proxy's iptables mode above 1,000 endpoints
	// leaves a removed Service's KUBE-SVC chain for a sync period, so in
	// this mode its Services are the chains KUBE-SERVICES jumps to.
	Live bool `json:"live,omitempty"`
	// EndpointsOf asks for Report.EndpointKeys of these Service ports
	// (PortRef), as kube-proxy names them; it implies Live.
	EndpointsOf []string `json:"endpoints_of,omitempty"`
	// Frontends asks the same of Cilium, whose maps know a Service port
	// by its frontend only (Key(Cilium, …)); AskEndpoints fills both.
	Frontends []string `json:"frontends,omitempty"`
	// CNIConfig asks for Report.CNI, the node's CNI config, and
	// Report.Kernel, its kernel's encryption support, instead of the
	// Service datapath: a run that only names the CNI must not fail on a
	// datapath the probe cannot read.
	CNIConfig bool `json:"cni_config,omitempty"`
}

// AskEndpoints asks for the endpoint keys of s whatever the node's
// datapath.
func (q *Query) AskEndpoints(s ServicePort) {
	q.EndpointsOf = append(q.EndpointsOf, PortRef(s))
	if s.ClusterIP.Is4() {
		q.Frontends = append(q.Frontends, Key(Cilium, s))
	}
}

// asksEndpoints says whether q asks for any endpoint keys.
func (q Query) asksEndpoints() bool { return len(q.EndpointsOf)+len(q.Frontends) > 0 }

// reading is what one datapath reader found.
type reading struct {
	datapath  string
	services  int
	endpoints int
	lbMap     *mapEntry // Cilium's service map, its entries counted
	keys      []string  // Report.Keys
	// endpointKeys are Report.EndpointKeys, when asked and read.
	endpointKeys     []string
	endpointKeysRead bool
	endpointErr      error // why they were asked for and not read
}

// absentError says a datapath's objects are not there; its text is what
// was looked for, so an empty report can say it.
type absentError string

func (e absentError) Error() string { return string(e) }

// Read finds which Service datapath the node has and counts what it holds,
// from the kernel directly (nftables netlink, the bpf syscall): the probe
// image has no iptables or nft binary. When several datapaths are present
// (Cilium beside a kube-proxy that was not removed) Cilium wins, then
// kube-proxy's nftables mode, then its iptables mode, and Errors names the
// others. Failures of one part (BPF map memory, a second datapath) go into
// Errors; Read fails only when it cannot say what the datapath holds,
// with an error wrapping errors.ErrUnsupported for kube-proxy on
// iptables-legacy, which nftables netlink cannot see. With
// Query.CNIConfig it reads only the node's CNI config (Report.CNI) and
// its kernel's encryption support (Report.Kernel).
func Read(ctx context.Context, o Options) (*Report, error) {
	start := time.Now()
	if o.Query.CNIConfig {
		return &Report{Node: o.Node, CNI: ReadCNIConfig(o.CNIConfDir), Kernel: ReadKernelEncryption(o.Kernel), ReadTime: time.Since(start)}, nil
	}
	if o.BPFFS == "" {
		o.BPFFS = DefaultBPFFS
	}
	if o.Query.asksEndpoints() {
		o.Query.Live = true
	}
	rs, err := readAll(ctx, o)
	if err != nil {
		return nil, err
	}
	rep := &Report{Node: o.Node}
	if len(rs.found) == 0 {
		if err := rs.none(rep, o.NetNS); err != nil {
			return nil, err
		}
		rep.ReadTime = time.Since(start)
		return rep, nil
	}
	best := rs.found[0]
	rs.report(rep, o.Query)
	if best.datapath == Cilium {
		addCiliumMaps(ctx, rep, best, o.BPFFS)
	}
	rep.ReadTime = time.Since(start)
	return rep, nil
}

// readings are what every datapath reader said: a datapath found, its
// objects absent (what was looked for), or a failure.
type readings struct {
	found  []*reading
	absent []string
	failed []error
}

func (rs *readings) add(r *reading, err error) {
	var a absentError
	switch {
	case errors.As(err, &a):
		rs.absent = append(rs.absent, string(a))
	case err != nil:
		rs.failed = append(rs.failed, err)
	default:
		rs.found = append(rs.found, r)
	}
}

// readAll asks Cilium's reader, then kube-proxy's (nftables, iptables):
// the order in which a datapath found wins.
func readAll(ctx context.Context, o Options) (*readings, error) {
	rs := &readings{}
	rs.add(readCilium(ctx, o.BPFFS, o.Query))
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, r := range readKubeProxy(o.NetNS, o.Query) {
		rs.add(r.r, r.err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return rs, nil
}

// none fills rep when no datapath was found: an error when the node's
// datapath is one nodeprobe cannot read (kube-proxy on iptables-legacy) or
// every reader failed, else rep says what was looked for.
func (rs *readings) none(rep *Report, netns string) error {
	legacy, lerr := legacyNATInUse(netns)
	switch {
	case legacy:
		return fmt.Errorf("nodeprobe: %w: no kube-proxy nftables objects or Cilium map found and the nat table is iptables-legacy (/proc/net/ip_tables_names): kube-proxy on iptables-legacy is not readable over nftables netlink", errors.ErrUnsupported)
	case len(rs.failed) > 0:
		return fmt.Errorf("nodeprobe: no datapath readable: %w", oneLine(rs.failed))
	case lerr != nil:
		rep.Errors = append(rep.Errors, lerr.Error())
	}
	rep.Errors = append(rep.Errors, "no Service datapath found: looked for "+strings.Join(rs.absent, ", "))
	return nil
}

// report fills rep from the first datapath found, and names in its Errors
// the endpoint keys q asked for and did not get, the other datapaths
// found and the readers that failed.
func (rs *readings) report(rep *Report, q Query) {
	best := rs.found[0]
	rep.Datapath, rep.Services, rep.Endpoints, rep.Keys = best.datapath, best.services, best.endpoints, best.keys
	rep.EndpointKeys, rep.EndpointKeysRead = best.endpointKeys, best.endpointKeysRead
	if q.asksEndpoints() && !best.endpointKeysRead {
		msg := "endpoint keys: not read for " + best.datapath
		if best.endpointErr != nil {
			msg += ": " + best.endpointErr.Error()
		}
		rep.Errors = append(rep.Errors, msg)
	}
	for _, other := range rs.found[1:] {
		rep.Errors = append(rep.Errors, fmt.Sprintf("also found %s holding %d Services, %d endpoints (not the one reported)",
			other.datapath, other.services, other.endpoints))
	}
	for _, err := range rs.failed {
		rep.Errors = append(rep.Errors, err.Error())
	}
}

// addCiliumMaps adds Cilium's BPF maps and their memory to rep, the
// service map with the entries best counted in it.
func addCiliumMaps(ctx context.Context, rep *Report, best *reading, bpffs string) {
	maps, total, errs := ciliumMaps(ctx, bpffs)
	for _, err := range errs {
		rep.Errors = append(rep.Errors, err.Error())
	}
	for i := range maps {
		if best.lbMap != nil && maps[i].id == best.lbMap.id {
			maps[i].Name, maps[i].Entries = best.lbMap.Name, best.lbMap.Entries
		}
		rep.Maps = append(rep.Maps, maps[i].MapInfo)
	}
	rep.BPFMapBytes = total
}

// oneLine joins errs into one line (errors.Join puts newlines between
// them), still matching each with errors.Is.
func oneLine(errs []error) error {
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return &joined{msg: strings.Join(msgs, "; "), errs: errs}
}

type joined struct {
	msg  string
	errs []error
}

func (j *joined) Error() string   { return j.msg }
func (j *joined) Unwrap() []error { return j.errs }
