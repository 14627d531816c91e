// Package labtest holds the test helpers shared by the Service datapath
// packages (iptables, nftables): scratch namespaces and small labs built
// and removed around a test, listeners and clients in a lab's namespaces,
// and the checks every datapath must pass (balance, hairpin, scale). Only
// tests import it; it is a normal package so that several packages' tests
// can share one copy.
package labtest
