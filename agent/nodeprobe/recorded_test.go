package nodeprobe

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/iptables"
	dpnft "github.com/cnibench/cnibench/datapath/nftables"
	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab/labtest"
)

var update = flag.Bool("update", false, "program the real datapaths as root and rewrite testdata/*.json")

// netlinkListing is what the kube-proxy readers got over nftables netlink,
// as recorded in testdata/: the IPv4 chains ("table/chain") and the
// elements of kube-proxy's service-ips map (keys in hex).
type netlinkListing struct {
	Chains     []string      `json:"chains"`
	ServiceIPs []recordedKey `json:"service_ips,omitempty"`
}

type recordedKey struct {
	Key         string `json:"key"`
	IntervalEnd bool   `json:"interval_end,omitempty"`
}

// ListChainsOfTableFamily answers the recorded IPv4 chains.
func (l *netlinkListing) ListChainsOfTableFamily(f nftables.TableFamily) ([]*nftables.Chain, error) {
	if f != nftables.TableFamilyIPv4 {
		return nil, fmt.Errorf("recorded IPv4 chains only, asked for family %d", f)
	}
	var out []*nftables.Chain
	for _, tc := range l.Chains {
		table, chain, ok := strings.Cut(tc, "/")
		if !ok {
			return nil, fmt.Errorf("recorded chain %q is not table/chain", tc)
		}
		out = append(out, &nftables.Chain{Name: chain, Table: &nftables.Table{Name: table, Family: nftables.TableFamilyIPv4}})
	}
	return out, nil
}

// GetSetElements answers the recorded service-ips elements.
func (l *netlinkListing) GetSetElements(s *nftables.Set) ([]nftables.SetElement, error) {
	if s.Table.Name != kpNFTTable || s.Name != kpServiceIPsMap {
		return nil, fmt.Errorf("recorded %s/%s only, asked for %s/%s", kpNFTTable, kpServiceIPsMap, s.Table.Name, s.Name)
	}
	var out []nftables.SetElement
	for _, k := range l.ServiceIPs {
		b, err := hex.DecodeString(k.Key)
		if err != nil {
			return nil, err
		}
		out = append(out, nftables.SetElement{Key: b, IntervalEnd: k.IntervalEnd})
	}
	return out, nil
}

// GetRules: no rules are recorded (the recorded readings ask for no
// endpoint keys).
func (l *netlinkListing) GetRules(*nftables.Table, *nftables.Chain) ([]*nftables.Rule, error) {
	return nil, errors.New("no rules recorded")
}

