// Package k8starget runs the suite on a real Kubernetes cluster through a
// kubeconfig: it picks two usable Linux nodes (or takes them from flags),
// creates one agent pod per endpoint the plan needs (pinned by node
// affinity, hostNetwork for host-to-host, a ClusterIP Service for
// pod-to-Service), waits for them with a timeout that names the reason a
// pod is stuck, drives the agents over their control API (token per run
// from a Secret, checksummed answers), records the cluster's provenance
// (Kubernetes version, nodes, CNI and its mode) and removes everything it
// labelled, also on errors and Ctrl-C.
//
// Endpoint names follow the lab's (node0-pod0, node0-pod1, node1-pod0,
// node0, node1), so results of both targets line up; Details maps them to
// the real pods and nodes. Every object carries
// app.kubernetes.io/managed-by=cnibench and the run id.
//
// Everything talking to the API server takes a kubernetes.Interface, so the
// whole lifecycle is tested against client-go's fake clientset.
package k8starget
