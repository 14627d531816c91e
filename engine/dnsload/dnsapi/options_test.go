package dnsapi

import (
	"fmt"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine/engineapi"
	"github.com/cnibench/cnibench/engine/kinds"
)

// ValidateAddr returns the unmapped server address, and fills the
// open-loop cap only when a rate is asked for.
func TestValidateAddr(t *testing.T) {
	o := Options{Server: "[::ffff:127.0.0.1]", Port: 5353, QPS: 10, RunnerOptions: kinds.RunnerOptions{Duration: engineapi.Duration(time.Second)}}
	ap, err := o.ValidateAddr()
	if err != nil || ap.String() != "127.0.0.1:5353" {
		t.Fatalf("got %v %v", ap, err)
	}
	if o.Outstanding != DefaultOpenOutstanding || time.Duration(o.Timeout) != DefaultTimeout {
		t.Errorf("open-loop defaults: %+v", o)
	}
}

// QueryNames generates the default server's names unless Names is given.
func TestQueryNames(t *testing.T) {
	o := Options{Server: "127.0.0.1", NameCount: 3, RunnerOptions: kinds.RunnerOptions{Duration: engineapi.Duration(time.Second)}}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(o.QueryNames()); got != "[svc-0.default.svc.cluster.local svc-1.default.svc.cluster.local svc-2.default.svc.cluster.local]" {
		t.Errorf("generated %s", got)
	}
	o.Names = []string{"a.example"}
	if got := fmt.Sprint(o.QueryNames()); got != "[a.example]" {
		t.Errorf("given names: %s", got)
	}
	for f, ok := range map[string]bool{"svc-%d.x": true, "svc.x": false, "%d-%d": false, "%s.x": false, "%d%%": false} {
		if err := CheckNameFormat(f); (err == nil) != ok {
			t.Errorf("CheckNameFormat(%q) = %v", f, err)
		}
	}
}
