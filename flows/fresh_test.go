package flows

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The committed objects must come from the committed sources: every C
// source and header has the hash `go generate` recorded beside the
// objects, and no source is missing from the record. (scripts/check-bpf.sh
// rebuilds the objects and compares them byte for byte where clang is
// installed.)
func TestObjectsFresh(t *testing.T) {
	rec, err := os.ReadFile("bpf_sources.sha256")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(rec)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("bpf_sources.sha256: bad line %q", line)
		}
		want[name] = sum
	}
	files, _ := filepath.Glob("bpf/*.[ch]")
	if len(files) == 0 {
		t.Fatal("no BPF sources found")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		name := filepath.Base(f)
		switch w, ok := want[name]; {
		case !ok:
			t.Errorf("%s is not in bpf_sources.sha256: run `go generate ./flows` (needs clang)", f)
		case w != hex.EncodeToString(sum[:]):
			t.Errorf("%s changed since the objects were generated: run `go generate ./flows` and commit the objects", f)
		}
		delete(want, name)
	}
	for name := range want {
		t.Errorf("bpf_sources.sha256 lists %s, which no longer exists: regenerate", name)
	}
}
