package engineapi

import (
	"encoding/json"
	"github.com/cnibench/cnibench/engine/kinds"
	"strings"
	"testing"
	"time"
)

// Durations cross the wire as strings; a number is refused with a hint.
func TestDurationJSON(t *testing.T) {
	b, err := json.Marshal(Duration(1500 * time.Millisecond))
	if err != nil || string(b) != `"1.5s"` {
		t.Fatalf("marshal: %s %v", b, err)
	}
	var d Duration
	if err := json.Unmarshal([]byte(`"250ms"`), &d); err != nil || d != Duration(250*time.Millisecond) {
		t.Errorf("unmarshal: %v %v", time.Duration(d), err)
	}
	if err := json.Unmarshal([]byte(`10`), &d); err == nil || !strings.Contains(err.Error(), `duration must be a string like "10s"`) {
		t.Errorf("number accepted or unclear: %v", err)
	}
}

// Validate fills each test's port and message size as netperf would.
func TestValidateDefaults(t *testing.T) {
	size := map[Test]int{TCPStream: 128 << 10, UDPStream: 1400, TCPRR: 1, UDPRR: 1, TCPCRR: 1}
	for _, tt := range Tests {
		o := Options{Test: tt, Host: "h", RunnerOptions: kinds.RunnerOptions{Duration: Duration(time.Second)}}
		if err := o.Validate(); err != nil {
			t.Fatalf("%s: %v", tt, err)
		}
		if o.Port != DefaultPort[tt] || o.MessageSize != size[tt] || o.Streams != 1 || o.Mode != Blocking {
			t.Errorf("%s: defaults %+v", tt, o)
		}
	}
	o := Options{Test: UDPRR, Host: "h", RunnerOptions: kinds.RunnerOptions{Duration: Duration(time.Second)}, MessageSize: MaxUDPRRSize + 1}
	if err := o.Validate(); err == nil || err.Error() != "UDP_RR: message size 65001 out of range 1..65000" {
		t.Errorf("oversized UDP_RR: %v", err)
	}
}

// UDP GSO is a UDP_STREAM sender option; elsewhere it would be ignored.
func TestValidateUDPGSO(t *testing.T) {
	for _, tt := range Tests {
		o := Options{Test: tt, Host: "h", RunnerOptions: kinds.RunnerOptions{Duration: Duration(time.Second)}, UDPGSO: true}
		err := o.Validate()
		if tt == UDPStream && err != nil {
			t.Errorf("UDP_STREAM with GSO: %v", err)
		}
		if tt != UDPStream && (err == nil || !strings.Contains(err.Error(), "UDP GSO applies to UDP_STREAM only")) {
			t.Errorf("%s with GSO: %v", tt, err)
		}
	}
}
