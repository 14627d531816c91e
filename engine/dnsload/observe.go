package dnsload

// observer, when a test sets it, sees every query an open loop sends and
// every response that ends a query, and when the loop stops the queries
// still in flight and those due in the window it never sent, in the run's
// clock (ns since the
// run's base; the window is [r.measFrom, r.measTo)). The totals count by
// the clock (a query is sent, or answered, when that happens in the
// window), so on a busy host a loop that waits for a CPU at an edge of
// the window moves queries across it: 2,050 or 1,945 answers for 2,000
// q/s × 1 s. With these a test counts apart what the schedule asked for
// and what the clock let through (dnsload_test.go, TestFixedQPS). Tests
// that set it must not run in parallel with other runs; nil costs one
// compare per query.
var observer interface {
	sent(r *run, intended, t0 int64)
	answered(r *run, intended, t0, now int64)
	inFlight(r *run, intended, t0 int64)
	unsent(r *run, intended int64)
}
