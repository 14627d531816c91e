package results

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// smallDoc is a minimal results document with one sample of each built-in
// kind, a seed the fuzzer mutates much faster than the report fixture.
const smallDoc = `{"schema_version":1,"run_id":"r","status":"complete","start":"2026-12-01T12:00:00Z",
"scenarios":[{"name":"native","target":{"kind":"lab","details":{"nodes":2}}}],
"plan":{"profile":"quick","tests":["TCP_RR"],"placements":["pod-to-pod/other-node"],"rounds":1,"duration":"1s","warmup":"0s","streams":1,"mode":"blocking"},
"results":[
{"scenario":"native","test":"TCP_RR","placement":{"path":"pod-to-pod","node":"other-node"},"options":{"test":"TCP_RR","host":"h","duration":"1s"},
 "samples":[{"round":1,"start":"2026-12-01T12:00:00Z","end":"2026-12-01T12:00:01Z","client_cpu_sec":0.5,"server_cpu_sec":0.4,
  "engine":{"test":"TCP_RR","seconds":1,"streams":1,"errors":0,"transactions":1000,"rate_per_sec":1000,
   "latency":{"count":1000,"min_us":30,"mean_us":38.1,"p50_us":37.2,"p90_us":43.2,"p99_us":44.7,"p99_9_us":120,"max_us":120,
    "histogram":"HISTFAAAAEF42pJpmSzMwMCQwQABzFCakYGBQdyj7AWD/QeIwNJYDUUNZTBE0KIa/BqCGvwoJKl8JFGR3eIigAAAAP//Ic4R8g=="},
   "client_cpu_user_sec":0.1,"client_cpu_sys_sec":0.2}}]},
{"scenario":"native","test":"TCP_STREAM","placement":{"path":"pod-to-pod","node":"other-node"},"options":{"test":"TCP_STREAM","host":"h","duration":"1s"},
 "samples":[{"round":1,"engine":{"test":"TCP_STREAM","seconds":1,"streams":1,"errors":0,"bytes_received":1000000,"throughput_bits_per_sec":8000000,"client_cpu_user_sec":0,"client_cpu_sys_sec":0}},
  {"round":2,"error":"agent node0-pod0: gone"}]},
{"scenario":"native","test":"HTTP_RPS_C64","placement":{"path":"pod-to-pod","node":"other-node"},"options":{"test":"HTTP","host":"h","duration":"1s"},
 "http_options":{"host":"h","duration":"1s","connections":64,"keep_alive":true},
 "samples":[{"round":1,"http":{"mode":"max-rate","seconds":1,"conns":64,"requests":500,"ok":500,"rps":500,"client_cpus":1,"client_cpu_util":0.5}}]},
{"scenario":"native","test":"DNS_QPS_MAX","placement":{"path":"pod-to-pod","node":"other-node"},"options":{"test":"DNS","host":"h","duration":"1s"},
 "dns_options":{"server":"h","duration":"1s"},"skipped":"no DNS here","samples":null}]}`

// FuzzLoad reads arbitrary bytes as results.json, as 'cnibench report'
// and 'compare' do. Whatever the file holds: no panic, a refusal is one
// line naming the file, and a document Load accepts is summarized without
// panic and written and read back to the same document.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(smallDoc))
	f.Add([]byte(`{"schema_version":1}`))
	f.Add([]byte(`{"schema_version":2,"results":[]}`))
	f.Add([]byte(`{"schema_version":1,"results":[{"samples":[{"engine":{"latency":{"histogram":"HISTFAAAAA=="}}}]}]}`))
	f.Add([]byte(`{"schema_version":1,"results":[{"test":"TCP_RR","samples":[{"engine":{"transactions":1,"latency":{"count":1,"histogram":"!!"}}}]}]}`))
	if b, err := os.ReadFile("../report/testdata/results.json"); err == nil {
		f.Add(b)
	}
	// run --pairs: each pair's result under its kind's key, one pair failed.
	f.Add([]byte(`{"schema_version":1,"plan":{"pairs":2},"results":[{"test":"TCP_RR","pairs":[{},{}],"samples":[{"engine":{"transactions":2},"pairs":[{"pair":0,"engine":{"transactions":1}},{"pair":1,"error":"x","engine":{"latency":{"histogram":"!!"}}}]}]}]}`))
	dir := f.TempDir()
	path, again := filepath.Join(dir, FileName), filepath.Join(dir, "again")
	if err := os.Mkdir(again, 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		run, err := Load(path)
		if err != nil {
			if msg := err.Error(); strings.ContainsAny(msg, "\r\n") || !strings.HasPrefix(msg, path+": ") {
				t.Fatalf("refusal %q: want one line starting with the file's name", msg)
			}
			return
		}
		for _, r := range run.Results {
			_, _ = Summarize(r)
			_, _ = Metrics(r)
		}
		first, err := json.Marshal(run)
		if err != nil {
			return // a document Save would refuse too (a kind's result no kind owns): not a crash
		}
		if err := Save(again, run); err != nil {
			t.Fatalf("a loaded document cannot be saved: %v", err)
		}
		back, err := Load(again)
		if err != nil {
			t.Fatalf("a saved document cannot be loaded again: %v", err)
		}
		second, _ := json.Marshal(back)
		if !bytes.Equal(first, second) {
			t.Fatalf("saved and loaded again, the document changed:\n%s\n%s", first, second)
		}
	})
}
