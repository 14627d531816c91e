package cli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// runFlags are run's flags (or another measuring command's) parsed from
// args, as the command would see them.
func runFlags(t *testing.T, use string, args ...string) *pflag.FlagSet {
	t.Helper()
	cmd, _, err := newRoot().Find([]string{use})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return cmd.Flags()
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TKE's knobs set the flags they map onto: one duration for both tools
// (the longer); on run the Service knobs set its rows at scale on the
// lab, and API writers are named as not for run.
func TestTKEKnobsFromTheEnvironment(t *testing.T) {
	fs := runFlags(t, "run", "--profile", "tke")
	line, err := applyProfileEnv(fs, "tke", "lab", scheduleRounds, env(map[string]string{
		"ROUNDS": "3", "IPERF_DURATION": "30", "FORTIO_DURATION": "60", "SVC_ENDPOINTS": "2", "SVC_CREATE_PARALLEL": "8"}))
	if err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{"rounds": "3", "duration": "1m0s", "endpoints-per-service": "2"} {
		if got := fs.Lookup(flag).Value.String(); got != want {
			t.Errorf("--%s = %s, want %s", flag, got, want)
		}
	}
	for _, want := range []string{"tke knobs from the environment: ROUNDS=3 → --rounds 3", "IPERF_DURATION=30, FORTIO_DURATION=60 → --duration 1m0s",
		"SVC_ENDPOINTS=2 → --endpoints-per-service 2", "SVC_CREATE_PARALLEL not used: --api-workers does not apply to plain runs on --target lab"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "\n") {
		t.Errorf("more than one line: %q", line)
	}
}

// On a cluster run's rows at scale are not swept: the knobs say so
// instead of setting a flag the run would refuse.
func TestTKEScaleKnobsOnAClusterRun(t *testing.T) {
	fs := runFlags(t, "run", "--profile", "tke", "--target", "k8s")
	line, err := applyProfileEnv(fs, "tke", "k8s", scheduleRounds, env(map[string]string{"SVC_SCALE_STEPS": "0,5000"}))
	if err != nil {
		t.Fatal(err)
	}
	if fs.Lookup("scale-steps").Changed {
		t.Error("--scale-steps set on a cluster run")
	}
	if want := "SVC_SCALE_STEPS not used: run sweeps --profile tke's Service-scale rows on the lab only (on --target k8s: cnibench sweep --target k8s --profile tke)"; !strings.Contains(line, want) {
		t.Errorf("line %q lacks %q", line, want)
	}
}

// On the sweep the Service knobs set its flags; API writers are a
// cluster's, so the lab names SVC_CREATE_PARALLEL as not used.
func TestTKEServiceKnobsOnTheSweep(t *testing.T) {
	vars := env(map[string]string{"SVC_SCALE_STEPS": "5000, 10000,20000", "SVC_ENDPOINTS": "4", "SVC_CREATE_PARALLEL": "8"})
	fs := runFlags(t, "sweep", "--profile", "tke")
	line, err := applyProfileEnv(fs, "tke", "lab", scheduleSweep, vars)
	if err != nil {
		t.Fatal(err)
	}
	if got := fs.Lookup("scale-steps").Value.String(); got != "5000,10000,20000" {
		t.Errorf("--scale-steps = %s", got)
	}
	if got := fs.Lookup("endpoints-per-service").Value.String(); got != "4" {
		t.Errorf("--endpoints-per-service = %s", got)
	}
	if !strings.Contains(line, "SVC_CREATE_PARALLEL not used: --api-workers does not apply to the Service-scale sweep on --target lab") {
		t.Errorf("line %q", line)
	}
	fs = runFlags(t, "sweep", "--profile", "tke", "--target", "k8s")
	if _, err := applyProfileEnv(fs, "tke", "k8s", scheduleSweep, vars); err != nil {
		t.Fatal(err)
	}
	if got := fs.Lookup("api-workers").Value.String(); got != "8" {
		t.Errorf("--api-workers = %s on k8s", got)
	}
}

// A flag on the command line wins; a bad value is one line naming its
// variable; another profile reads nothing.
func TestProfileKnobsPrecedenceAndErrors(t *testing.T) {
	fs := runFlags(t, "run", "--profile", "tke", "--rounds", "7")
	line, err := applyProfileEnv(fs, "tke", "lab", scheduleRounds, env(map[string]string{"ROUNDS": "3"}))
	if err != nil || fs.Lookup("rounds").Value.String() != "7" || !strings.Contains(line, "ROUNDS not used: --rounds given") {
		t.Errorf("explicit --rounds: %v, rounds %s, line %q", err, fs.Lookup("rounds").Value, line)
	}
	for name, bad := range map[string]string{"ROUNDS": "three", "IPERF_DURATION": "-5", "SVC_SCALE_STEPS": "5k", "SVC_ENDPOINTS": "0"} {
		_, err := applyProfileEnv(runFlags(t, "sweep"), "tke", "lab", scheduleSweep, env(map[string]string{name: bad}))
		if err == nil || !strings.HasPrefix(err.Error(), name+"=") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s=%s: %v", name, bad, err)
		}
	}
	if line, err := applyProfileEnv(runFlags(t, "run"), "quick", "lab", scheduleRounds, env(map[string]string{"ROUNDS": "3"})); line != "" || err != nil {
		t.Errorf("quick read TKE's knobs: %q, %v", line, err)
	}
}

// cilium connectivity perf's --samples is --rounds; both at once is an
// error.
func TestSamplesIsRounds(t *testing.T) {
	if got := runFlags(t, "run", "--samples", "3").Lookup("rounds").Value.String(); got != "3" {
		t.Errorf("--samples 3: rounds %s", got)
	}
	t.Setenv("KUBECONFIG", "/nonexistent")
	out, _, err := cnibench(t, "run", "--target", "k8s", "--dry-run", "--profile", "connectivity-perf", "--samples", "3", "--tests", "TCP_RR")
	if err != nil || !strings.Contains(out, "kind: Pod") {
		t.Fatalf("--samples 3: %v", err)
	}
	_, _, err = cnibench(t, "run", "--target", "k8s", "--dry-run", "--profile", "connectivity-perf", "--samples", "3", "--rounds", "4")
	if err == nil || !strings.Contains(err.Error(), "--samples is cilium connectivity perf's name for --rounds") {
		t.Errorf("--samples with --rounds: %v", err)
	}
}
