package results

import "time"

// Twins records a run of twin scenarios on one target: the base and, for
// each part, the same target with that part switched on (a NetworkPolicy
// applied, Hubble enabled), measured in the same rounds. A switch happens
// between samples and is proved before the next one is taken.
type Twins struct {
	// Design says how the switches were scheduled and how the rounds
	// pair the twins (the statistics pair samples by round).
	Design string     `json:"design"`
	Parts  []TwinPart `json:"parts"`
	// NotMeasured are the parts of the profile this run did not measure,
	// each with why (it cannot apply on the target, or was refused).
	NotMeasured []NotMeasured `json:"not_measured,omitempty"`
}

// TwinPart is one part switched on for its twin scenario.
type TwinPart struct {
	Part     string `json:"part"`     // "policy", "flows"
	Scenario string `json:"scenario"` // the twin measured with it on
	How      string `json:"how"`      // what switching does, in words
	// Restarts: switching restarts part of the target (Cilium's agents),
	// so it is switched once a round, not around every sample.
	Restarts bool `json:"restarts,omitempty"`
	// Original is the part's state before the run; Close restores it.
	Original bool         `json:"original"`
	Switches []TwinSwitch `json:"switches"`
}

// TwinSwitch is one switch of a part and the proof of the state reached.
type TwinSwitch struct {
	Round int       `json:"round"` // 0: the check before the first round
	On    bool      `json:"on"`
	Start time.Time `json:"start"`
	// Seconds is how long switching and proving took.
	Seconds float64 `json:"seconds"`
	Proof   string  `json:"proof,omitempty"`
	Error   string  `json:"error,omitempty"`
}

// NotMeasured is a part a run did not measure, and why.
type NotMeasured struct {
	Part   string `json:"part"`
	Reason string `json:"reason"`
}
