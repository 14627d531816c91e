package report

import (
	"fmt"
	"strings"
)

// methodSection closes the report: how its values, intervals and
// verdicts are computed, and how a winner is picked.
type methodSection struct{}

const methodHeading = "How to read this"

func (methodSection) markdown(b *strings.Builder, rep *Report) {
	fmt.Fprintf(b, "## %s\n\n%s%s\n", methodHeading, methodText, rep.WinnerRule)
}

var methodHTML = sectionTmpl("method", htmlHeading("h2", "method", methodHeading)+`
<p class="method">{{.}}</p>
`)

func (methodSection) html(b *strings.Builder, rep *Report) error {
	return methodHTML.Execute(b, methodText+rep.WinnerRule)
}

const methodText = "Each value is the median over rounds (one sample per round; for latency, each round's own percentile) with a " +
	"distribution-free 95% confidence interval for the median (order statistics; † marks a sample range whose true coverage is below 95%, " +
	"fewer than 6 rounds). Two columns of one interleaved run are shown and compared on the rounds both completed " +
	"(‡ marks a cell that left some of its rounds out for that); with more columns, each verdict pairs the rounds its two columns completed. " +
	"A verdict compares two columns on the log scale, so the effect is a ratio: columns of one run round by round (the geometric mean of " +
	"the per-round ratios with its t-interval; when a round delivered nothing, the Wilcoxon signed-rank test with the Hodges–Lehmann ratio, " +
	"in which that round ranks worst), columns of separate runs by ranks (Mann–Whitney with the Hodges–Lehmann shift, exact coverage printed " +
	"where it is not 95%). The effect printed is that method's estimate with that method's interval. Significant means the interval lies " +
	"beyond the minimum effect (1%): the p-value tests \"no change beyond the minimum effect\", and the report holds all its p-values to a " +
	"5% false-discovery rate (Benjamini–Hochberg), each comparison counted once. Not significant: \"no difference beyond noise\" when the " +
	"interval stays within ±10%, else \"inconclusive\" (more rounds needed). " +
	"Loss, errors and missed target are judged on their complement (delivered share); a rate of 0 is the worst value, never a missing one. "
