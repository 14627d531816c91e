// Package churn changes a Service datapath at a controlled rate while
// traffic runs, the way a moving cluster does (a Deployment scaled up and
// down, pods replaced, Services created and deleted), and measures what
// the datapath makes of it: the churn rate really achieved, each change's
// programming latency (made → committed by every node's kernel), the
// sync loop's syncs and CPU.
//
// The sync loop behaves like the Service proxy it stands for: kube-proxy
// (iptables, nftables) coalesces changes and syncs at most once per
// minimum sync interval (--iptables-min-sync-period, --min-sync-period,
// 1 s by default), each sync a partial one; Cilium's agent updates the
// BPF maps per change (interval 0; here the eBPF datapath diffs the whole
// table against the last one to find the entries to write, which costs
// more than Cilium's per-event update). A change is held when the sync that
// carried it returns: every lab datapath commits synchronously on every
// node. After each window the whole datapath is read back (Verify) and must
// hold exactly the last sync. A datapath that only hands a sync on (a
// cluster's API server, datapath.Async) is written each change as it comes
// and each sync's changes are held when the datapath's wait for that sync
// says every node holds them (in the background, while later changes are
// written): never reported before.
package churn
