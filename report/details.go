package report

import "encoding/json"

// detail decodes target details' key into a T: the details are a live
// struct while a run reports itself and a map once loaded from
// results.json, so both go through JSON. ok is false when the key is
// absent or does not decode.
func detail[T any](details map[string]any, key string) (v T, ok bool) {
	raw, found := details[key]
	if !found || raw == nil {
		return v, false
	}
	b, err := json.Marshal(raw)
	if err != nil || json.Unmarshal(b, &v) != nil {
		return v, false
	}
	return v, true
}
