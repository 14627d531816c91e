package ebpf

import (
	"testing"

	"github.com/cnibench/cnibench/internal/bpftest"
)

// TestLayoutMatchesBTF: the Go mirrors of the map keys and values have
// the size and field offsets of the C structs in the committed object.
func TestLayoutMatchesBTF(t *testing.T) {
	mirrors := map[string][2]any{
		mapIPCache:  {ipcKey{}, uint32(0)},
		mapEndpoint: {uint32(0), epVal{}},
		mapPolicy:   {polKey{}, polVal{}},
		mapCT:       {ctKey{}, uint32(0)},
		mapCounters: {uint32(0), uint64(0)},
	}
	spec, err := loadPolicy()
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Maps) != len(mirrors) {
		t.Errorf("object has %d maps, %d have Go mirrors", len(spec.Maps), len(mirrors))
	}
	bpftest.CheckMaps(t, spec, mirrors)
	for _, p := range []string{progFromPod, progToPod} {
		if spec.Programs[p] == nil {
			t.Errorf("object has no program %s", p)
		}
	}
}

// TestObjectsFresh: the committed object comes from the committed source.
func TestObjectsFresh(t *testing.T) { bpftest.ObjectsFresh(t, "lab/policy/ebpf") }
