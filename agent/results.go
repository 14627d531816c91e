package agent

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"time"
)

// A run's answer must survive the control connection it was asked on: on a
// cluster that connection is a port-forward stream, and those drop. So a run
// is not tied to its POST: it runs to its own end (bounded by the budget the
// client sends) and its answer is kept under the client-chosen request id,
// where GET PathResult+id finds it again. A run is never started twice for
// one id: a second run would measure a different interval.
const (
	// PathResult + request id: a finished run's answer again (200 or the
	// run's error), 202 while it runs, 404 for an id the agent does not know.
	PathResult = "/v1/result/"
	// HeaderRequest carries the client-chosen request id of a run (and is
	// echoed on every answer about it).
	HeaderRequest = "X-Cnibench-Request"
	// HeaderBudget is how long the client waits for the run (a Go duration,
	// "40s"): the run is cancelled after it. Relative, so clock skew between
	// CLI and agent does not matter.
	HeaderBudget = "X-Cnibench-Budget"

	keptAnswers      = 16        // finished answers kept, newest first
	defaultRunBudget = time.Hour // for a request without HeaderBudget
	maxRunBudget     = 24 * time.Hour
	maxRequestIDLen  = 64
)

// answer is a finished reply as sent: kept whole so a re-fetch gets the same
// bytes and checksum.
type answer struct {
	status int
	ctype  string
	body   []byte
	sum    string
}

func jsonAnswer(status int, v any) answer {
	b, err := json.Marshal(v)
	if err != nil {
		return textAnswer(http.StatusInternalServerError, "encoding the answer: "+err.Error())
	}
	return answer{status: status, ctype: "application/json", body: b, sum: checksum(b)}
}

func textAnswer(status int, msg string) answer {
	b := []byte(msg + "\n")
	return answer{status: status, ctype: "text/plain; charset=utf-8", body: b, sum: checksum(b)}
}

func checksum(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func (a answer) write(w http.ResponseWriter, id string) {
	w.Header().Set("Content-Type", a.ctype)
	w.Header().Set(HeaderChecksum, a.sum)
	w.Header().Set(HeaderRequest, id)
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// runEntry is one run by request id; ans is set before done is closed.
type runEntry struct {
	done chan struct{}
	ans  answer
}

// resultRing holds the running run and the last keptAnswers finished ones.
// The zero value is ready to use.
type resultRing struct {
	mu       sync.Mutex
	runs     map[string]*runEntry
	finished []string // ids in the order they finished, oldest first
}

func (rr *resultRing) get(id string) *runEntry {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.runs[id]
}

// start registers a run under id; fresh is false (and e the existing entry)
// when id is already known.
func (rr *resultRing) start(id string) (e *runEntry, fresh bool) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if e := rr.runs[id]; e != nil {
		return e, false
	}
	if rr.runs == nil {
		rr.runs = map[string]*runEntry{}
	}
	e = &runEntry{done: make(chan struct{})}
	rr.runs[id] = e
	return e, true
}

// finish stores a's answer and forgets the oldest beyond keptAnswers.
func (rr *resultRing) finish(id string, e *runEntry, a answer) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	e.ans = a
	close(e.done)
	rr.finished = append(rr.finished, id)
	for len(rr.finished) > keptAnswers {
		delete(rr.runs, rr.finished[0])
		rr.finished = rr.finished[1:]
	}
}

// reply answers about a known run without waiting: its answer, or 202.
func (e *runEntry) reply(w http.ResponseWriter, id string) {
	select {
	case <-e.done:
		e.ans.write(w, id)
	default:
		textAnswer(http.StatusAccepted, "request "+id+" is still running").write(w, id)
	}
}

// result serves GET PathResult+{id}.
func (h *handler) result(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := checkRequestID(id); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	e := h.results.get(id)
	if e == nil {
		http.Error(w, fmt.Sprintf("no run with request id %s (never received, or older than the last %d)", id, keptAnswers), http.StatusNotFound)
		return
	}
	e.reply(w, id)
}

// runRequest reads a run request's id and budget. A request without an id
// (an older client) gets one: it runs, but cannot be fetched again.
func runRequest(r *http.Request) (id string, budget time.Duration, err error) {
	id = r.Header.Get(HeaderRequest)
	if id == "" {
		id = newRequestID()
	} else if err := checkRequestID(id); err != nil {
		return "", 0, err
	}
	budget = defaultRunBudget
	if s := r.Header.Get(HeaderBudget); s != "" {
		budget, err = time.ParseDuration(s)
		if err != nil || budget <= 0 || budget > maxRunBudget {
			return "", 0, fmt.Errorf("bad %s %q: want a duration in (0, %s]", HeaderBudget, s, maxRunBudget)
		}
	}
	return id, budget, nil
}

// checkRequestID keeps ids to what fits a URL path segment and a log line.
func checkRequestID(id string) error {
	if id == "" || len(id) > maxRequestIDLen {
		return fmt.Errorf("bad request id %q: want 1 to %d characters", id, maxRequestIDLen)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("bad request id %q: want only letters, digits, - and _", id)
		}
	}
	return nil
}

func newRequestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// runContext is what a run is bounded by besides its budget: the agent's
// own life, not the connection that asked for it.
func (h *handler) runContext() context.Context {
	if h.ctx != nil {
		return h.ctx
	}
	return context.Background()
}

// launch runs run(o) under id, detached from the request, holding busy
// until run returns (the answer is stored just after). Busy must be held
// by the caller.
func launch[O, R any](h *handler, id string, e *runEntry, budget time.Duration, run func(context.Context, O) (*R, error), o O) {
	go func() {
		ctx, cancel := context.WithTimeout(h.runContext(), budget)
		defer cancel()
		a := func() (a answer) {
			// The measurement is over when run returns: free the agent
			// before the answer goes out, or a client that sends its next
			// run as soon as it reads this answer finds the agent still
			// "busy" (409) for the instant between the two. A repeat of
			// this id meanwhile finds its entry and waits for the answer.
			defer h.busy.Unlock()
			defer func() {
				if p := recover(); p != nil {
					a = textAnswer(http.StatusInternalServerError, fmt.Sprintf("run panicked: %v", p))
				}
			}()
			res, err := run(ctx, o)
			if err != nil {
				return textAnswer(http.StatusInternalServerError, err.Error())
			}
			return jsonAnswer(http.StatusOK, res)
		}()
		h.results.finish(id, e, a)
		if h.log != nil { // a soak (bench/soak.sh) reads these for growth
			fmt.Fprintf(h.log, "agent: run %s ended (%d): %d goroutines\n", id, a.status, runtime.NumGoroutine())
		}
	}()
}
