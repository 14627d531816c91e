package logtail

import (
	"os"
	"path/filepath"
	"testing"
)

// The last lines come on one line; an empty or missing log says so.
func TestLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	if got := Lines(p, 3); got != "no output" {
		t.Errorf("missing: %q", got)
	}
	os.WriteFile(p, []byte("a\nb\nc\nd\n"), 0o644)
	if got := Lines(p, 3); got != "b | c | d" {
		t.Errorf("%q", got)
	}
}
