package cli

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/kfeature"
)

// README's "Recovery" section quotes what the tool prints: every literal
// part of each message (the text between its %-verbs) and every exit
// status must be there.
func TestREADMERecoveryMatchesMessages(t *testing.T) {
	b, err := os.ReadFile("../../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Recovery\n")
	if !ok {
		t.Fatal(`README has no "## Recovery" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	sec = strings.Join(strings.Fields(sec), " ") // quotes may wrap
	verb := regexp.MustCompile(`%[a-z]`)
	for _, msg := range []string{msgStopping, msgAbort, msgInterrupted, msgInterruptedOpen, msgInterruptedUp, msgTeardown, kfeature.Format} {
		for _, part := range verb.Split(msg, -1) {
			if part = strings.TrimSpace(part); len(part) > 2 && !strings.Contains(sec, part) {
				t.Errorf("README Recovery lacks %q (from %q)", part, msg)
			}
		}
	}
	for _, code := range []int{0, 1, ExitRegression, exitTeardown, ExitSamplesFailed, 130, 143} {
		if !strings.Contains(sec, fmt.Sprintf("`%d`", code)) {
			t.Errorf("README Recovery lacks exit status %d", code)
		}
	}
}
