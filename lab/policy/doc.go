// Package policy programs NetworkPolicy-like L3/L4 rules into a lab node
// the way real CNIs enforce them: per-pod chains with peer sets in
// netfilter (Calico, kube-network-policies) or an identity map and a
// policy map looked up at the pod's tc hook (Cilium). As in package
// datapath, the plan (Spec) is kept apart from the live kernel objects:
// Program turns a Spec into kernel state, Verify reads the kernel back,
// and Drops counts what the policy dropped, read from the kernel, so a
// run can prove a denied flow was dropped before it measures anything.
package policy
