package fidelity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readDump(t *testing.T, name string) *Dump {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var d *Dump
	if strings.HasSuffix(name, ".save") {
		d, err = ParseIPTablesSave(b)
	} else {
		d, err = ParseNFT(b)
	}
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The walks of the golden Services: dispatch, service chain, endpoint
// chains, in that order, with every line of each.
func TestWalk(t *testing.T) {
	four := goldenServices()[1]
	for _, c := range []struct {
		file  string
		lines int
		first string
		last  string
	}{
		// dispatch + masquerade + 4 jumps + 4 × (hairpin, DNAT)
		{"lab-iptables.save", 14, "nat/KUBE-SERVICES: -d 198.18.130.21/32 -p tcp -m comment --comment \"default/four:http cluster IP\" -m tcp --dport 8080 -j KUBE-SVC-E6UQFSBITOHWI3AP",
			"nat/KUBE-SEP-JIXPEMP34KH5BWQG: -p tcp -m comment --comment \"default/four:http\" -m tcp -j DNAT --to-destination 198.19.1.11:80"},
		// cluster-ips + service-ips + masquerade + numgen + 4 × 2
		{"lab-nftables.txt", 12, "cluster-ips: 198.18.130.21",
			"endpoint-"},
	} {
		w, err := readDump(t, c.file).Walk(four)
		if err != nil {
			t.Fatal(err)
		}
		if len(w) != c.lines || w[0] != c.first || !strings.HasPrefix(w[len(w)-1], c.last) {
			t.Errorf("%s: walk of %s:\n%s", c.file, four.Key(), strings.Join(w, "\n"))
		}
	}
}

func TestCompareSameIsEqual(t *testing.T) {
	for _, f := range []string{"lab-iptables.save", "lab-nftables.txt"} {
		r, err := Compare(readDump(t, f), readDump(t, f), goldenServices())
		if err != nil {
			t.Fatal(err)
		}
		if len(r.ServiceDiffs)+len(r.Layout) != 0 || r.Services != 3 {
			t.Errorf("%s against itself:\n%s", f, r)
		}
	}
}

// A changed probability, a missing endpoint chain, a missing shared
// chain and a rule of another tool: each shows where it should, and the
// other tool's rule does not show at all.
func TestCompareFindsDifferences(t *testing.T) {
	r := compareEdited(t, func(s string) string {
		s = strings.Replace(s, "--probability 0.33333333349", "--probability 0.33333333333", 1)
		s = strings.Replace(s, "-A KUBE-SEP-HDXFZ6I5G2PWXDQB -s 198.19.1.12/32", "-A KUBE-SEP-HDXFZ6I5G2PWXDQB -s 198.19.1.99/32", 1)
		s = strings.Replace(s, "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n", "", 1)
		s = strings.Replace(s, ":KUBE-MARK-MASQ - [0:0]\n", ":DOCKER - [0:0]\n", 1)
		return strings.Replace(s, "*nat\n", "*nat\n-A POSTROUTING -s 172.17.0.0/16 -j MASQUERADE\n-A DOCKER -j RETURN\n", 1)
	})
	got := r.String()
	for _, want := range []string{
		"default/four:8080/tcp: line 4: lab",
		"0.33333333333",
		"scale/dns:53/udp: line",
		"198.19.1.99/32",
		"only on lab: nat/KUBE-MARK-MASQ",
		"3 Service ports compared, 2 differ, 0 in comments only",
		"1 layout differences",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "DOCKER") || strings.Contains(got, "172.17") {
		t.Errorf("another tool's rules reached the report:\n%s", got)
	}
}

// Walks that differ only in comments are told apart from real
// differences.
func TestCommentOnlyDifference(t *testing.T) {
	r := compareEdited(t, func(s string) string {
		return strings.Replace(s, ` -m comment --comment "default/four:http -> 198.19.0.10:80"`, "", 1)
	})
	if len(r.ServiceDiffs) != 0 || len(r.CommentOnly) != 1 || r.CommentOnly[0] != "default/four:8080/tcp" {
		t.Errorf("%s", r)
	}
}

func TestMissingServiceIsADiff(t *testing.T) {
	lab := readDump(t, "lab-nftables.txt")
	svcs := goldenServices()
	svcs[0].Port = 81
	r, err := Compare(lab, lab, svcs)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ServiceDiffs) != 1 || !strings.Contains(r.ServiceDiffs[0], "nothing dispatches default/one:81/tcp") {
		t.Errorf("%s", r)
	}
}

func TestParseErrors(t *testing.T) {
	if _, err := ParseIPTablesSave([]byte("-A KUBE-SERVICES -j X\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("rule before a table: %v", err)
	}
	if _, err := ParseNFT([]byte("table ip kube-proxy {\n\tset s {\n\t\telements = { 1.2.3.4,\n")); err == nil {
		t.Error("unclosed elements parsed")
	}
	if _, err := Compare(&Dump{Layout: "iptables"}, &Dump{Layout: "nftables"}, nil); err == nil {
		t.Error("compared an iptables dump with an nftables dump")
	}
}

// compareEdited compares the lab's iptables golden with an edited copy of
// it standing for the node.
func compareEdited(t *testing.T, edit func(string) string) *Report {
	t.Helper()
	b, err := os.ReadFile("testdata/lab-iptables.save")
	if err != nil {
		t.Fatal(err)
	}
	node, err := ParseIPTablesSave([]byte(edit(string(b))))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Compare(readDump(t, "lab-iptables.save"), node, goldenServices())
	if err != nil {
		t.Fatal(err)
	}
	return r
}
