package results

import (
	"fmt"
	"slices"
	"strings"
)

// ScenarioName is a scenario's name parsed once into its parts: "vxlan+ebpf+policy"
// is vxlan, ebpf and policy. The CLI parses --scenarios into it, the run
// records it (Scenario.Parts), and the schedules, targets and report ask
// it instead of splitting the string again.
type ScenarioName []string

// ParseScenarioName splits name at "+" into its parts, lower case and
// trimmed; an empty name or part is an error that names it.
func ParseScenarioName(name string) (ScenarioName, error) {
	s := strings.ToLower(strings.TrimSpace(name))
	if s == "" {
		return nil, fmt.Errorf("scenario name is empty")
	}
	parts := strings.Split(s, "+")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
		if parts[i] == "" {
			return nil, fmt.Errorf("scenario %q: a part between the + signs is empty", name)
		}
	}
	return ScenarioName(parts), nil
}

// String is the name as written, parts joined by "+".
func (n ScenarioName) String() string { return strings.Join(n, "+") }

// Has tells whether part is one of n's parts.
func (n ScenarioName) Has(part string) bool { return slices.Contains(n, part) }

// With is n with part added at the end (n itself when it has it).
func (n ScenarioName) With(part string) ScenarioName {
	if n.Has(part) {
		return n
	}
	return append(slices.Clone(n), part)
}

// Without is n less the parts drop says to leave out.
func (n ScenarioName) Without(drop func(part string) bool) ScenarioName {
	return slices.DeleteFunc(slices.Clone(n), drop)
}

// Covers tells whether every part of o is one of n's.
func (n ScenarioName) Covers(o ScenarioName) bool {
	for _, p := range o {
		if !n.Has(p) {
			return false
		}
	}
	return true
}

// ScenarioName is the scenario's parts: as recorded, or, for a file
// written before runs recorded them, as its name says (a name that does
// not parse is one part).
func (s Scenario) ScenarioName() ScenarioName {
	if len(s.Parts) > 0 {
		return s.Parts
	}
	if n, err := ParseScenarioName(s.Name); err == nil {
		return n
	}
	return ScenarioName{s.Name}
}
