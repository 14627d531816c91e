package ebpf

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Go mirrors of the map keys and values in bpf/policy.c. Addresses and
// ports are byte arrays in network order, as the kernel stores them; the
// rest is native-endian, as cilium/ebpf marshals it. layout_test.go checks
// sizes and offsets against the object's BTF.

// Map and program names, as in bpf/policy.c.
const (
	mapIPCache  = "cnb_pol_ipc"
	mapEndpoint = "cnb_pol_ep"
	mapPolicy   = "cnb_pol_map"
	mapCT       = "cnb_pol_ct"
	mapCounters = "cnb_pol_cnt"

	progFromPod = "cnb_pol_from_pod" // tc ingress of the host veth: the pod's egress
	progToPod   = "cnb_pol_to_pod"   // tc egress of the host veth: the pod's ingress
)

// Directions (policy_key.dir) and endpoint flags (ep_val.flags).
const (
	dirIngress = 0
	dirEgress  = 1
	epIngress  = 1 << dirIngress
	epEgress   = 1 << dirEgress
)

// Counter slots of cnb_pol_cnt.
const (
	cntAllow = 0
	cntDrop  = 1
)

const (
	ipprotoTCP = 6
	ipprotoUDP = 17
)

// ipcKey is struct ipcache_key (an LPM trie key).
type ipcKey struct {
	PrefixLen uint32
	Addr      [4]byte
}

// epVal is struct ep_val.
type epVal struct {
	Flags    uint32
	Identity uint32
}

// polKey is struct policy_key.
type polKey struct {
	Ep       uint32
	Identity uint32
	Dport    [2]byte
	Proto    uint8
	Dir      uint8
}

// polVal is struct policy_val.
type polVal struct {
	Rule uint32
}

// ctKey is struct ct_key.
type ctKey struct {
	Ep           uint32
	Saddr, Daddr [4]byte
	Sport, Dport [2]byte
	Proto        uint8
	Pad          [3]uint8
}

func ipcKeyOf(p netip.Prefix) ipcKey {
	return ipcKey{PrefixLen: uint32(p.Bits()), Addr: p.Masked().Addr().As4()}
}

func (k ipcKey) prefix() netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4(k.Addr), int(k.PrefixLen))
}

func (k polKey) String() string {
	dir := "ingress"
	if k.Dir == dirEgress {
		dir = "egress"
	}
	proto := fmt.Sprint(k.Proto)
	switch k.Proto {
	case 0:
		proto = "any"
	case ipprotoTCP:
		proto = "TCP"
	case ipprotoUDP:
		proto = "UDP"
	}
	return fmt.Sprintf("{ifindex %d %s identity %d %s port %d}", k.Ep, dir, k.Identity, proto, binary.BigEndian.Uint16(k.Dport[:]))
}

func be16(v uint16) (p [2]byte) {
	binary.BigEndian.PutUint16(p[:], v)
	return p
}
