// Package bpftest holds the checks every package with bpf2go objects
// runs in its tests (datapath/ebpf, lab/policy/ebpf): the committed objects
// come from the committed sources, and the Go mirrors of map keys and
// values have the layout the objects' BTF records. Only tests import it.
package bpftest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// ObjectsFresh checks, in the package directory of the calling test, that
// every C source and header in bpf/ has the hash `go generate` recorded in
// bpf_sources.sha256, and that the record names no source that is gone.
// (scripts/check-bpf.sh rebuilds the objects and compares them byte for
// byte where clang is installed; this catches a stale object without it.)
func ObjectsFresh(t *testing.T, pkg string) {
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
			t.Errorf("%s is not in bpf_sources.sha256: run `go generate ./%s` (needs clang)", f, pkg)
		case w != hex.EncodeToString(sum[:]):
			t.Errorf("%s changed since the objects were generated: run `go generate ./%s` and commit the objects", f, pkg)
		}
		delete(want, name)
	}
	for name := range want {
		t.Errorf("bpf_sources.sha256 lists %s, which no longer exists: regenerate", name)
	}
}

// CheckType checks that goVal's type has the size of bt and, for structs,
// the same members at the same offsets (names compared case-insensitively).
func CheckType(t *testing.T, what string, bt btf.Type, goVal any) {
	t.Helper()
	rt := reflect.TypeOf(goVal)
	size, err := btf.Sizeof(bt)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if size != int(rt.Size()) {
		t.Errorf("%s: C size %d, Go %s size %d", what, size, rt, rt.Size())
	}
	st, ok := btf.UnderlyingType(bt).(*btf.Struct)
	if !ok || rt.Kind() != reflect.Struct {
		return
	}
	if len(st.Members) != rt.NumField() {
		t.Fatalf("%s: C has %d members, Go %s has %d fields", what, len(st.Members), rt, rt.NumField())
	}
	for i, m := range st.Members {
		f := rt.Field(i)
		if int(m.Offset.Bytes()) != int(f.Offset) || !strings.EqualFold(m.Name, f.Name) {
			t.Errorf("%s: member %d is %s at %d in C, %s at %d in Go", what, i, m.Name, m.Offset.Bytes(), f.Name, f.Offset)
		}
	}
}

// CheckMaps checks every map of spec against its Go mirrors, mirrors[name]
// = {key, value}; a map without a mirror is an error.
func CheckMaps(t *testing.T, spec *cebpf.CollectionSpec, mirrors map[string][2]any) {
	t.Helper()
	for name, ms := range spec.Maps {
		m, ok := mirrors[name]
		if !ok {
			t.Errorf("map %s has no Go mirror", name)
			continue
		}
		CheckType(t, name+" key", ms.Key, m[0])
		CheckType(t, name+" value", ms.Value, m[1])
	}
}
