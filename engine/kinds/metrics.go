package kinds

// Metric names. They read as nouns ("5% higher throughput") because
// comparisons print them that way. They live here so engine packages can
// name their metrics without importing results; results re-exports them.
const (
	MetricThroughput     = "throughput"
	MetricOffered        = "offered rate"
	MetricLoss           = "loss"
	MetricRate           = "rate"
	MetricRPS            = "request rate"
	MetricP50            = "p50 latency"
	MetricP90            = "p90 latency"
	MetricP99            = "p99 latency"
	MetricP999           = "p99.9 latency"
	MetricMin            = "min latency"
	MetricMean           = "mean latency"
	MetricMax            = "max latency"
	MetricP99Uncorr      = "p99 latency, uncorrected"
	MetricErrors         = "errors"
	MetricMissedBy       = "missed target by"
	MetricClientUtil     = "client CPU use"
	MetricClientCPUOp    = "client CPU per op"
	MetricServerCPUOp    = "server CPU per op"
	MetricClientCPUGB    = "client CPU per GB"
	MetricServerCPUGB    = "server CPU per GB"
	MetricClientCPUReq   = "client CPU per request"
	MetricServerCPUReq   = "server CPU per request"
	MetricQPS            = "query rate"
	MetricDNSLoss        = "lost queries"
	MetricClientCPUQuery = "client CPU per query"
	MetricServerCPUQuery = "server CPU per query"

	MetricDatapathCPUOp    = "datapath CPU per op"
	MetricDatapathCPUReq   = "datapath CPU per request"
	MetricDatapathCPUQuery = "datapath CPU per query"
	MetricDatapathCPUGB    = "datapath CPU per GB"
)
