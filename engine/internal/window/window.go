// Package window drives the event loops of a load engine (HTTP, DNS)
// through its warmup and its measured interval: start the loops, wait out
// the warmup, read the clock and the process CPU at both ends of the
// interval, then stop the loops and close them. The loops decide for
// themselves which completions fall inside the interval; this package only
// owns the timeline, so both engines measure the same way.
package window

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/cnibench/cnibench/engine/internal/cpuuse"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/stats"
)

// FinishTimeout bounds the wait for the loops after they are told to stop
// (they are woken through an eventfd, so it only trips on a bug).
const FinishTimeout = 5 * time.Second

// Loops are an engine's event loops, as functions so that engines keep
// their loop types to themselves.
type Loops struct {
	Run   []func() // one per loop; each returns once Stop is set and it is woken
	Wake  func()   // wakes every loop (after Stop is set)
	Close func()   // closes every loop's sockets, after all Run returned
	Stop  *atomic.Bool
}

// Loop is one event loop of an engine, for engines whose loop type has
// these methods (Of gathers them into Loops).
type Loop interface {
	Run()   // serves until Stop is set and the loop is woken
	Wake()  // interrupts the loop's wait
	Close() // releases the loop's descriptors; only after Run returned
}

// Of gathers an engine's loops: every Run, one Wake and one Close for all.
func Of[L Loop](stop *atomic.Bool, ls []L) Loops {
	l := Loops{Stop: stop,
		Wake:  func() { each(ls, L.Wake) },
		Close: func() { CloseAll(ls) }}
	for _, x := range ls {
		l.Run = append(l.Run, x.Run)
	}
	return l
}

// CloseAll closes every loop, as when building the next one failed.
func CloseAll[L Loop](ls []L) { each(ls, L.Close) }

func each[L any](ls []L, f func(L)) {
	for _, l := range ls {
		f(l)
	}
}

// Window is the measured interval and the process CPU at its ends.
type Window struct {
	Start, End time.Time
	CPU0, CPU1 cpuuse.Times
}

// Measure runs the loops from base: unmeasured until base+warmup, measured
// until base+warmup+duration. name prefixes errors ("httpload
// http://198.19.1.10:8080/"). On ctx cancellation the loops are stopped and
// closed and the error wraps ctx.Err().
func Measure(ctx context.Context, base time.Time, warmup, duration time.Duration, l Loops, name string) (Window, error) {
	var wg sync.WaitGroup
	for _, run := range l.Run {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	halt := func() error {
		l.Stop.Store(true)
		l.Wake()
		timer := time.NewTimer(FinishTimeout)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
			return fmt.Errorf("%s: event loops did not stop within %s (bug)", name, FinishTimeout)
		}
		l.Close()
		return nil
	}
	sleepUntil := func(at time.Duration) bool {
		timer := time.NewTimer(at - time.Since(base))
		defer timer.Stop()
		select {
		case <-timer.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	var w Window
	fail := func() (Window, error) {
		if err := halt(); err != nil {
			return w, err
		}
		return w, fmt.Errorf("%s: %w", name, ctx.Err())
	}
	if !sleepUntil(warmup) {
		return fail()
	}
	w.CPU0, w.Start = cpuuse.Process(), time.Now()
	if !sleepUntil(warmup + duration) {
		return fail()
	}
	w.CPU1, w.End = cpuuse.Process(), time.Now()
	return w, halt()
}

// Achieved compares rate with target; below threshold × target the run
// missed it (the client, the server or the path could not keep up).
func Achieved(rate, target, threshold float64) kinds.OpenLoop {
	l := kinds.OpenLoop{TargetQPS: target, AchievedRatio: rate / target}
	if l.AchievedRatio < threshold {
		l.MissedTarget, l.MissedByPercent = true, 100*(1-l.AchievedRatio)
	}
	return l
}

// Latencies summarizes a load run's histograms: h is corrected for
// coordinated omission (from each send's intended time), hu is not. In a
// closed loop (openLoop false) there is no schedule: both are h.
func Latencies(h, hu *hdr.Histogram, openLoop bool) (corrected, uncorrected *stats.Latency, err error) {
	if !openLoop {
		hu = h
	}
	if corrected, err = stats.Summarize(h); err != nil {
		return nil, nil, err
	}
	if uncorrected, err = stats.Summarize(hu); err != nil {
		return nil, nil, err
	}
	return corrected, uncorrected, nil
}

// CPU reads the window's client CPU; saturated is the utilisation from
// which the client counts as the bottleneck (the rate may be its limit).
func (w Window) CPU(saturated float64) kinds.ClientCPU {
	c := kinds.ClientCPU{ClientCPUUserSec: (w.CPU1.User - w.CPU0.User).Seconds(), ClientCPUSysSec: (w.CPU1.Sys - w.CPU0.Sys).Seconds(), ClientCPUs: cpuuse.Usable()}
	c.ClientCPUUtil = (c.ClientCPUUserSec + c.ClientCPUSysSec) / (w.End.Sub(w.Start).Seconds() * float64(c.ClientCPUs))
	c.ClientSaturated = c.ClientCPUUtil >= saturated
	return c
}
