package agent

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
)

// The built-in kinds' run routes, as the CLI posts them.
const (
	pathRR   = PathKind + "rr"
	pathHTTP = PathKind + "http"
	pathDNS  = PathKind + "dns"
)

// fuzzRoutes are the run endpoints a fuzzed request goes to (route % 5).
var fuzzRoutes = []string{pathRR, pathHTTP, pathDNS, PathKind + "stream", PathKind + "nokind"}

// FuzzRunRequest sends arbitrary run requests (route, body, budget and
// request-id headers, Authorization) through the agent's real routes, with
// counting runners in place of the engines. Whatever comes in: no panic;
// the answer is 200 with a checksummed document only when exactly one run
// started, and otherwise a one-line error and no run; only the token runs;
// the options a run got validate again to themselves (what the agent
// accepted, the engine accepts as it is).
func FuzzRunRequest(f *testing.F) {
	const ok = "Bearer tok"
	f.Add(uint8(0), []byte(rrBody), "", "r1", ok)
	f.Add(uint8(0), []byte(`{"test":"TCP_STREAM","host":"10.0.0.1","duration":"10s","warmup":"2s","streams":4,"message_size":131072}`), "40s", "", ok)
	f.Add(uint8(0), []byte(`{"test":"UDP_STREAM","host":"h","duration":"1s","rate_bits_per_sec":1000000,"message_size":31}`), "", "", ok)
	f.Add(uint8(0), []byte(`{"test":"TCP_RR","host":"h","duration":"1s","mode":"busy-poll","port":65536}`), "", "", ok)
	f.Add(uint8(1), []byte(`{"host":"127.0.0.1","duration":"1s","connections":64,"keep_alive":true,"qps":1000}`), "1m", "h-1", ok)
	f.Add(uint8(1), []byte(`{"url":"http://[::1]:8080/x?y","duration":"1s","headers":["A: b"]}`), "", "", ok)
	f.Add(uint8(2), []byte(`{"server":"127.0.0.1","duration":"1s","qps":1000,"name_format":"svc-%d.test","name_count":10}`), "", "", ok)
	f.Add(uint8(2), []byte(`{"server":"::1","duration":"1s","names":["a.b"],"outstanding":-1}`), "", "", ok)
	f.Add(uint8(3), []byte(rrBody), "", "", ok)
	f.Add(uint8(0), []byte(rrBody+rrBody), "", "", ok)
	f.Add(uint8(0), []byte(`{"test":"TCP_RR","host":"h","duration":"1s","bogus":1}`), "", "", ok)
	f.Add(uint8(0), []byte(`{"test":"TCP_RR","host":"h","duration":10}`), "", "", ok)
	f.Add(uint8(0), []byte(`[]`), "-1s", "bad.id", ok)
	f.Add(uint8(0), []byte(rrBody), "", "", "Bearer wrong")
	f.Add(uint8(0), []byte(rrBody), "", "", "tok")
	f.Add(uint8(0), []byte(rrBody), "25h", "", ok)
	f.Fuzz(func(t *testing.T, route uint8, body []byte, budget, id, auth string) {
		c := &countingRunners{}
		h := &handler{token: "tok", run: c.runners()}
		req := httptest.NewRequest(http.MethodPost, fuzzRoutes[int(route)%len(fuzzRoutes)], bytes.NewReader(body))
		for k, v := range map[string]string{"Authorization": auth, HeaderBudget: budget, HeaderRequest: id} {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		rec := httptest.NewRecorder()
		h.routes().ServeHTTP(rec, req)
		h.busy.Lock() // the detached run has ended
		h.busy.Unlock()

		runs := c.started.Load()
		status, answer := rec.Code, rec.Body.Bytes()
		switch {
		case auth != ok && status != http.StatusUnauthorized:
			t.Fatalf("Authorization %q: %d, want 401", auth, status)
		case status == http.StatusOK:
			if runs != 1 || rec.Header().Get(HeaderChecksum) != checksum(answer) || !json.Valid(answer) {
				t.Fatalf("200 after %d runs, checksum %q: %q", runs, rec.Header().Get(HeaderChecksum), answer)
			}
			revalidate(t, c.last.Load())
		case runs != 0:
			t.Fatalf("%d: %q, yet %d runs started", status, answer, runs)
		case status != http.StatusBadRequest && status != http.StatusUnauthorized &&
			status != http.StatusNotFound && status != http.StatusRequestEntityTooLarge:
			t.Fatalf("status %d (%q), want 200, 400, 401, 404 or 413", status, answer)
		case len(answer) == 0 || bytes.Count(answer, []byte("\n")) != 1 || answer[len(answer)-1] != '\n':
			t.Fatalf("%d: error answer %q is not one line", status, answer)
		}
	})
}

// revalidate checks that options a run got are valid as they are:
// Validate again changes nothing and finds nothing.
func revalidate(t *testing.T, got any) {
	t.Helper()
	v := reflect.ValueOf(got)
	if v.Kind() != reflect.Pointer {
		t.Fatalf("a run got options of type %T, want a pointer", got)
	}
	again, ok := reflect.New(v.Elem().Type()).Interface().(options)
	if !ok {
		t.Fatalf("a run got options of type %T, which do not validate", got)
	}
	reflect.ValueOf(again).Elem().Set(v.Elem())
	if err := again.Validate(); err != nil {
		t.Fatalf("options %+v, accepted once, fail again: %v", got, err)
	}
	if !reflect.DeepEqual(again, got) {
		t.Fatalf("validating accepted options again changed them:\n%+v\n%+v", got, v)
	}
}