// record reads the namespace at ns over netlink as readKubeProxy does.
func record(t *testing.T, ns string) []byte {
	t.Helper()
	c, err := nftConn(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseLasting()
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyIPv4)
	if err != nil {
		t.Fatal(err)
	}
	var l netlinkListing
	for _, ch := range chains {
		l.Chains = append(l.Chains, ch.Table.Name+"/"+ch.Name)
	}
	slices.Sort(l.Chains)
	if slices.ContainsFunc(l.Chains, func(c string) bool { return c == kpNFTTable+"/services" }) {
		els, err := c.GetSetElements(&nftables.Set{Name: kpServiceIPsMap, IsMap: true,
			Table: &nftables.Table{Name: kpNFTTable, Family: nftables.TableFamilyIPv4}})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range els {
			l.ServiceIPs = append(l.ServiceIPs, recordedKey{Key: hex.EncodeToString(e.Key), IntervalEnd: e.IntervalEnd})
		}
		// The kernel answers in hash order: sorted, a new recording
		// differs only where the kernel's state does.
		slices.SortFunc(l.ServiceIPs, func(a, b recordedKey) int { return strings.Compare(a.Key, b.Key) })
	}
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestRecordNetlink rewrites testdata/*.json from the real kernel (with
// -update, as root): an empty namespace, GoldenSpec programmed by the
// lab's writer of each kube-proxy layout, each beside another tool's
// chains in table ip nat (a container runtime's DOCKER chain).
func TestRecordNetlink(t *testing.T) {
	if !*update {
		t.Skip("run with -update as root to record testdata/")
	}
	ns := labtest.ScratchNS(t, "npg")
	labtest.WriteGolden(t, "empty.json", record(t, ns))
	for _, c := range []struct {
		file string
		dp   func(ns string) (datapath.Datapath, error)
	}{
		{"iptables.json", func(ns string) (datapath.Datapath, error) {
			return iptables.New(ns, iptables.Options{ClusterCIDR: "198.19.0.0/16"})
		}},
		{"nftables.json", func(ns string) (datapath.Datapath, error) {
			return dpnft.New(ns, dpnft.Options{ClusterCIDR: "198.19.0.0/16", ServiceCIDR: datapath.ServiceCIDR.String()})
		}},
	} {
		ns := labtest.ScratchNS(t, "npg")
		for _, args := range [][]string{{"-t", "nat", "-N", "DOCKER"}, {"-t", "nat", "-A", "DOCKER", "-i", "docker0", "-j", "RETURN"}} {
			if _, err := nsexec.Run(t.Context(), ns, nil, "iptables-nft", args...); err != nil {
				t.Fatal(err)
			}
		}
		d, err := c.dp(ns)
		d = labtest.OrSkip(t, d, err)
		program(t, d, labtest.GoldenSpec())
		labtest.WriteGolden(t, c.file, record(t, ns))
	}
}

func recordedListing(t *testing.T, file string) *netlinkListing {
	t.Helper()
	var l netlinkListing
	if err := json.Unmarshal(labtest.ReadGolden(t, file), &l); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return &l
}

// Both kube-proxy readers on what netlink answered (recorded): GoldenSpec's
// 3 Service ports and 6 endpoints in the layout that holds them, named by
// the keys a sweep matches its Services by; the other layout absent, and
// another tool's chain in table ip nat (DOCKER) counted by neither.
func TestReadKubeProxyRecorded(t *testing.T) {
	for _, c := range []struct {
		file  string
		found string // datapath kind holding GoldenSpec, "" for none
	}{
		{"empty.json", ""},
		{"nftables.json", KubeProxyNFTables},
		{"iptables.json", KubeProxyIPTables},
	} {
		t.Run(c.file, func(t *testing.T) {
			res := readKubeProxyFrom(recordedListing(t, c.file), Query{})
			if len(res) != 2 {
				t.Fatalf("%d results, want nftables and iptables mode", len(res))
			}
			for i, kind := range []string{KubeProxyNFTables, KubeProxyIPTables} {
				r, err := res[i].r, res[i].err
				if kind != c.found {
					var a absentError
					if !errors.As(err, &a) || r != nil {
						t.Errorf("%s: %+v, %v; want absent", kind, r, err)
					}
					continue
				}
				if err != nil || r.datapath != kind || r.services != 3 || r.endpoints != 6 {
					t.Fatalf("%s: %+v, %v; want 3 Services, 6 endpoints", kind, r, err)
				}
				checkKeys(t, &Report{Datapath: r.datapath, Keys: r.keys}, labtest.GoldenSpec())
			}
		})
	}
}

// failingLister fails where asked to, as a netlink call can.
type failingLister struct {
	*netlinkListing
	chains, elements error
}

func (f failingLister) ListChainsOfTableFamily(fam nftables.TableFamily) ([]*nftables.Chain, error) {
	if f.chains != nil {
		return nil, f.chains
	}
	return f.netlinkListing.ListChainsOfTableFamily(fam)
}

func (f failingLister) GetSetElements(s *nftables.Set) ([]nftables.SetElement, error) {
	if f.elements != nil {
		return nil, f.elements
	}
	return f.netlinkListing.GetSetElements(s)
}

// A failed netlink read is an error saying which read, never a count of
// zero.
func TestReadKubeProxyNetlinkErrors(t *testing.T) {
	l := recordedListing(t, "nftables.json")
	res := readKubeProxyFrom(failingLister{netlinkListing: l, chains: errors.New("netlink receive: operation not permitted")}, Query{})
	if len(res) != 1 || res[0].err == nil || res[0].err.Error() != "kube-proxy: listing nftables chains: netlink receive: operation not permitted" {
		t.Errorf("chains unreadable: %+v", res)
	}
	res = readKubeProxyFrom(failingLister{netlinkListing: l, elements: errors.New("no such file or directory")}, Query{})
	if want := "kube-proxy nftables: reading map service-ips of table ip kube-proxy: no such file or directory"; res[0].err == nil || res[0].err.Error() != want || res[0].r != nil {
		t.Errorf("map unreadable: %+v, want %q", res[0], want)
	}
	// A key of another shape (not ipv4_addr . inet_proto . inet_service)
	// still counts as a Service but names none.
	l.ServiceIPs = append(l.ServiceIPs, recordedKey{Key: "c6128010"})
	if r := readKubeProxyFrom(l, Query{})[0].r; r == nil || r.services != 4 || len(r.keys) != 3 {
		t.Errorf("short key: %+v", r)
	}
}
