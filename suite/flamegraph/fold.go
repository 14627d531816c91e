// Package flamegraph samples CPU stacks on chosen CPUs while a test runs
// (Debian's linux-perf: `perf record -e cpu-clock -g`, which needs no
// hardware counters and so works in VMs), folds them as Brendan Gregg's
// stackcollapse-perf does ("comm;outer;…;leaf count", kernel frames
// marked "_[k]") and renders a self-contained flame graph SVG. The
// parser is kept behind plain readers so it is tested on recorded perf
// output without root.
package flamegraph

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// KernelSuffix marks a kernel frame in folded stacks (stackcollapse's
// --kernel convention), so the renderer can colour the kernel apart.
const KernelSuffix = "_[k]"

// Stacks are folded stacks: each distinct stack, outermost frame first
// with the task's command as the root, and how many samples it had.
type Stacks struct {
	Counts map[string]int
	// Idle is how many samples found a CPU idle (the idle task in its
	// halt loop): they are left out of Counts, so the graph shows work.
	Idle int
}

// Samples is the number of samples in Counts.
func (s *Stacks) Samples() int {
	n := 0
	for _, c := range s.Counts {
		n += c
	}
	return n
}

// ParsePerfScript folds `perf script` output (its default format: a
// header line "comm pid [cpu] time: period event:" then one frame per line,
// innermost first, "addr symbol+off (dso)", and a blank line).
func ParsePerfScript(r io.Reader) (*Stacks, error) {
	s := &Stacks{Counts: map[string]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var comm string
	var frames []string
	inSample := false
	flush := func() {
		if inSample {
			s.add(comm, frames)
		}
		inSample, frames = false, frames[:0]
	}
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		switch {
		case strings.TrimSpace(text) == "":
			flush()
		case text[0] != ' ' && text[0] != '\t':
			flush()
			c, ok := headerComm(text)
			if !ok {
				return nil, fmt.Errorf("perf script line %d: not a sample header: %q", line, text)
			}
			comm, inSample = c, true
		case inSample:
			frames = append(frames, frameName(strings.TrimSpace(text)))
		default:
			return nil, fmt.Errorf("perf script line %d: a frame outside a sample: %q", line, text)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	flush()
	return s, nil
}

// headerComm is a sample header's command: what precedes the pid, the
// field before "[cpu]" (commands may contain spaces).
func headerComm(h string) (string, bool) {
	i := strings.Index(h, " [")
	if i < 0 || !strings.Contains(h[i:], "]") {
		return "", false
	}
	f := strings.Fields(h[:i])
	if len(f) < 2 {
		return "", false
	}
	if _, err := strconv.Atoi(f[len(f)-1]); err != nil { // the pid (or pid/tid)
		if _, _, ok := strings.Cut(f[len(f)-1], "/"); !ok {
			return "", false
		}
	}
	return strings.Join(f[:len(f)-1], " "), true
}

// frameName is one frame's function: "ffff… tcp_sendmsg+0x35
// ([kernel.kallsyms])" is "tcp_sendmsg_[k]", an unresolved user frame
// "[unknown] (/usr/bin/x)" is "[x]".
func frameName(f string) string {
	_, rest, _ := strings.Cut(f, " ")
	rest = strings.TrimSpace(rest)
	sym, dso := rest, ""
	if i := strings.LastIndex(rest, " ("); i >= 0 && strings.HasSuffix(rest, ")") {
		sym, dso = rest[:i], rest[i+2:len(rest)-1]
	}
	if i := strings.LastIndex(sym, "+0x"); i > 0 {
		sym = sym[:i]
	}
	if sym == "[unknown]" || sym == "" {
		if dso == "" || dso == "[unknown]" {
			return "[unknown]"
		}
		return "[" + filepath.Base(dso) + "]"
	}
	sym = strings.NewReplacer(";", ":", " ", "_").Replace(sym)
	if strings.HasPrefix(dso, "[kernel.") {
		return sym + KernelSuffix
	}
	return sym
}

// idleLeaves are the functions an idle CPU waits in.
var idleLeaves = []string{"pv_native_safe_halt", "default_idle", "native_safe_halt", "mwait_idle", "intel_idle", "acpi_idle",
	"cpu_idle_poll", "poll_idle", "cpuidle_enter_state", "arch_cpu_idle"}

func (s *Stacks) add(comm string, frames []string) {
	if len(frames) == 0 {
		frames = []string{"[no stack]"}
	}
	leaf := strings.TrimSuffix(frames[0], KernelSuffix)
	if strings.HasPrefix(comm, "swapper") && slices.Contains(idleLeaves, leaf) {
		s.Idle++
		return
	}
	var b strings.Builder
	b.WriteString(strings.ReplaceAll(comm, ";", ":"))
	prev := ""
	for _, f := range slices.Backward(frames) {
		if f == prev && strings.HasPrefix(f, "[") {
			continue // unresolved frames of one binary in a row say nothing more
		}
		prev = f
		b.WriteByte(';')
		b.WriteString(f)
	}
	s.Counts[b.String()]++
}

// WriteFolded writes one "stack count" line per stack, sorted, as
// flamegraph.pl and speedscope read them.
func (s *Stacks) WriteFolded(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, k := range slices.Sorted(maps.Keys(s.Counts)) {
		fmt.Fprintf(bw, "%s %d\n", k, s.Counts[k])
	}
	return bw.Flush()
}

// ReadFolded reads what WriteFolded wrote.
func ReadFolded(r io.Reader) (*Stacks, error) {
	s := &Stacks{Counts: map[string]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" {
			continue
		}
		i := strings.LastIndexByte(t, ' ')
		n, err := strconv.Atoi(t[i+1:])
		if i <= 0 || err != nil || n < 0 {
			return nil, fmt.Errorf("folded stacks line %d: want \"frame;frame count\": %q", line, t)
		}
		s.Counts[t[:i]] += n
	}
	return s, sc.Err()
}
