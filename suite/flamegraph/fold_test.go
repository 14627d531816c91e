package flamegraph

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func golden(t *testing.T) *Stacks {
	t.Helper()
	f, err := os.Open("testdata/perf-script-tcp-stream.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ParsePerfScript(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// perf script output recorded on the lab's two CPUs during a TCP_STREAM
// (139 samples, 25 of the idle task) folds into command-rooted stacks,
// outermost frame first, kernel frames marked, the idle loop counted
// apart and softirq work that ran in the idle task kept.
func TestParsePerfScript(t *testing.T) {
	s := golden(t)
	if got := s.Samples() + s.Idle; got != 139 {
		t.Errorf("%d samples + %d idle, want 139 in all", s.Samples(), s.Idle)
	}
	if s.Idle == 0 || s.Idle > 25 {
		t.Errorf("%d idle samples, want 1..25 (the swapper samples in the halt loop)", s.Idle)
	}
	var send, rx, user bool
	for stack := range s.Counts {
		frames := strings.Split(stack, ";")
		if frames[0] != "cnibench" && frames[0] != "swapper" && !strings.HasPrefix(frames[0], "ksoftirqd") && frames[0] != "perf" {
			continue
		}
		if strings.Contains(stack, "+0x") || strings.Contains(stack, "ffffffff") {
			t.Fatalf("offsets or addresses left in %q", stack)
		}
		send = send || strings.Contains(stack, ";entry_SYSCALL_64_after_hwframe_[k];") && strings.Contains(stack, ";tcp_sendmsg_[k]")
		rx = rx || strings.Contains(stack, ";net_rx_action_[k];")
		user = user || strings.HasPrefix(stack, "cnibench;[cnibench];")
	}
	if !send || !rx || !user {
		t.Errorf("want a syscall into tcp_sendmsg (%v), net_rx_action (%v) and a user frame of cnibench (%v)", send, rx, user)
	}
	var b bytes.Buffer
	if err := s.WriteFolded(&b); err != nil {
		t.Fatal(err)
	}
	back, err := ReadFolded(&b)
	if err != nil || back.Samples() != s.Samples() || len(back.Counts) != len(s.Counts) {
		t.Errorf("folded round trip: %d stacks, %d samples (%v); want %d, %d", len(back.Counts), back.Samples(), err, len(s.Counts), s.Samples())
	}
}

// Malformed input is an error naming the line, never a silent graph.
func TestParseErrors(t *testing.T) {
	for _, in := range []string{"\tffff tcp_sendmsg+0x1 ([kernel.kallsyms])\n", "garbage without a cpu\n"} {
		if _, err := ParsePerfScript(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: %v", in, err)
		}
	}
	if _, err := ReadFolded(strings.NewReader("a;b x\n")); err == nil {
		t.Error("a folded line without a count was read")
	}
	for h, want := range map[string]string{
		"swapper     0 [000]  1776.845976:    2004008 cpu-clock: ": "swapper",
		"kworker/u4:1-ev 99 [001] 1.0: 1 cpu-clock:":               "kworker/u4:1-ev",
		"Web Content 1234/1240 [001] 1.0: 1 cpu-clock:":            "Web Content",
	} {
		if got, ok := headerComm(h); !ok || got != want {
			t.Errorf("%q: %q %v, want %q", h, got, ok, want)
		}
	}
	for f, want := range map[string]string{
		"ffffffff8200ec65 tcp_sendmsg+0x35 ([kernel.kallsyms])": "tcp_sendmsg_[k]",
		"d00e [unknown] (/work/main/bin/cnibench)":              "[cnibench]",
		"7f00 __libc_send+0x10 (/usr/lib/libc.so.6)":            "__libc_send",
		"0 [unknown] ([unknown])":                               "[unknown]",
	} {
		if got := frameName(f); got != want {
			t.Errorf("%q: %q, want %q", f, got, want)
		}
	}
}
