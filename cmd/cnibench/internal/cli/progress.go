package cli

import (
	"bytes"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// progressFrameEvery is how often a progress bar is printed as a plain
// line when stderr is not a terminal.
const progressFrameEvery = 10 * time.Second

// progressOut is where progress goes: w itself on a terminal; elsewhere
// (a log file, CI) progress bars' "\r" frames become plain lines, at most
// one every progressFrameEvery plus each bar's final line, so logs get no
// carriage returns and no thousand frames.
func progressOut(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok {
		if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err == nil {
			return w
		}
	}
	return &frameLines{w: w, every: progressFrameEvery, now: time.Now}
}

// frameLines turns writes that start with "\r" (a frame redrawn in place)
// into lines; every other write passes through.
type frameLines struct {
	w     io.Writer
	every time.Duration
	mu    sync.Mutex
	now   func() time.Time // the clock (tests step their own)
	last  time.Time        // when a frame was last printed
	open  bool             // a bar is being drawn
	mid   bool             // the last plain write left a line open
}

func (f *frameLines) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	frame, ok := bytes.CutPrefix(p, []byte("\r"))
	if !ok {
		if len(p) > 0 {
			f.mid = p[len(p)-1] != '\n'
		}
		return f.w.Write(p)
	}
	final := bytes.HasSuffix(frame, []byte("\n"))
	if !final && f.open && f.now().Sub(f.last) < f.every {
		return len(p), nil // dropped: the next one, or the final line, says more
	}
	f.open, f.last = !final, f.now()
	out := append([]byte{}, frame...)
	if !final {
		out = append(out, '\n')
	}
	if f.mid { // a frame starts its own line
		out = append([]byte{'\n'}, out...)
		f.mid = false
	}
	if _, err := f.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
