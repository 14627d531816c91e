package agent

import (
	"encoding/json"
	"net/http"

	"github.com/cnibench/cnibench/engine/httpload"
)

// runHTTP runs the client side of an HTTP load test (PathHTTP).
func (h *handler) runHTTP(w http.ResponseWriter, r *http.Request) {
	var o httpload.Options
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		http.Error(w, "bad HTTP options: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := o.Validate(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !h.busy.TryLock() {
		http.Error(w, "agent is already running a test", http.StatusConflict)
		return
	}
	defer h.busy.Unlock()
	res, err := httpload.Run(r.Context(), o)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
