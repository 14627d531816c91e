package results

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/cnibench/cnibench/engine/kinds"
)

// A kind registered after the built-in ones keeps its sample results in
// Sample.Result and its options in Result.KindOptions; results.json has
// them under the kind's own keys, after the fields every sample and result
// has. Documents without such kinds are written exactly as before.

type (
	sampleFields Sample // without the methods below: the plain encoding
	resultFields Result
)

// MarshalJSON writes the sample's fields, then Result under its kind's Key.
func (s Sample) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(sampleFields(s))
	if err != nil || s.Result == nil {
		return b, err
	}
	k, ok := kinds.Of(s.Result)
	if !ok || k.Key == "" {
		return nil, fmt.Errorf("sample result %T: no registered kind stores it", s.Result)
	}
	return appendField(b, k.Key, s.Result)
}

// UnmarshalJSON reads the sample's fields and any registered kind's result.
func (s *Sample) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, (*sampleFields)(s)); err != nil {
		return err
	}
	v, err := storedField(b, func(k kinds.Kind) (string, func() any) { return k.Key, k.NewResult })
	s.Result = v
	return err
}

// MarshalJSON writes the result's fields, then KindOptions under its
// kind's OptionsKey (the kind of its test).
func (r Result) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(resultFields(r))
	if err != nil || r.KindOptions == nil {
		return b, err
	}
	k, ok := kinds.Lookup(r.Kind())
	if !ok || k.OptionsKey == "" {
		return nil, fmt.Errorf("%s: options %T: no registered kind stores them", r.Test, r.KindOptions)
	}
	return appendField(b, k.OptionsKey, r.KindOptions)
}

// UnmarshalJSON reads the result's fields and any registered kind's options.
func (r *Result) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, (*resultFields)(r)); err != nil {
		return err
	}
	v, err := storedField(b, func(k kinds.Kind) (string, func() any) { return k.OptionsKey, k.NewOptions })
	r.KindOptions = v
	return err
}

// appendField adds "key": v at the end of the JSON object obj.
func appendField(obj []byte, key string, v any) ([]byte, error) {
	val, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	k, _ := json.Marshal(key)
	obj = bytes.TrimSuffix(obj, []byte("}"))
	if len(obj) > 1 {
		obj = append(obj, ',')
	}
	obj = append(append(append(obj, k...), ':'), val...)
	return append(obj, '}'), nil
}

// storedField decodes the first registered kind's field present in the
// JSON object b (nil if none); documents of built-in kinds only are not
// read twice.
func storedField(b []byte, field func(kinds.Kind) (string, func() any)) (any, error) {
	stored := kinds.Stored()
	if len(stored) == 0 {
		return nil, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	for _, k := range stored {
		key, newV := field(k)
		if m, ok := raw[key]; ok && key != "" {
			v := newV()
			if err := json.Unmarshal(m, v); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			return v, nil
		}
	}
	return nil, nil
}
