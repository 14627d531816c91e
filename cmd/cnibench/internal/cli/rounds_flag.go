package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/stats"
)

// defaultAutoMax is the MAX of a bare --rounds auto: on 2 cores the
// datapaths profile takes about a minute a round.
const defaultAutoMax = 15

// roundsFlag is --rounds: a number of rounds, or auto[:MAX] (rounds added
// after the fifth until the run's questions are conclusive, MAX at most).
type roundsFlag struct {
	n, auto *int
	autoOK  bool // run's rounds take auto; the sweep's steps and the churn's rounds do not
}

func (f roundsFlag) String() string {
	switch {
	case f.auto != nil && *f.auto > 0:
		return fmt.Sprintf("auto:%d", *f.auto)
	case f.n != nil && *f.n > 0:
		return strconv.Itoa(*f.n)
	}
	return "0"
}

func (f roundsFlag) Type() string {
	if f.autoOK {
		return "N|auto[:MAX]"
	}
	return "N"
}

func (f roundsFlag) Set(s string) error {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "auto"); ok {
		if !f.autoOK {
			return fmt.Errorf("auto is for run's interleaved rounds, not this command's schedule: give a number")
		}
		max := defaultAutoMax
		if rest != "" {
			m, err := strconv.Atoi(strings.TrimPrefix(rest, ":"))
			if err != nil || !strings.HasPrefix(rest, ":") {
				return fmt.Errorf("want auto or auto:MAX with MAX a number of rounds, got %q", s)
			}
			max = m
		}
		if max < stats.MinAutoRounds || max > stats.MaxAutoRounds {
			return fmt.Errorf("auto:%d: the most rounds must be %d to %d", max, stats.MinAutoRounds, stats.MaxAutoRounds)
		}
		*f.n, *f.auto = 0, max
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("want a number of rounds or auto[:MAX], got %q", s)
	}
	if n < 1 {
		return fmt.Errorf("must be at least 1, got %d", n)
	}
	*f.n, *f.auto = n, 0
	return nil
}
