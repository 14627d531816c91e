package k8starget

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// deploy/Dockerfile's EXPOSE lists what `make image` exposes: the control
// port and the engine kinds' data ports (kinds.ExposedPorts), so a new
// kind's port cannot be forgotten there.
func TestDockerfileExposesDataPorts(t *testing.T) {
	b, err := os.ReadFile("../../deploy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "EXPOSE" {
			got = append(got, f[1:]...)
		}
	}
	slices.Sort(got)
	want := slices.Sorted(maps.Keys(exposedPorts()))
	if !slices.Equal(got, want) {
		t.Errorf("deploy/Dockerfile EXPOSE %v, the image exposes %v", got, want)
	}
}
