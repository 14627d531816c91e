package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Off a terminal, a progress bar's "\r" frames become plain lines: the
// first, then at most one per interval, and the final one; other output
// passes through untouched.
func TestProgressFramesOffTerminal(t *testing.T) {
	var buf bytes.Buffer
	w := progressOut(&buf) // a buffer is no terminal
	f, ok := w.(*frameLines)
	if !ok {
		t.Fatalf("progressOut on a buffer: %T, want frame lines", w)
	}
	// A clock of our own: on a busy machine 60 writes could take longer
	// than the interval (this test failed once beside a CI run).
	clock := time.Unix(0, 0)
	f.every, f.now = 50*time.Millisecond, func() time.Time { return clock }
	fmt.Fprintf(w, "step 1: programming ...")
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(w, "\rcreating [%3d/100]", i)
		if i == 60 {
			clock = clock.Add(60 * time.Millisecond)
		}
	}
	fmt.Fprintf(w, "\rcreating [100/100] in 1s\n")
	fmt.Fprintf(w, " ok\n")
	got := buf.String()
	if strings.Contains(got, "\r") {
		t.Errorf("carriage return in a log: %q", got)
	}
	want := "step 1: programming ...\ncreating [  1/100]\ncreating [ 61/100]\ncreating [100/100] in 1s\n ok\n"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
