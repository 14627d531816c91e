package haproxy

import (
	"os"
	"path/filepath"
	"testing"
)

// VmRSS in kB becomes bytes; a status without it, or an odd unit, is an
// error; this process's own RSS reads as more than nothing.
func TestVmRSS(t *testing.T) {
	if v, err := parseVmRSS("Name:\thaproxy\nVmRSS:\t   12345 kB\nThreads:\t2\n"); err != nil || v != 12345*1024 {
		t.Errorf("%d %v", v, err)
	}
	for _, bad := range []string{"Name:\tkthreadd\n", "VmRSS:\t12 MB\n"} {
		if _, err := parseVmRSS(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if v, err := ProcessRSS(os.Getpid()); err != nil || v < 1<<20 {
		t.Errorf("own RSS %d %v", v, err)
	}
}

// A cgroup dir's memory.current is read; without it (no memory
// controller) the proxy's process RSS is.
func TestProcMemory(t *testing.T) {
	dir := t.TempDir()
	p := &Proc{Cgroup: dir, PID: os.Getpid()}
	if v, err := p.Memory(); err != nil || v < 1<<20 {
		t.Errorf("without memory.current: %d %v, want the process's RSS", v, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.current"), []byte("4096\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v, err := p.Memory(); err != nil || v != 4096 {
		t.Errorf("memory.current: %d %v", v, err)
	}
}
