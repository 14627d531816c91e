// Package logtail gives the last lines of a process's log file on one
// line, for the error that says why a helper process (an L7 proxy, a
// WireGuard daemon) did not start.
package logtail

import (
	"os"
	"strings"
)

// Lines is the last n lines of the file at path joined by " | ", or "no
// output" when it is empty or unreadable.
func Lines(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if s := strings.Join(lines, " | "); s != "" {
		return s
	}
	return "no output"
}
