package part

import (
	"fmt"
	"hash/fnv"
)

// FitLabName returns name when it fits the 12 characters a lab name
// allows, else its first 8 and 4 hex digits of a hash of whole (what the
// name stands for, e.g. the scenario "vxlan+ebpf-tc+policy"): readable,
// and still unique.
func FitLabName(name, whole string) string {
	if len(name) <= 12 {
		return name
	}
	h := fnv.New32a()
	h.Write([]byte(whole))
	return fmt.Sprintf("%s%04x", name[:8], h.Sum32()&0xffff)
}
