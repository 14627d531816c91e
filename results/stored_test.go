package results

import (
	"encoding/json"
	"testing"

	"github.com/cnibench/cnibench/engine/dnsload/dnsapi"
	"github.com/cnibench/cnibench/engine/engineapi"
	"github.com/cnibench/cnibench/engine/httpload/httpapi"
)

// A result of an older document whose test has left the catalogue is read
// by what it stored: an HTTP or DNS test's own options, not the
// placeholder engine options beside them, and an engine test's options by
// the engine test they name.
func TestLegacyResultOfUnknownTest(t *testing.T) {
	placeholder := `"options": {"test": "HTTP", "host": "10.0.0.2", "duration": "2s", "streams": 0}`
	for _, tc := range []struct {
		doc, kind string
		want      func(any) bool
	}{
		{`{"test": "HTTP_GONE", ` + placeholder + `, "http_options": {"host": "10.0.0.2", "duration": "2s", "keep_alive": true}, "samples": []}`, KindHTTP,
			func(o any) bool { h, ok := o.(*httpapi.Options); return ok && h.KeepAlive }},
		{`{"test": "DNS_GONE", ` + placeholder + `, "dns_options": {"server": "10.0.0.2", "duration": "2s", "qps": 5}, "samples": []}`, KindDNS,
			func(o any) bool { d, ok := o.(*dnsapi.Options); return ok && d.QPS == 5 }},
		{`{"test": "RR_GONE", "options": {"test": "TCP_CRR", "host": "10.0.0.2", "duration": "2s", "streams": 1}, "samples": []}`, KindRR,
			func(o any) bool { e, ok := o.(*engineapi.Options); return ok && e.Test == engineapi.TCPCRR }},
		{`{"test": "STREAM_GONE", "options": {"test": "UDP_STREAM", "host": "10.0.0.2", "duration": "2s", "streams": 4}, "samples": []}`, KindStream,
			func(o any) bool { e, ok := o.(*engineapi.Options); return ok && e.Streams == 4 }},
	} {
		var r Result
		if err := json.Unmarshal([]byte(tc.doc), &r); err != nil {
			t.Fatalf("%s: %v", tc.doc, err)
		}
		if r.Kind() != tc.kind || !tc.want(r.Options) {
			t.Errorf("%s: kind %s, options %+v; want kind %s and its options", r.Test, r.Kind(), r.Options, tc.kind)
		}
	}
}

// A sample's result and a result's options are written where the typed
// fields were (after "error", after "placement"), so an older reader's
// order is kept.
func TestStoredFieldsInPlace(t *testing.T) {
	r := Result{Scenario: "a", Test: "TCP_RR", Options: &engineapi.Options{Test: engineapi.TCPRR, Host: "h", Streams: 1},
		Samples: []Sample{{Round: 1, Error: "", Result: &engineapi.Result{Test: engineapi.TCPRR, Transactions: 3}, ClientCPUSec: 1}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"scenario":"a","test":"TCP_RR","placement":{"path":"","node":"","client":"","server":"","server_addr":""},"options":{"test":"TCP_RR","host":"h","duration":"0s","streams":1},"samples":[{"round":1,"start":"0001-01-01T00:00:00Z","end":"0001-01-01T00:00:00Z","engine":{"test":"TCP_RR",`
	if got := string(b); len(got) < len(want) || got[:len(want)] != want {
		t.Errorf("written:\n%s\nwant it to start:\n%s", got, want)
	}
}
