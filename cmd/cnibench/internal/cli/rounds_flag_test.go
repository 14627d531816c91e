package cli

import (
	"strings"
	"testing"
)

// --rounds takes a number or auto[:MAX] (run only); anything else is a
// one-line error naming the value.
func TestRoundsFlag(t *testing.T) {
	for _, c := range []struct {
		in      string
		autoOK  bool
		n, auto int
		err     string
	}{
		{"7", true, 7, 0, ""},
		{"auto", true, 0, defaultAutoMax, ""},
		{"auto:20", true, 0, 20, ""},
		{"auto:4", true, 0, 0, "the most rounds must be 5 to 40"},
		{"auto:41", true, 0, 0, "the most rounds must be 5 to 40"},
		{"autox", true, 0, 0, `want auto or auto:MAX`},
		{"0", true, 0, 0, "must be at least 1"},
		{"five", true, 0, 0, `want a number of rounds or auto[:MAX], got "five"`},
		{"auto", false, 0, 0, "auto is for run's interleaved rounds"},
	} {
		var n, auto int
		err := roundsFlag{&n, &auto, c.autoOK}.Set(c.in)
		switch {
		case c.err == "" && (err != nil || n != c.n || auto != c.auto):
			t.Errorf("%q: n %d auto %d err %v", c.in, n, auto, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%q: err %v, want %q", c.in, err, c.err)
		}
	}
}
