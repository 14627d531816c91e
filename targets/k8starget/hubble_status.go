package k8starget

import (
	"encoding/json"
	"fmt"
)

// Hubble's states as a Cilium agent reports them (cilium-dbg status -o
// json: api/v1/models HubbleStatus), the ones the toggle tells apart.
const (
	HubbleOK       = "Ok"
	HubbleDisabled = "Disabled"
)

// HubbleStatus is the part of `cilium-dbg status -o json` the Hubble
// toggle reads: the agent's Hubble state and its observer's flow counts.
type HubbleStatus struct {
	State        string `json:"state"`
	Msg          string `json:"msg,omitempty"`
	SeenFlows    int64  `json:"seen_flows"`    // flows the observer has seen since it started
	CurrentFlows int64  `json:"current_flows"` // flows in its ring buffer now
	Uptime       string `json:"uptime,omitempty"`
}

// ParseHubbleStatus reads the agent's Hubble status from `cilium-dbg
// status -o json`; a document without one (an agent too old, or not
// cilium-dbg's output) is an error, never "off".
func ParseHubbleStatus(b []byte) (HubbleStatus, error) {
	var doc struct {
		Hubble *struct {
			State    string `json:"state"`
			Msg      string `json:"msg"`
			Observer *struct {
				CurrentFlows int64  `json:"current-flows"`
				SeenFlows    int64  `json:"seen-flows"`
				Uptime       string `json:"uptime"`
			} `json:"observer"`
		} `json:"hubble"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return HubbleStatus{}, fmt.Errorf("cilium-dbg status -o json: %w", err)
	}
	h := doc.Hubble
	if h == nil || h.State == "" {
		return HubbleStatus{}, fmt.Errorf("cilium-dbg status -o json has no Hubble state")
	}
	st := HubbleStatus{State: h.State, Msg: h.Msg}
	if o := h.Observer; o != nil {
		st.SeenFlows, st.CurrentFlows, st.Uptime = o.SeenFlows, o.CurrentFlows, o.Uptime
	}
	return st, nil
}

// On says Hubble observes flows: state Ok.
func (s HubbleStatus) On() bool { return s.State == HubbleOK }

// String is "Ok (seen 52311 flows)", "Disabled", "Warning: Hubble starting".
func (s HubbleStatus) String() string {
	switch {
	case s.On():
		return fmt.Sprintf("%s (seen %d flows)", s.State, s.SeenFlows)
	case s.Msg != "":
		return s.State + ": " + s.Msg
	}
	return s.State
}
