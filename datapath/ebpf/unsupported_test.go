package ebpf

import (
	"errors"
	"strings"
	"testing"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/cnibench/cnibench/internal/kfeature"
)

// A program type the kernel does not know is refused with EINVAL at load;
// loadUnsupported calls that unsupported, naming the feature, while a
// verifier rejection of a program the kernel does support stays an error
// of ours. Real kernel: program type 250 exists on no kernel.
func TestLoadUnsupportedOnRealKernel(t *testing.T) {
	needRoot(t)
	ret0 := asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}
	_, err := cebpf.NewProgram(&cebpf.ProgramSpec{Type: cebpf.ProgramType(250), License: "GPL", Instructions: ret0})
	if err == nil {
		t.Fatal("the kernel loaded a program of type 250")
	}
	got := loadUnsupported("BPF program type 250", err)
	u, ok := kfeature.As(got)
	if !ok || !errors.Is(got, ErrUnsupported) || !errors.Is(got, errors.ErrUnsupported) {
		t.Fatalf("loadUnsupported(%v) = %v: not unsupported", err, got)
	}
	if !strings.HasPrefix(u.Error(), "unsupported: BPF program type 250 on this kernel (") || !strings.Contains(u.Detail, "[EINVAL]") {
		t.Errorf("%q", u.Error())
	}
	// R0 never set: the verifier refuses it, with a log.
	_, err = cebpf.NewProgram(&cebpf.ProgramSpec{Type: cebpf.SchedCLS, License: "GPL", Instructions: asm.Instructions{asm.Return()}})
	var ve *cebpf.VerifierError
	if !errors.As(err, &ve) {
		t.Fatalf("want a verifier error, got %v", err)
	}
	if got := loadUnsupported("tc programs", err); errors.Is(got, errors.ErrUnsupported) {
		t.Errorf("a verifier rejection was called unsupported: %v", got)
	}
}

// A missing helper, as cilium/ebpf's probe reports it from the kernel,
// is a kfeature.Unsupported naming it.
func TestProbeHelperUnsupportedOnRealKernel(t *testing.T) {
	needRoot(t)
	err := probeHelper(cebpf.SchedCLS, asm.BuiltinFunc(9999), "tc programs")
	u, ok := kfeature.As(err)
	if !ok || !errors.Is(err, cebpf.ErrNotSupported) {
		t.Fatalf("probe of helper 9999 = %v, want kfeature.Unsupported", err)
	}
	if !strings.HasPrefix(u.Error(), "unsupported: helper BuiltinFunc(9999) in tc programs on this kernel (") {
		t.Errorf("%q", u.Error())
	}
}
