// Package all registers every lab scenario part: a new part is its
// package under parts/ and one import here.
package all

import (
	_ "github.com/cnibench/cnibench/targets/labtarget/parts/ambientpart"    // ambient
	_ "github.com/cnibench/cnibench/targets/labtarget/parts/build"          // native, vxlan, the Service datapaths, socklb-off, churn
	_ "github.com/cnibench/cnibench/targets/labtarget/parts/encryptionpart" // wireguard
	_ "github.com/cnibench/cnibench/targets/labtarget/parts/flowspart"      // flows
	_ "github.com/cnibench/cnibench/targets/labtarget/parts/l7part"         // l7-node, l7-egress, l7-sidecar
	_ "github.com/cnibench/cnibench/targets/labtarget/parts/policypart"     // policy, policy-N
	_ "github.com/cnibench/cnibench/targets/labtarget/parts/tuningpart"     // cc-ALGO, gro-*, gso-*, mtu-N, notrack, busy-poll, node-rps
)
