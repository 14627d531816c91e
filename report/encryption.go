package report

import (
	"fmt"
	"strings"
)

// encryptionCheck is target details' "encryption" (labtarget.EncryptionCheck).
type encryptionCheck struct {
	Mode           string   `json:"mode"`
	Implementation string   `json:"implementation"`
	Kernel         string   `json:"kernel_wireguard"`
	KernelESP      string   `json:"kernel_ipsec_esp"`
	MTU            int      `json:"pod_mtu"`
	Probes         []string `json:"probes"`
	Pinned         []string `json:"pinned"`
}

// encryptionText is one line saying how a scenario's traffic between
// nodes was encrypted and the probe that proved it; "" without.
func encryptionText(details map[string]any) string {
	c, ok := detail[encryptionCheck](details, "encryption")
	if !ok || c.Mode == "" {
		return ""
	}
	s := fmt.Sprintf("%s by %s; pods' MTU %d; kernel WireGuard: %s; kernel IPsec ESP: %s; %s; the daemons' CPU is each sample's datapath CPU",
		c.Mode, c.Implementation, c.MTU, c.Kernel, orNone(c.KernelESP), strings.Join(c.Probes, "; "))
	if len(c.Pinned) > 0 {
		s += " (daemons pinned as the nodes' agents: " + strings.Join(c.Pinned, ", ") + ")"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "not recorded"
	}
	return s
}
