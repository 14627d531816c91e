package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine/engineapi"
	"github.com/cnibench/cnibench/engine/kinds"
)

func ms(n int) engineapi.Duration { return engineapi.Duration(time.Duration(n) * time.Millisecond) }

func TestValidate(t *testing.T) {
	good := Options{Host: "127.0.0.1", RunnerOptions: kinds.RunnerOptions{Duration: ms(1000)}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	if good.Port != 0 || good.Connections != DefaultConnections || time.Duration(good.Timeout) != DefaultTimeout {
		t.Errorf("defaults not filled: %+v", good)
	}
	tr, _ := good.ValidateTarget()
	if tr.Display != "http://127.0.0.1:8080/" {
		t.Errorf("default target %q", tr.Display)
	}
	bad := map[string]func(o *Options){
		"no target":       func(o *Options) { o.Host = "" },
		"https":           func(o *Options) { o.URL = "https://127.0.0.1/" },
		"bad url":         func(o *Options) { o.URL = "http://[::1" },
		"url no host":     func(o *Options) { o.URL = "http:///x" },
		"port":            func(o *Options) { o.Port = 70000 },
		"path":            func(o *Options) { o.Path = "x" },
		"path space":      func(o *Options) { o.Path = "/a b" },
		"duration":        func(o *Options) { o.Duration = 0 },
		"warmup":          func(o *Options) { o.Warmup = -1 },
		"connections":     func(o *Options) { o.Connections = -1 },
		"qps":             func(o *Options) { o.QPS = -5 },
		"request size":    func(o *Options) { o.RequestSize = -1 },
		"timeout":         func(o *Options) { o.Timeout = -1 },
		"threads":         func(o *Options) { o.Threads = -1 },
		"header":          func(o *Options) { o.Headers = []string{"no colon"} },
		"header injected": func(o *Options) { o.Headers = []string{"X: a\r\nY: b"} },
		"header reserved": func(o *Options) { o.Headers = []string{"Connection: close"} },
	}
	for name, mut := range bad {
		o := good
		mut(&o)
		err := o.Validate()
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "httpload: ") {
			t.Errorf("%s: error %q is not one line starting with httpload:", name, msg)
		}
	}
	// URL form.
	o := Options{URL: "http://localhost:9000/a?b=c", RunnerOptions: kinds.RunnerOptions{Duration: ms(1000)}}
	tr, err := o.ValidateTarget()
	if err != nil || tr.Port != 9000 || tr.Path != "/a?b=c" || tr.HostHeader != "localhost:9000" {
		t.Errorf("url parse: %+v %v", tr, err)
	}
	// JSON round trip, durations as strings.
	o = Options{URL: "http://127.0.0.1:1/", RunnerOptions: kinds.RunnerOptions{Duration: ms(1500)}, KeepAlive: true, QPS: 10}
	b, _ := json.Marshal(o)
	if !strings.Contains(string(b), `"duration":"1.5s"`) || !strings.Contains(string(b), `"keep_alive":true`) {
		t.Errorf("json %s", b)
	}
	var back Options
	if err := json.Unmarshal(b, &back); err != nil || back.Duration != o.Duration || back.QPS != 10 {
		t.Errorf("json round trip: %+v %v", back, err)
	}
}
