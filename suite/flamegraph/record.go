package flamegraph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/internal/kfeature"
)

// Frequency is the sampling rate per CPU: prime, so it does not beat
// with the kernel's timer ticks, and low enough that perf costs the
// measured CPUs under 1%.
const Frequency = 499

// Tool says how stacks are sampled, for the results.
var Tool = fmt.Sprintf("perf record -e cpu-clock -F %d -g -C CPUS (Debian linux-perf)", Frequency)

// Perf is the perf binary; tests and users may point it elsewhere.
var Perf = "perf"

// Recording is a perf record running on some CPUs until Stop.
type Recording struct {
	cmd    *exec.Cmd
	data   string
	stderr bytes.Buffer
	done   chan error
}

// Start samples every task's stacks, kernel and user, on cpus into
// data (perf.data format) until Stop, and at most for limit: perf runs
// under timeout(1), so a cnibench killed before Stop leaves no perf
// sampling the CPUs for good. It fails with an explicit unsupported error
// when perf is missing or the kernel refuses the event.
func Start(cpus []int, data string, limit time.Duration) (*Recording, error) {
	if len(cpus) == 0 {
		return nil, errors.New("flame graph: no CPUs to sample")
	}
	path, err := exec.LookPath(Perf)
	if err != nil {
		return nil, fmt.Errorf("flame graph: %w", &kfeature.Unsupported{Feature: "perf (Debian package linux-perf)", Detail: err.Error(), Err: err})
	}
	var list []string
	for _, c := range cpus {
		list = append(list, strconv.Itoa(c))
	}
	r := &Recording{data: data, done: make(chan error, 1)}
	secs := strconv.Itoa(int(limit.Seconds()) + 1)
	r.cmd = exec.Command("timeout", "-s", "INT", secs, path, "record", "-e", "cpu-clock", "-F", strconv.Itoa(Frequency), "-g", "-C", strings.Join(list, ","), "-o", data, "--quiet")
	r.cmd.Stderr = &r.stderr
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("flame graph: start perf: %w", err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	// perf opens its events before it writes the file header; a failure
	// to open them (no permission, no such event) ends it at once.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-r.done:
			return nil, fmt.Errorf("flame graph: perf record stopped at once (%v): %s", err, strings.TrimSpace(r.stderr.String()))
		default:
		}
		if st, err := os.Stat(data); err == nil && st.Size() > 0 {
			return r, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = r.Stop()
	return nil, fmt.Errorf("flame graph: perf record wrote nothing in 2s: %s", strings.TrimSpace(r.stderr.String()))
}

// Stop ends the recording (SIGINT, which timeout passes on to perf, so
// it writes its file whole) and waits for it.
func (r *Recording) Stop() error {
	_ = r.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-r.done:
		var ee *exec.ExitError
		// 130: stopped by the SIGINT; 124: the limit came first.
		if err != nil && !(errors.As(err, &ee) && (ee.ExitCode() <= 0 || ee.ExitCode() == 130 || ee.ExitCode() == 124)) {
			return fmt.Errorf("perf record: %v: %s", err, strings.TrimSpace(r.stderr.String()))
		}
		return nil
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
		return errors.New("perf record did not stop in 10s after SIGINT; killed")
	}
}

// Fold reads the recording back through `perf script` and folds it.
func (r *Recording) Fold(ctx context.Context) (*Stacks, error) {
	cmd := exec.CommandContext(ctx, Perf, "script", "-i", r.data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("perf script: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return ParsePerfScript(bytes.NewReader(out))
}
