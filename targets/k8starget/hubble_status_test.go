package k8starget

import (
	"os"
	"testing"
)

// The agent's Hubble status as Cilium v1.20.2's models marshal it
// (testdata, made with api/v1/models StatusResponse): on with the
// observer's counts, disabled, still starting; and what is not a status.
func TestParseHubbleStatus(t *testing.T) {
	for _, c := range []struct {
		file, want string
		on         bool
		seen       int64
	}{
		{"on", "Ok (seen 52311 flows)", true, 52311},
		{"off", "Disabled", false, 0},
		{"starting", "Warning: Hubble starting", false, 0},
	} {
		b, err := os.ReadFile("testdata/cilium-dbg-status-" + c.file + ".json")
		if err != nil {
			t.Fatal(err)
		}
		st, err := ParseHubbleStatus(b)
		if err != nil || st.String() != c.want || st.On() != c.on || st.SeenFlows != c.seen {
			t.Errorf("%s: %v %+v", c.file, err, st)
		}
	}
	for _, bad := range []string{`{"cilium":{"state":"Ok"}}`, `{"hubble":{}}`, `Error: cannot reach the agent`} {
		if st, err := ParseHubbleStatus([]byte(bad)); err == nil {
			t.Errorf("%q read as %+v", bad, st)
		}
	}
}
