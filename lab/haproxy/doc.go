// Package haproxy runs the lab's HAProxy processes: the per-node and
// sidecar L7 proxies (lab/l7proxy) and the ambient mesh's node proxies and
// waypoint (lab/ambient). It owns what every one of them does alike —
// start in a namespace, cgroup and CPU set, wait for the stats socket,
// read "show stat", account CPU, stop, and find and kill its own
// processes again after a crash — so the proxies' packages keep only
// their configs and counters.
package haproxy
