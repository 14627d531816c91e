package ebpf

import (
	"context"
	"strings"
	"testing"
)

// TestVerifyCatchesTampering: after a good Program, Verify names the first
// Service whose entry or endpoint slot was deleted, changed or added
// behind its back, and a new Program repairs the maps.
func TestVerifyCatchesTampering(t *testing.T) {
	s := newSocketLB(t, Options{})
	spec := dummySpec(200, 4)
	program(t, s, spec)
	ctx := context.Background()
	victim := s.cur.svcs[17] // default/svc-17

	cases := []struct {
		name   string
		tamper func() error
		want   []string // substrings of the Verify error
	}{
		{"deleted endpoint slot", func() error { return s.objs.be.Delete(victim.base + 2) },
			[]string{"endpoint 2", "default/svc-17:80/tcp", "missing from cnb_lb4_be"}},
		{"deleted service entry", func() error { return s.objs.svc.Delete(victim.key) },
			[]string{"service default/svc-17:80/tcp (198.18.128.17:80/TCP) missing from cnb_lb4_svc"}},
		{"changed endpoint", func() error {
			return s.objs.be.Put(victim.base+1, backendVal{Addr: [4]byte{198, 19, 255, 1}, Port: be16(1)})
		}, []string{"endpoint 1 of service default/svc-17:80/tcp", "is 198.19.255.1:1, want"}},
		{"changed count", func() error {
			v := victim.val()
			v.Count++
			return s.objs.svc.Put(victim.key, v)
		}, []string{"default/svc-17:80/tcp", "count 5", "want {base"}},
		{"extra service", func() error {
			return s.objs.svc.Put(svcKey{Addr: [4]byte{198, 18, 255, 255}, Port: be16(9), Proto: ipprotoTCP}, svcVal{})
		}, []string{"cnb_lb4_svc holds 201 entries, want 200", "198.18.255.255:9/TCP"}},
		{"extra slot", func() error { return s.objs.be.Put(uint32(999999), backendVal{}) },
			[]string{"cnb_lb4_be holds 801 entries, want 800"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.tamper(); err != nil {
				t.Fatal(err)
			}
			_, err := s.Verify(ctx)
			if err == nil {
				t.Fatal("Verify found nothing wrong")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Verify error %q does not say %q", err, w)
				}
			}
			// A full Program repairs it.
			program(t, s, spec)
		})
	}
}
