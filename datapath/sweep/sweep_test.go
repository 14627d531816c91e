package sweep

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/iptables"
	"github.com/cnibench/cnibench/datapath/nftables"
	"github.com/cnibench/cnibench/lab/labtest"
)

func testServices() []datapath.Service {
	return []datapath.Service{labtest.TestService("198.19.1.10", []uint16{8080, 8081})}
}

func openIPT(t *testing.T) datapath.Datapath {
	d, err := iptables.New(labtest.ScratchNS(t, "swpi"), iptables.Options{ClusterCIDR: "198.19.0.0/16"})
	return labtest.OrSkip(t, d, err)
}

func openNFT(t *testing.T) datapath.Datapath {
	d, err := nftables.New(labtest.ScratchNS(t, "swpn"), nftables.Options{Flat: true, ClusterCIDR: "198.19.0.0/16", ServiceCIDR: datapath.ServiceCIDR.String()})
	return labtest.OrSkip(t, d, err)
}

// Two real datapaths swept step by step, interleaved (step k on both, then
// k+1): every step is read back from the kernel and holds the test Service
// plus exactly the step's dummies, placed as asked.
func TestSweeperInterleaved(t *testing.T) {
	dps := []datapath.Datapath{openIPT(t), openNFT(t)}
	opt := Options{Steps: []int{0, 100, 400}, Endpoints: 3, Position: datapath.PositionLast}
	var sws []*Sweeper
	for _, d := range dps {
		s, err := New(d, testServices(), opt)
		if err != nil {
			t.Fatal(err)
		}
		sws = append(sws, s)
	}
	ctx := context.Background()
	for k, n := range opt.Steps {
		for i, s := range sws {
			st, err := s.Next(ctx, nil)
			if err != nil {
				t.Fatalf("%s step %d: %v", dps[i].Name(), k, err)
			}
			if st.Services != n || st.Counts != st.Expected || st.Counts.Services != n+1 || st.Counts.Endpoints != 3*n+2 {
				t.Errorf("%s at %d: counts %+v, expected %+v", dps[i].Name(), n, st.Counts, st.Expected)
			}
			if st.Position != n || st.Program.Apply <= 0 || st.Memory.RulesetBytes <= 0 {
				t.Errorf("%s at %d: position %d, program %+v, memory %+v", dps[i].Name(), n, st.Position, st.Program, st.Memory)
			}
			if k > 1 && st.Predicted <= 0 {
				t.Errorf("%s at %d: no prediction from the steps before", dps[i].Name(), n)
			}
		}
	}
	for i, s := range sws {
		if !s.Done() || len(s.Steps()) != 3 {
			t.Errorf("%s: done %v after %d steps", dps[i].Name(), s.Done(), len(s.Steps()))
		}
		if _, err := s.Next(ctx, nil); err == nil {
			t.Errorf("%s: a step past the last", dps[i].Name())
		}
	}
}

// A limit below what the steps so far predict stops the sweep before the
// next step with a *Stopped error, leaving the kernel as the last step
// programmed it; Run measures every step done before.
func TestRunStopsOnPredictedTime(t *testing.T) {
	real := openIPT(t)
	d := paced{real}
	var measured []int
	steps, err := Run(context.Background(), d, testServices(),
		Options{Steps: []int{0, 100, 2000}, MaxStepTime: 300 * time.Millisecond},
		func(_ context.Context, st Step) error { measured = append(measured, st.Services); return nil }, nil)
	var stop *Stopped
	if !errors.As(err, &stop) || !IsStopped(err) {
		t.Fatalf("err %v, want *Stopped", err)
	}
	if len(steps) != 2 || len(measured) != 2 || measured[1] != 100 {
		t.Fatalf("steps %d, measured %v; want 0 and 100", len(steps), measured)
	}
	got, err := real.Verify(context.Background())
	if err != nil || got.Services != 101 {
		t.Errorf("after the stop the kernel holds %+v (%v), want the 100-Service step", got, err)
	}
}

// A spec the API server would refuse is refused before anything is
// programmed.
func TestNewRefusesBadSpec(t *testing.T) {
	bad := testServices()
	bad[0].VIP = netip.MustParseAddr("10.0.0.1")
	d := openIPT(t)
	if _, err := New(d, bad, Options{Steps: []int{0, 10}}); err == nil {
		t.Fatal("a VIP outside the Service CIDR was accepted")
	}
	if got, err := d.Verify(context.Background()); err == nil && got.Services != 0 {
		t.Errorf("kernel holds %+v after a refused sweep", got)
	}
}

// A random position without a seed draws one, so two sweeps do not put the
// test Service at the same spot; a given seed is kept.
func TestValidateDrawsSeed(t *testing.T) {
	seen := map[uint64]bool{}
	for range 4 {
		o := Options{}
		if err := o.Validate(); err != nil {
			t.Fatal(err)
		}
		if o.Seed == 0 {
			t.Fatal("random position kept seed 0")
		}
		seen[o.Seed] = true
	}
	if len(seen) < 2 {
		t.Errorf("four sweeps drew one seed: %v", seen)
	}
	o := Options{Seed: 42}
	if err := o.Validate(); err != nil || o.Seed != 42 {
		t.Errorf("given seed changed to %d (%v)", o.Seed, err)
	}
	o = Options{Position: "last"}
	if err := o.Validate(); err != nil || o.Seed != 0 {
		t.Errorf("last position drew seed %d (%v)", o.Seed, err)
	}
}

// paced is a datapath whose programming takes 2 ms per 10 Services more
// than the kernel's, so a 2,000-Service step is predicted well past a
// 300 ms limit while the 100-Service one stays far below it.
type paced struct{ datapath.Datapath }

func (p paced) Program(ctx context.Context, spec datapath.Spec) (datapath.ProgramStats, error) {
	time.Sleep(time.Duration(len(spec.Services)/10) * 2 * time.Millisecond)
	return p.Datapath.Program(ctx, spec)
}

// slowProgram is a datapath whose Program only ends when its context does,
// as a restore tool that takes far longer than predicted.
type slowProgram struct{ datapath.Datapath }

func (slowProgram) Program(ctx context.Context, _ datapath.Spec) (datapath.ProgramStats, error) {
	<-ctx.Done()
	return datapath.ProgramStats{}, ctx.Err()
}

// A step still programming at --max-step-time is cancelled and stops the
// sweep with a *Stopped error naming the limit; nothing is measured.
func TestRunCancelsOverrunningStep(t *testing.T) {
	d := slowProgram{openIPT(t)}
	measured := 0
	start := time.Now()
	steps, err := Run(context.Background(), d, testServices(),
		Options{Steps: []int{0, 10}, MaxStepTime: 50 * time.Millisecond},
		func(context.Context, Step) error { measured++; return nil }, nil)
	var stop *Stopped
	if !errors.As(err, &stop) || !strings.Contains(stop.Reason, "--max-step-time 50ms") {
		t.Fatalf("err %v, want *Stopped naming the limit", err)
	}
	if measured != 0 || len(steps) != 1 || steps[0].Error == "" {
		t.Errorf("measured %d, steps %+v; want one unmeasured step with its error", measured, steps)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("the overrunning step was cancelled only after %s", waited)
	}
}
