package flows

import (
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mdlayher/netlink"
)

// goldenNFLOG is an NFULNL_MSG_PACKET body as nfnetlink_log builds it
// (group 7731): PACKET_HDR (IPv4, hook forward), IFINDEX_INDEV 5,
// IFINDEX_OUTDEV 2, SEQ 42, PAYLOAD = the IPv4 and TCP headers of a SYN
// 198.19.0.10:40000 -> 198.19.1.10:8080.
const goldenNFLOG = "00001e33" +
	"08000100" + "08000200" +
	"08000400" + "00000005" +
	"08000500" + "00000002" +
	"08000c00" + "0000002a" +
	"2c000900" +
	"4500003c00004000400600" + "00" + "c613000a" + "c613010a" +
	"9c401f90" + "00000001" + "00000000" + "a002faf0" + "00000000"

func TestParsePacketGolden(t *testing.T) {
	b, err := hex.DecodeString(goldenNFLOG)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(2000, 0)
	p, err := parsePacket(netlink.Message{Header: netlink.Header{Type: nfulnlMsgPacket}, Data: b}, now)
	if err != nil {
		t.Fatal(err)
	}
	want := Event{Time: now, Src: netip.MustParseAddrPort("198.19.0.10:40000"), Dst: netip.MustParseAddrPort("198.19.1.10:8080"),
		Proto: 6, Ifindex: 5, Dir: Forward, TCPFlags: FlagSYN, Verdict: Forwarded}
	if p.Event != want || !p.hasSeq || p.seq != 42 {
		t.Fatalf("parsed %+v seq %d/%v, want %+v seq 42", p.Event, p.seq, p.hasSeq, want)
	}
	if p.Kind() != KindSYN {
		t.Errorf("kind %s", p.Kind())
	}
	if _, err := parsePacket(netlink.Message{Header: netlink.Header{Type: nfulnlMsgConfig}, Data: b}, now); err != errNotPacket {
		t.Errorf("config message: %v, want errNotPacket", err)
	}
	// The payload cut before the ports is an error, not a zero port.
	short := append([]byte(nil), b[:len(b)-44]...)
	short = append(short, 0x18, 0x00, 0x09, 0x00)
	short = append(short, b[len(b)-40:len(b)-40+20]...)
	if _, err := parsePacket(netlink.Message{Header: netlink.Header{Type: nfulnlMsgPacket}, Data: short}, now); err == nil || !strings.Contains(err.Error(), "before the ports") {
		t.Errorf("payload without ports: %v", err)
	}
}

func TestConfigMessages(t *testing.T) {
	m, err := bindMsg(7731, true)
	if err != nil {
		t.Fatal(err)
	}
	// nfgenmsg, then NFULA_CFG_CMD (len 5, type 1) = BIND, padded to 8.
	if got, want := hex.EncodeToString(m.Data), "00001e33"+"05000100"+"01000000"; got != want {
		t.Errorf("bind: %s, want %s", got, want)
	}
	m, err = modeMsg(7731, 80)
	if err != nil {
		t.Fatal(err)
	}
	// NFULA_CFG_MODE (len 10): copy_range 80, COPY_PACKET; NLBUFSIZ
	// 65536, TIMEOUT 2 (20 ms), QTHRESH 128; NFULA_CFG_FLAGS (len 6): F_SEQ.
	want := "00001e33" + "0a000200" + "000000500200" + "0000" + "08000300" + "00010000" + "08000400" + "00000002" +
		"08000500" + "00000080" + "06000600" + "0001" + "0000"
	if got := hex.EncodeToString(m.Data); got != want {
		t.Errorf("mode: %s, want %s", got, want)
	}
}

func TestNFLOGRulesGolden(t *testing.T) {
	got, err := nflogRules("cnb-x-", 7731, []string{"cnbp0", "cnbp1"})
	if err != nil {
		t.Fatal(err)
	}
	want := `table ip cnb-x-flows
delete table ip cnb-x-flows
table ip cnb-x-flows {
	chain forward {
		type filter hook forward priority 10; policy accept;
		iifname != { "cnbp0", "cnbp1" } oifname != { "cnbp0", "cnbp1" } return
		ct state new log group 7731 snaplen 80
		tcp flags & (fin | rst) != 0 log group 7731 snaplen 80
	}
}
`
	if got != want {
		t.Errorf("rules:\n%s\nwant:\n%s", got, want)
	}
	all, _ := nflogRules("cnb-x-", 7731, nil)
	if !strings.Contains(all, `iifname != "cnbp*" oifname != "cnbp*" return`) {
		t.Errorf("no ifaces: want the cnbp* wildcard:\n%s", all)
	}
	for _, bad := range [][2]string{{"cnb x-", "cnbp0"}, {"cnb-x-", `cnbp0" accept`}} {
		if _, err := nflogRules(bad[0], 1, []string{bad[1]}); err == nil {
			t.Errorf("prefix %q iface %q: no error", bad[0], bad[1])
		}
	}
}

func TestParseGroups(t *testing.T) {
	// /proc/net/netfilter/nfnetlink_log: group, peer portid, queue length,
	// copy mode, copy range, flush timeout, use count.
	in := " 7731 2887654321     0 2    80    100  1\n   12   1234     0 1 65535    100  1\n"
	got, err := parseGroups(strings.NewReader(in))
	if err != nil || len(got) != 2 || got[0] != 7731 || got[1] != 12 {
		t.Fatalf("groups %v, %v", got, err)
	}
	if _, err := parseGroups(strings.NewReader("x y\n")); err == nil {
		t.Error("bad line: no error")
	}
}
