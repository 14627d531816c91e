package nodeprobe

import (
	"fmt"
	"os"

	"github.com/google/nftables"
)

// nftConn opens one nftables netlink connection in the network namespace
// at path ("" = the probe's own), kept open for the whole read.
func nftConn(path string) (*nftables.Conn, error) {
	if path == "" {
		c, err := nftables.New(nftables.AsLasting())
		if err != nil {
			return nil, fmt.Errorf("nftables netlink: %w", err)
		}
		return c, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("network namespace: %w", err)
	}
	// The socket is created inside the namespace while f is open; it
	// stays there after f is closed.
	defer f.Close()
	c, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())), nftables.AsLasting())
	if err != nil {
		return nil, fmt.Errorf("nftables netlink in %s: %w", path, err)
	}
	return c, nil
}

// kpResult is one kube-proxy mode's reading or why there is none.
type kpResult struct {
	r   *reading
	err error
}

// nftLister is what the kube-proxy readers ask of an nftables netlink
// connection: a *nftables.Conn in the probe, recorded answers in tests.
type nftLister interface {
	ListChainsOfTableFamily(nftables.TableFamily) ([]*nftables.Chain, error)
	GetSetElements(*nftables.Set) ([]nftables.SetElement, error)
	GetRules(*nftables.Table, *nftables.Chain) ([]*nftables.Rule, error)
}

// readKubeProxy reads both kube-proxy layouts in the namespace at netns
// ("" = the probe's own), as q asks.
func readKubeProxy(netns string, q Query) []kpResult {
	c, err := nftConn(netns)
	if err != nil {
		return []kpResult{{err: fmt.Errorf("kube-proxy: %w", err)}}
	}
	defer c.CloseLasting()
	return readKubeProxyFrom(c, q)
}

// readKubeProxyFrom reads both kube-proxy layouts from one dump of the
// IPv4 chains, nftables mode first: kube-proxy deletes the other mode's
// objects when it starts, so normally at most one is there.
func readKubeProxyFrom(c nftLister, q Query) []kpResult {
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return []kpResult{{err: fmt.Errorf("kube-proxy: listing nftables chains: %w", err)}}
	}
	byTable := map[string][]string{}
	for _, ch := range chains {
		if ch.Table != nil {
			byTable[ch.Table.Name] = append(byTable[ch.Table.Name], ch.Name)
		}
	}
	nr, nerr := readKubeProxyNFT(c, byTable[kpNFTTable], q.EndpointsOf)
	ir, ierr := readKubeProxyIPT(c, byTable[iptNATTable], q)
	return []kpResult{{nr, nerr}, {ir, ierr}}
}
