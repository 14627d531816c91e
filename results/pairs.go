package results

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/cnibench/cnibench/engine/kinds"
)

// PairSample is what one client→server pair measured in a sample that ran
// several pairs at once (run --pairs N): its endpoints, its measured
// interval, and its kind's result under the kind's Key, as a Sample's.
type PairSample struct {
	Pair   int    `json:"pair"`
	Client string `json:"client"`
	Server string `json:"server"`
	// Start and End are the pair's measured interval (its result's, warm-up
	// excluded), or the call's when it failed.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Error string    `json:"error,omitempty"`
	// Result is the pair's own result (a pointer to its kind's type; nil
	// when the pair failed), written after Error under the kind's Key.
	Result       any     `json:"-"`
	ClientCPUSec float64 `json:"client_cpu_sec"`
	ServerCPUSec float64 `json:"server_cpu_sec"`
}

type (
	pairFields PairSample // without the methods below
	pairHead   struct {
		Pair   int       `json:"pair"`
		Client string    `json:"client"`
		Server string    `json:"server"`
		Start  time.Time `json:"start"`
		End    time.Time `json:"end"`
		Error  string    `json:"error,omitempty"`
	}
)

// MarshalJSON writes the pair's fields with Result under its kind's Key.
func (p PairSample) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(pairFields(p))
	if err != nil || p.Result == nil {
		return b, err
	}
	k, ok := kinds.Of(p.Result)
	if !ok || k.Key == "" {
		return nil, fmt.Errorf("pair %d result %T: no registered kind stores it", p.Pair, p.Result)
	}
	return insertField(b, pairHead{p.Pair, p.Client, p.Server, p.Start, p.End, p.Error}, k.Key, p.Result)
}

// UnmarshalJSON reads the pair's fields and its kind's result.
func (p *PairSample) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, (*pairFields)(p)); err != nil {
		return err
	}
	raw, err := fieldsOf(b)
	if err != nil {
		return err
	}
	p.Result, err = storedResult(raw)
	return err
}

// storedResult decodes the result a sample or pair stored under the Key of
// a stored kind (nil when it has none).
func storedResult(raw map[string]json.RawMessage) (any, error) {
	for _, k := range kinds.Stored() {
		if m, ok := raw[k.Key]; ok && k.Key != "" {
			v := k.NewResult()
			if err := json.Unmarshal(m, v); err != nil {
				return nil, fmt.Errorf("%s: %w", k.Key, err)
			}
			return v, nil
		}
	}
	return nil, nil
}

// Measured is the pair's result (nil for a failed pair).
func (p PairSample) Measured() any { return p.Result }

// PairCount is how many pairs each sample of the run ran at once (1 for
// runs before --pairs).
func (p Plan) PairCount() int { return max(1, p.Pairs) }
