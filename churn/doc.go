// Package churn changes a Service datapath at a controlled rate while
// traffic runs, the way a moving cluster does (a Deployment scaled up and
// down, pods replaced, Services created and deleted), and measures what
// the datapath makes of it: the churn rate really achieved, each change's
// programming latency (made → read back from every node's kernel), the
// sync loop's syncs and CPU.
//
// The sync loop behaves like the Service proxy it stands for: kube-proxy
// (iptables, nftables) coalesces changes and syncs at most once per
// minimum sync interval (--iptables-min-sync-period, --min-sync-period,
// 1 s by default), each sync a partial one; Cilium's agent updates the
// BPF maps per change (interval 0). A change counts as programmed only
// once Verify, which reads every Service and endpoint back from the
// kernel, confirms the sync that carried it: never before.
package churn
