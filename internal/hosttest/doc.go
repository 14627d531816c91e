// Package hosttest holds what the lab tests need to hold on a busy, shared
// host: one snapshot of the root network namespace (Take, Diff), compared
// without the fields other tools and traffic change (counters, lifetimes,
// timers), and a noisy neighbour (StartNoisyNeighbour, RunMain) that keeps
// adding and removing its own namespaces, rules and routes and toggling the
// root's ip_forward while the tests run.
//
// It imports nothing of cnibench, so the lab package's own tests can use it
// (lab/labtest imports lab and cannot be imported by them).
package hosttest
