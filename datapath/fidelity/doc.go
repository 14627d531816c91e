// Package fidelity compares the rules a lab datapath programs with the
// rules kube-proxy itself programs on a real node for the same Services.
//
// For each Service port it follows what a packet to the ClusterIP meets
// (the dispatch rule or map element, the service chain with its
// probabilities or numgen map, each endpoint chain with its hairpin mark
// and DNAT) and renders that walk as text. Chain names are hashed from the
// Service's name, port name, protocol and endpoint, so the same Services
// give the same names on both sides and the walks must match to the
// letter. Everything else in the table (base chains, jumps from the
// built-in chains, masquerading, sets) is compared chain by chain and
// every difference is listed, so a test can hold it against the list of
// deliberate differences in docs/service-scale.md.
//
// The inputs are the tools' text output (iptables-save, nft list table),
// so the parsers are tested on golden output without root.
package fidelity
