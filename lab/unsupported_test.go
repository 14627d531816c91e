package lab

import (
	"testing"

	"github.com/cnibench/cnibench/internal/kfeature"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/vishvananda/netlink"
)

// A link kind the kernel does not have is refused with EOPNOTSUPP; the
// path that creates VXLAN devices (linkAdd) turns that into a
// kfeature.Unsupported naming the feature, as a kernel without the vxlan
// module would see it. Real kernel, a made-up link kind.
func TestLinkKindMissingIsUnsupported(t *testing.T) {
	needRoot(t)
	ns := Prefix(uniqueName()) + "node0"
	if err := netnsx.CreateNamed([]string{ns}, func(string) {}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { netnsx.DeleteNamed(ns) })
	h, err := netnsx.NewHandle(netnsx.Path(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	err = linkAdd(h, &netlink.GenericLink{LinkAttrs: netlink.LinkAttrs{Name: "cnbx0"}, LinkType: "cnbnosuchkind"}, "VXLAN links")
	u, ok := kfeature.As(err)
	if !ok {
		t.Fatalf("linkAdd of an unknown kind = %v, want kfeature.Unsupported", err)
	}
	if want := "unsupported: VXLAN links on this kernel (operation not supported [EOPNOTSUPP])"; u.Error() != want {
		t.Errorf("%q, want %q", u.Error(), want)
	}
	// A real VXLAN device in the same namespace is created through the
	// same path (or the kernel lacks it, and the test says so).
	err = linkAdd(h, &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: "cnbvx0"}, VxlanId: 42, Port: 4789}, "VXLAN links")
	if _, ok := kfeature.As(err); ok {
		t.Skipf("this kernel has no VXLAN: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}
