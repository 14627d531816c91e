package wireguard

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"strings"
)

// Device is the name of every node's WireGuard device.
const Device = "cnb_wg0"

// Port is the UDP port every node's WireGuard listens on (WireGuard's).
const Port = 51820

// Overhead is what WireGuard adds to an IPv4 packet: outer IPv4 (20),
// UDP (8), its header (16) and the Poly1305 tag (16).
const Overhead = 60

// Peer is another node as a node's WireGuard sees it.
type Peer struct {
	Name      string         `json:"name"`
	PublicKey Key            `json:"public_key"`
	Endpoint  netip.AddrPort `json:"endpoint"` // its node address and Port
	// AllowedIPs are what may come from it and is sent to it: its pod
	// range and its WireGuard address.
	AllowedIPs []netip.Prefix `json:"allowed_ips"`
}

// NodeConfig is one node's daemon configuration (written 0600: it holds
// the private key).
type NodeConfig struct {
	Node       string `json:"node"`
	PrivateKey Key    `json:"private_key"`
	MTU        int    `json:"mtu"`
	Peers      []Peer `json:"peers"`
	// Ready is the file the daemon creates once its device is up.
	Ready string `json:"ready"`
}

// uapi is the configuration in WireGuard's text protocol (IpcSet).
func (c NodeConfig) uapi() string {
	var b strings.Builder
	fmt.Fprintf(&b, "private_key=%s\nlisten_port=%d\nreplace_peers=true\n", c.PrivateKey.Hex(), Port)
	for _, p := range c.Peers {
		fmt.Fprintf(&b, "public_key=%s\nendpoint=%s\nreplace_allowed_ips=true\n", p.PublicKey.Hex(), p.Endpoint)
		for _, a := range p.AllowedIPs {
			fmt.Fprintf(&b, "allowed_ip=%s\n", a)
		}
	}
	return b.String()
}

func (c NodeConfig) write(path string) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

func readConfig(path string) (NodeConfig, error) {
	var c NodeConfig
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil {
		return c, fmt.Errorf("wireguard config %s: %w", path, err)
	}
	return c, nil
}
