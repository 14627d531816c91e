package haproxy

import (
	"testing"
	"time"
)

func TestParseCPU(t *testing.T) {
	d, err := parseProcStat("4242 (hap roxy) S 1 2 3 0 -1 4194560 500 0 0 0 150 25 0 0 20 0 1 0 100 0 0")
	if err != nil || d != 1750*time.Millisecond {
		t.Errorf("proc stat: %v %v, want 1.75s", d, err)
	}
	d, err = parseCPUStat("usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n")
	if err != nil || d != 1234567*time.Microsecond {
		t.Errorf("cpu.stat: %v %v", d, err)
	}
	if _, err := parseCPUStat("user_usec 1\n"); err == nil {
		t.Error("cpu.stat without usage_usec: want an error")
	}
}
