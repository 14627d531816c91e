package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/results"
)

// exitTeardown is the exit status of a run whose samples are complete but
// whose teardown failed: the lab or cluster may hold leftovers.
const exitTeardown = 4

// msgTeardown is the error of a failed teardown, quoted in README's
// "Recovery" section (a test keeps the two in step).
const msgTeardown = "teardown failed: %s; the samples in %s stand; remove what is left with: %s"

// teardownError is a failed teardown (closing the run's targets); Execute
// exits exitTeardown on it unless something worse happened.
type teardownError struct {
	err     error
	out     string   // results directory
	cleanup []string // commands that remove the leftovers
}

func (e *teardownError) Error() string {
	return fmt.Sprintf(msgTeardown, oneLine(e.err.Error()), filepath.Join(e.out, results.FileName), cleanupText(e.cleanup))
}

func (e *teardownError) Unwrap() error { return e.err }

// cleanupText joins the cleanup commands for a message.
func cleanupText(cmds []string) string {
	if len(cmds) == 0 {
		return "cnibench lab down (see README, Recovery)"
	}
	return strings.Join(cmds, "; ")
}

// labDownCommand is the command that removes lab name (its --state-dir
// only when it is not the default).
func labDownCommand(g *globals, name string) string {
	cmd := "cnibench --lab " + name
	if g.stateDir != "" && g.stateDir != lab.DefaultStateDir {
		cmd += " --state-dir " + g.stateDir
	}
	return cmd + " lab down"
}

// onlyTeardown tells whether every error joined in err is a failed
// teardown: a run that also failed otherwise exits 1.
func onlyTeardown(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlyTeardown(e) {
				return false
			}
		}
		return len(j.Unwrap()) > 0
	}
	var td *teardownError
	return errors.As(err, &td)
}
