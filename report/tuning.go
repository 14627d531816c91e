package report

import (
	"fmt"
	"strings"
)

// tuningCheck is target details' "tuning" entry (tuning.Check).
type tuningCheck struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Sites  int    `json:"sites"`
}

// tuningText is one line saying which tunings a scenario ran under and
// what each did: "cc-reno applied (read back: reno in 10 namespaces);
// busy-poll not applicable (…): nothing measured under it"; "" without
// tunings. A tuning that did not apply is said so beside the scenario,
// whose samples were skipped with the same reason.
func tuningText(details map[string]any) string {
	cs, ok := detail[[]tuningCheck](details, "tuning")
	if !ok || len(cs) == 0 {
		return ""
	}
	var parts []string
	for _, c := range cs {
		s := fmt.Sprintf("%s %s (%s)", c.Name, c.Status, c.Detail)
		if c.Status != "applied" {
			s += ": nothing measured under it"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}
