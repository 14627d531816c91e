package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cnibench/cnibench/results"
)

// SummaryFile is the short Markdown summary written beside results.json.
const SummaryFile = "summary.md"

// WriteSummary writes dir/summary.md for run.
func WriteSummary(dir string, run *results.Run) error {
	f, err := os.Create(filepath.Join(dir, SummaryFile))
	if err != nil {
		return err
	}
	if err := Summary(f, run); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Summary writes a Markdown summary: provenance, then the result tables.
func Summary(w io.Writer, run *results.Run) error {
	streams, rr, err := summarize(run)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "# cnibench run %s\n\n", run.RunID)
	fmt.Fprintf(w, "Status: **%s**", run.Status)
	if run.Error != "" {
		fmt.Fprintf(w, " (%s)", run.Error)
	}
	fmt.Fprintf(w, ". Started %s, took %s.\n\n", run.Start.Format(time.RFC3339), run.End.Sub(run.Start).Round(time.Second))
	e := run.Environment
	fmt.Fprintf(w, "| | |\n|---|---|\n")
	fmt.Fprintf(w, "| Tool | %s %s (%s, %s) |\n", run.Tool.Name, run.Tool.Version, short(run.Tool.Commit), run.Tool.GoVersion)
	fmt.Fprintf(w, "| Machine | %s, %d CPUs, %.1f GiB, kernel %s, %s |\n", e.CPUModel, e.CPUCount, float64(e.MemoryBytes)/(1<<30), e.Kernel, e.OS)
	if len(run.Scenarios) > 1 {
		for _, sc := range run.Scenarios {
			fmt.Fprintf(w, "| Scenario %s | %s%s |\n", sc.Name, sc.Target.Kind, details(sc.Target.Details))
		}
	} else {
		fmt.Fprintf(w, "| Target | %s%s |\n", run.Target.Kind, details(run.Target.Details))
	}
	p := run.Plan
	fmt.Fprintf(w, "| Plan | profile %s, %d round(s), %s per sample after %s warmup, RR mode %s, N=%d for *_MULTI |\n\n",
		p.Profile, p.Rounds, time.Duration(p.Duration), time.Duration(p.Warmup), p.Mode, p.Streams)

	if len(rr) > 0 {
		fmt.Fprintf(w, "## Request/response\n\nRate is the median over rounds; percentiles come from the merged histogram of all rounds (µs).\n\n")
		fmt.Fprintf(w, "| Test | Placement | Samples | Rate/s | Min | P50 | P90 | P99 | P99.9 | Max | CPU µs/op client+server |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range rr {
			if l := r.sum.Latency; l != nil && r.sum.Samples > r.sum.Failed {
				fmt.Fprintf(w, "| %s | %s | %s | %.0f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %s |\n", r.res.Test, r.where, samplesCell(r.sum), r.sum.RatePerSec, l.MinUs, l.P50Us, l.P90Us, l.P99Us, l.P999Us, l.MaxUs, cpuCell(r.sum.ClientCPUPerOp, r.sum.ServerCPUPerOp))
			} else {
				fmt.Fprintf(w, "| %s | %s | %s | failed: %s | | | | | | | |\n", r.res.Test, r.where, samplesCell(r.sum), oneLine(r.sum.FirstSampleErr))
			}
		}
		fmt.Fprintln(w)
	}
	if len(streams) > 0 {
		fmt.Fprintf(w, "## Throughput\n\nDelivered goodput as the receiver counted it (median over rounds).\n\n")
		fmt.Fprintf(w, "| Test | Placement | Samples | Streams | Gbit/s | Offered Gbit/s | Loss %% | CPU s/GB client+server |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range streams {
			if r.sum.Samples > r.sum.Failed {
				offered, loss := "", ""
				if r.sum.OfferedBits > 0 {
					offered = fmt.Sprintf("%.2f", r.sum.OfferedBits/1e9)
					loss = fmt.Sprintf("%.2f", r.sum.LossPercent)
				}
				fmt.Fprintf(w, "| %s | %s | %s | %d | %.2f | %s | %s | %s |\n", r.res.Test, r.where, samplesCell(r.sum), r.res.Options.Streams, r.sum.ThroughputBits/1e9, offered, loss, cpuCell(r.sum.ClientCPUPerGB, r.sum.ServerCPUPerGB))
			} else {
				fmt.Fprintf(w, "| %s | %s | %s | %d | failed: %s | | | |\n", r.res.Test, r.where, samplesCell(r.sum), r.res.Options.Streams, oneLine(r.sum.FirstSampleErr))
			}
		}
		fmt.Fprintln(w)
	}
	return nil
}

func details(d map[string]any) string {
	if len(d) == 0 {
		return ""
	}
	var keys []string
	for k, v := range d {
		switch v.(type) {
		case string, int, float64, bool:
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%v", k, d[k]))
	}
	return ": " + strings.Join(parts, ", ")
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", "/")
	return s
}
