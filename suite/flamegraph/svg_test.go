package flamegraph

import (
	"bytes"
	"strings"
	"testing"
)

// The golden recording renders as well-formed SVG whose frames include
// the kernel's network stack on both sides, widest at the root.
func TestSVG(t *testing.T) {
	var b bytes.Buffer
	if err := SVG(&b, golden(t), "TCP_STREAM <pod-to-pod/other-node> & co"); err != nil {
		t.Fatal(err)
	}
	names, err := Titles(b.Bytes())
	if err != nil {
		t.Fatalf("not well-formed: %v", err)
	}
	all := strings.Join(names, "\n")
	for _, want := range []string{"all (", "tcp_sendmsg (", "net_rx_action (", "tcp_v4_rcv ("} {
		if !strings.Contains(all, want) {
			t.Errorf("no frame %q among %d", want, len(names))
		}
	}
	if !strings.HasPrefix(names[0], "all (114 samples, 100.00%)") {
		t.Errorf("first frame %q, want the root with every sample", names[0])
	}
	if !strings.Contains(b.String(), "&lt;pod-to-pod/other-node&gt; &amp; co") {
		t.Error("the title is not escaped")
	}
	var empty bytes.Buffer
	if err := SVG(&empty, &Stacks{Counts: map[string]int{}}, "nothing"); err != nil {
		t.Fatal(err)
	}
	if _, err := Titles(empty.Bytes()); err != nil {
		t.Errorf("an empty graph is not well-formed: %v", err)
	}
}
