package flows

import (
	"encoding/hex"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/btf"
)

// TestEventLayout checks rawEvent against struct flow_event in the
// committed object's BTF: size, member names and offsets.
func TestEventLayout(t *testing.T) {
	spec, err := loadFlows()
	if err != nil {
		t.Fatal(err)
	}
	var st *btf.Struct
	if err := spec.Types.TypeByName("flow_event", &st); err != nil {
		t.Fatal(err)
	}
	rt := reflect.TypeOf(rawEvent{})
	if int(st.Size) != int(rt.Size()) || rt.Size() != rawEventSize {
		t.Fatalf("C size %d, Go size %d, rawEventSize %d", st.Size, rt.Size(), rawEventSize)
	}
	if len(st.Members) != rt.NumField() {
		t.Fatalf("C has %d members, Go %d fields", len(st.Members), rt.NumField())
	}
	for i, m := range st.Members {
		f := rt.Field(i)
		name := strings.ReplaceAll(m.Name, "_", "")
		if int(m.Offset.Bytes()) != int(f.Offset) || !strings.EqualFold(name, f.Name) {
			t.Errorf("member %d: %s at %d in C, %s at %d in Go", i, m.Name, m.Offset.Bytes(), f.Name, f.Offset)
		}
	}
}

// A record as flows.c writes it on little-endian: ts 0x0102030405060708,
// 198.19.0.10:40000 -> 198.19.1.10:8080, ifindex 5, TCP, to-pod, SYN+ACK.
const goldenRecord = "0807060504030201" + "c613000a" + "c613010a" + "9c40" + "1f90" + "05000000" + "06" + "01" + "12" + "00" + "00000000"

func TestDecodeRawGolden(t *testing.T) {
	b, _ := hex.DecodeString(goldenRecord)
	base := time.Unix(1000, 0)
	e, err := decodeRaw(b, func(ns uint64) time.Time { return base.Add(time.Duration(ns)) })
	if err != nil {
		t.Fatal(err)
	}
	want := Event{
		Time: base.Add(0x0102030405060708), Src: netip.MustParseAddrPort("198.19.0.10:40000"), Dst: netip.MustParseAddrPort("198.19.1.10:8080"),
		Proto: 6, Ifindex: 5, Dir: ToPod, TCPFlags: FlagSYN | FlagACK, Verdict: Forwarded,
	}
	if e != want {
		t.Fatalf("decoded %+v, want %+v", e, want)
	}
	if e.Kind() != KindSYNACK {
		t.Errorf("kind %s, want %s", e.Kind(), KindSYNACK)
	}
	if _, err := decodeRaw(b[:31], nil); err == nil || !strings.Contains(err.Error(), "31 bytes") {
		t.Errorf("short record: %v", err)
	}
}

func TestKind(t *testing.T) {
	for _, c := range []struct {
		proto, flags uint8
		want         string
	}{
		{6, FlagSYN, KindSYN}, {6, FlagSYN | FlagACK, KindSYNACK}, {6, FlagFIN | FlagACK, KindFIN},
		{6, FlagRST | FlagACK, KindRST}, {6, FlagRST | FlagFIN, KindRST}, {6, FlagACK, KindOther},
		{17, 0, KindUDP}, {1, 0, KindOther},
	} {
		if got := (Event{Proto: c.proto, TCPFlags: c.flags}).Kind(); got != c.want {
			t.Errorf("proto %d flags %#x: %s, want %s", c.proto, c.flags, got, c.want)
		}
	}
}
