package hosttest

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Snapshot is the root network namespace as far as cnibench could change
// it: per command, its own objects and the rest, volatile fields stripped.
type Snapshot map[string]Section

// Section is one command's output split by Normalise.
type Section struct{ Mine, Rest []string }

// rootCommands are read in the root namespace. ip -d addr shows every link
// with its details and addresses; both iptables backends are read, as
// another tool may use either.
var rootCommands = [][]string{
	{"ip", "-d", "addr"},
	{"ip", "route", "show", "table", "all"},
	{"ip", "-6", "route", "show", "table", "all"},
	{"ip", "rule"},
	{"ip", "-6", "rule"},
	{"nft", "list", "ruleset"},
	{"iptables-legacy-save"}, {"iptables-nft-save"},
	{"ip6tables-legacy-save"}, {"ip6tables-nft-save"},
}

// RootSysctls are the root namespace's sysctls the lab must never write:
// what it writes in its own namespaces (forwarding, reverse-path filter,
// proxy ARP, lab.DefaultSysctls) and what shapes forwarding.
var RootSysctls = []string{
	"net.ipv4.ip_forward",
	"net.ipv4.conf.all.forwarding", "net.ipv4.conf.default.forwarding",
	"net.ipv4.conf.all.rp_filter", "net.ipv4.conf.default.rp_filter",
	"net.ipv4.conf.all.proxy_arp", "net.ipv4.conf.default.proxy_arp",
	"net.ipv4.conf.all.accept_local", "net.ipv4.conf.all.route_localnet",
	"net.ipv4.ip_local_port_range", "net.ipv4.tcp_tw_reuse",
	"net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog",
	"net.netfilter.nf_conntrack_tcp_timeout_time_wait",
}

// Take snapshots the root namespace (the test must run in it). A tool that
// is not installed is left out; one that fails is recorded with its error,
// so a tool that starts or stops failing shows as a change.
func Take(t testing.TB) Snapshot {
	t.Helper()
	s := Snapshot{}
	for _, c := range rootCommands {
		if _, err := exec.LookPath(c[0]); err != nil {
			continue
		}
		out, err := exec.Command(c[0], c[1:]...).CombinedOutput()
		text := string(out)
		if err != nil {
			text += "\nerror: " + err.Error()
		}
		mine, rest := Normalise(text)
		s[strings.Join(c, " ")] = Section{mine, rest}
	}
	s["sysctls"] = Section{Rest: readSysctls(t)}
	return s
}

// readSysctls reads RootSysctls as "key = value" lines, while no noisy
// neighbour has ip_forward toggled (see toggleLock).
func readSysctls(t testing.TB) []string {
	t.Helper()
	unlock, err := lockToggles(false)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	var out []string
	for _, k := range RootSysctls {
		b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(k, ".", "/"))
		v := strings.Join(strings.Fields(string(b)), " ")
		if err != nil {
			v = "unreadable"
		}
		out = append(out, k+" = "+v)
	}
	return out
}

// Diff lists how after differs from before, one line per change: blocks
// that appeared (+) or disappeared (-), cnibench's own marked as such.
func Diff(before, after Snapshot) []string {
	var out []string
	keys := make([]string, 0, len(before))
	for k := range before {
		keys = append(keys, k)
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		b, a := before[k], after[k]
		n := len(out)
		for _, d := range blockDiff(b.Mine, a.Mine) {
			out = append(out, fmt.Sprintf("%s: cnibench object %s", k, d))
		}
		for _, d := range blockDiff(b.Rest, a.Rest) {
			out = append(out, fmt.Sprintf("%s: %s", k, d))
		}
		if len(out) == n && !slices.Equal(b.Rest, a.Rest) {
			out = append(out, k+": same entries in another order")
		}
	}
	return out
}

// blockDiff compares two lists of blocks as multisets.
func blockDiff(before, after []string) []string {
	count := map[string]int{}
	for _, b := range before {
		count[b]++
	}
	for _, a := range after {
		count[a]--
	}
	var out []string
	for _, b := range before {
		if count[b] > 0 {
			count[b]--
			out = append(out, "gone:\n  - "+strings.ReplaceAll(b, "\n", "\n    "))
		}
	}
	for _, a := range after {
		if count[a] < 0 {
			count[a]++
			out = append(out, "appeared:\n  + "+strings.ReplaceAll(a, "\n", "\n    "))
		}
	}
	return out
}

// AssertUnchanged fails the test with every difference between before and
// a snapshot taken now; when says at which point ("after Up+Down").
func AssertUnchanged(t testing.TB, before Snapshot, when string) {
	t.Helper()
	for _, d := range Diff(before, Take(t)) {
		t.Errorf("root namespace changed %s: %s", when, d)
	}
}
