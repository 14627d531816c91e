package labtest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CheckBPFSourcesFresh checks, in the current directory (a package with
// committed bpf2go objects), that every C source and header under bpf/
// has the hash `go generate` recorded in bpf_sources.sha256 and that no
// recorded source is missing, so CI (which has no clang) still catches
// objects older than their sources. pkg names the package in the hint
// ("./datapath/ebpf"). scripts/check-bpf.sh rebuilds the objects and
// compares them byte for byte where clang is installed.
func CheckBPFSourcesFresh(t *testing.T, pkg string) {
	t.Helper()
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
			t.Errorf("%s is not in bpf_sources.sha256: run `go generate %s` (needs clang)", f, pkg)
		case w != hex.EncodeToString(sum[:]):
			t.Errorf("%s changed since the objects were generated: run `go generate %s` and commit the objects", f, pkg)
		}
		delete(want, name)
	}
	for name := range want {
		t.Errorf("bpf_sources.sha256 lists %s, which no longer exists: regenerate", name)
	}
}
