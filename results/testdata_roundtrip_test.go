package results

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"testing"
)

// placeholder is an older document's engine "options" that only named an
// HTTP or DNS test, right before that test's own options (stored.go).
var placeholder = regexp.MustCompile(`(?m)^      "options": \{\n(?:        .*\n)*      \},\n(      "(?:http|dns)_options": )`)

// The fixtures were written before every kind went through the registry:
// read and written again, they are byte-identical but for the placeholder
// options of their HTTP tests, which are not written any more; and the
// document written now reads and writes to itself.
func TestResultsRoundTripByteIdentical(t *testing.T) {
	for _, f := range []string{"../report/testdata/results.json", "../report/testdata/servicescale/results.json", "../report/testdata/churn/results.json"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out := roundTrip(t, f, b)
		want := placeholder.ReplaceAll(bytes.TrimSpace(b), []byte("$1"))
		if !bytes.Equal(out, want) {
			t.Errorf("%s: written again differs (%d bytes, want %d: the file's %d without its placeholders)", f, len(out), len(want), len(b))
		}
		if again := roundTrip(t, f, out); !bytes.Equal(again, out) {
			t.Errorf("%s: the document written now differs when written again", f)
		}
	}
}

func roundTrip(t *testing.T, name string, b []byte) []byte {
	t.Helper()
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	out, err := json.MarshalIndent(&r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(out)
}
