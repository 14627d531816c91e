package results

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// A results document read and written again is byte-identical: the
// on-disk format does not depend on how the Go types hold a sample's
// result (typed fields or a registered kind's slot).
func TestResultsRoundTripByteIdentical(t *testing.T) {
	for _, f := range []string{"../report/testdata/results.json", "../report/testdata/servicescale/results.json", "../report/testdata/churn/results.json"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r Run
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out, err := json.MarshalIndent(&r, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(bytes.TrimSpace(out), bytes.TrimSpace(b)) {
			t.Errorf("%s: written again differs (%d bytes, was %d)", f, len(out), len(b))
		}
	}
}
