package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cnibench/cnibench/engine/kinds"
)

// A Result's options and a Sample's result are each kind's own type,
// written under the kind's keys (kinds.Kind.OptionsKey and Key) where
// results.json has always had them: options after "placement", a sample's
// result after "error". The built-in kinds keep the keys of the typed
// fields they had before the registry ("options", "http_options",
// "dns_options"; "engine", "http", "dns"), so every document written
// before reads as it is. An older document also has, for every HTTP, DNS
// or other kind's test, a placeholder engine "options" that only named
// the test ({"test": "HTTP", ...}): it is not read, since a test's
// options are read under its own kind's key, and not written again.

type (
	sampleFields Sample // without the methods below: the plain encoding
	resultFields Result
	// resultHead and sampleHead are the fields before the kind's own, as
	// resultFields and sampleFields encode them.
	resultHead struct {
		Scenario  string    `json:"scenario"`
		Test      string    `json:"test"`
		Placement Placement `json:"placement"`
	}
	sampleHead struct {
		Round int       `json:"round"`
		Start time.Time `json:"start"`
		End   time.Time `json:"end"`
		Error string    `json:"error,omitempty"`
	}
)

// MarshalJSON writes the sample's fields with Result under its kind's Key.
func (s Sample) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(sampleFields(s))
	if err != nil || s.Result == nil {
		return b, err
	}
	k, ok := kinds.Of(s.Result)
	if !ok || k.Key == "" {
		return nil, fmt.Errorf("sample result %T: no registered kind stores it", s.Result)
	}
	return insertField(b, sampleHead{s.Round, s.Start, s.End, s.Error}, k.Key, s.Result)
}

// UnmarshalJSON reads the sample's fields and its kind's result.
func (s *Sample) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, (*sampleFields)(s)); err != nil {
		return err
	}
	raw, err := fieldsOf(b)
	if err != nil {
		return err
	}
	s.Result, err = storedResult(raw)
	return err
}

// MarshalJSON writes the result's fields with Options under the
// OptionsKey of its test's kind.
func (r Result) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(resultFields(r))
	if err != nil || r.Options == nil {
		return b, err
	}
	k, ok := kinds.Lookup(r.Kind())
	if !ok || k.OptionsKey == "" {
		return nil, fmt.Errorf("%s: options %T: no registered kind stores them", r.Test, r.Options)
	}
	return insertField(b, resultHead{r.Scenario, r.Test, r.Placement}, k.OptionsKey, r.Options)
}

// UnmarshalJSON reads the result's fields and its kind's options: those
// of its test's kind, or for a test no longer in the catalogue the first
// kind's that owns what it stored.
func (r *Result) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, (*resultFields)(r)); err != nil {
		return err
	}
	raw, err := fieldsOf(b)
	if err != nil {
		return err
	}
	candidates := kinds.Stored()
	if t, ok := kinds.LookupTest(r.Test); ok {
		k, _ := kinds.Lookup(t.Kind)
		candidates = []kinds.Kind{k}
	}
	for _, k := range candidates {
		m, ok := raw[k.OptionsKey]
		if !ok || k.OptionsKey == "" {
			continue
		}
		v, own, err := k.DecodeOptions(m)
		if err != nil {
			return err
		}
		if own || len(candidates) == 1 {
			r.Options = v
			return nil
		}
	}
	return nil
}

// insertField writes "key": v into the JSON object obj right after the
// fields head encodes, which obj must start with.
func insertField(obj []byte, head any, key string, v any) ([]byte, error) {
	h, err := json.Marshal(head)
	if err != nil {
		return nil, err
	}
	h = bytes.TrimSuffix(h, []byte("}"))
	if !bytes.HasPrefix(obj, h) {
		return nil, fmt.Errorf("results: %s: the document does not start with the fields before it", key)
	}
	val, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	k, _ := json.Marshal(key)
	out := append(append([]byte(nil), h...), ',')
	out = append(append(append(out, k...), ':'), val...)
	return append(out, obj[len(h):]...), nil
}

// fieldsOf splits a JSON object into its fields; documents of no stored
// kind are not read twice.
func fieldsOf(b []byte) (map[string]json.RawMessage, error) {
	if len(kinds.Stored()) == 0 {
		return nil, nil
	}
	var raw map[string]json.RawMessage
	err := json.Unmarshal(b, &raw)
	return raw, err
}
