package flows

import (
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// fakeSource replays events to the recorder (no kernel): for the
// counting and sampling logic only.
type fakeSource struct {
	evs     []Event
	gaps    uint64
	stopped chan struct{}
	once    sync.Once
	removed int
}

func (f *fakeSource) run(emit func(Event), lost func(uint64)) error {
	for _, e := range f.evs {
		emit(e)
	}
	lost(f.gaps)
	<-f.stopped
	return errStopped
}
func (f *fakeSource) kernelLost() (uint64, error) { return 3, nil }
func (f *fakeSource) stop()                       { f.once.Do(func() { close(f.stopped) }) }
func (f *fakeSource) remove() error               { f.removed++; return nil }
func (f *fakeSource) installed() (int, error)     { return 1, nil }

func TestRecorderCountsAndSample(t *testing.T) {
	var evs []Event
	for i := range 10 {
		evs = append(evs, Event{Proto: 6, TCPFlags: FlagSYN, Src: netip.AddrPortFrom(netip.MustParseAddr("198.19.0.10"), uint16(40000+i))})
	}
	evs = append(evs, Event{Proto: 17})
	src := &fakeSource{evs: evs, gaps: 2, stopped: make(chan struct{})}
	r := &Recorder{site: Site{Node: "node0"}, src: src, done: make(chan struct{}), byKind: map[string]uint64{}, sample: make([]Event, 0, 4)}
	r.Start()
	var c Counts
	for c.Events < 11 || c.Lost < 5 {
		var err error
		if c, err = r.Counts(); err != nil {
			t.Fatal(err)
		}
	}
	if c.Events != 11 || c.Lost != 5 || c.ByKind[KindSYN] != 10 || c.ByKind[KindUDP] != 1 {
		t.Fatalf("counts %+v: want 11 events (10 SYN, 1 UDP), 5 lost (2 gaps + 3 kernel)", c)
	}
	s := r.Sample(-1)
	if len(s) != 4 || s[0].Src.Port() != 40007 || s[2].Src.Port() != 40009 || s[3].Proto != 17 {
		t.Fatalf("sample %v: want the last 4 events, oldest first", s)
	}
	if s2 := r.Sample(2); len(s2) != 2 || s2[1].Proto != 17 {
		t.Fatalf("Sample(2) = %v", s2)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil || src.removed != 1 {
		t.Fatalf("second Close: %v, removed %d times", err, src.removed)
	}
	if c2, err := r.Counts(); err != nil || c2.Events != 11 || c2.Lost != 5 {
		t.Fatalf("counts after Close %+v, %v", c2, err)
	}
}

func TestOpenRejectsBadInput(t *testing.T) {
	site := Site{Netns: "/run/netns/none", Node: "node0", Prefix: "cnb-x-"}
	for _, c := range []struct {
		site Site
		mech string
		opts Options
		want string
	}{
		{Site{}, EBPF, Options{}, "Site.Netns is empty"},
		{site, "pcap", Options{}, `unknown mechanism "pcap"`},
		{site, EBPF, Options{TCAttach: "xdp"}, "TCAttach must be"},
		{site, EBPF, Options{RingBytes: 5000}, "RingBytes 5000 is not a power of two"},
		{Site{Netns: "/run/netns/none", Prefix: "cnb x-"}, NFLOG, Options{}, "bad nft table name"},
	} {
		_, err := Open(c.site, c.mech, nil, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%+v, %q, %+v): %v, want %q", c.site, c.mech, c.opts, err, c.want)
		}
	}
}
