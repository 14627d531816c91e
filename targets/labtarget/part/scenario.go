package part

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/results"
)

// Scenario is a scenario's finished configuration: its name, the lab it
// runs on (the run's flags with its parts configured in) and its parts,
// which the run opens. Parts ask it for what they conflict with.
type Scenario struct {
	Name  results.ScenarioName
	Lab   lab.Config
	Parts []Part
}

// Configure parses name's parts on top of base (the run's flags),
// configures them into the lab config in phase order, checks each
// against the finished scenario and names its lab after it.
func Configure(name results.ScenarioName, base lab.Config) (Scenario, error) {
	s := Scenario{Name: name, Lab: base}
	for _, n := range name {
		p, err := Lookup(n)
		if err != nil {
			return s, fmt.Errorf("scenario %q: %w", name, err)
		}
		s.Parts = append(s.Parts, p)
	}
	for _, p := range Ordered(s.Parts) {
		p.Configure(&s.Lab)
	}
	for _, p := range s.Parts {
		if err := p.Conflicts(s); err != nil {
			return s, fmt.Errorf("scenario %q: %w", name, err)
		}
	}
	s.Lab.Name = labName(s.Parts)
	if err := s.Lab.Validate(); err != nil {
		return s, fmt.Errorf("scenario %q: %w", name, err)
	}
	return s, nil
}

// Has tells whether the scenario has a part of one of these names.
func (s Scenario) Has(names ...string) bool {
	return slices.ContainsFunc(s.Parts, func(p Part) bool { return slices.Contains(names, p.Name()) })
}

// Others are the scenario's parts but p that match.
func (s Scenario) Others(p Part, match func(Part) bool) []Part {
	var out []Part
	for _, q := range s.Parts {
		if q.Name() != p.Name() && match(q) {
			out = append(out, q)
		}
	}
	return out
}

// Ordered is parts in opening order: by phase, then as named.
func Ordered(parts []Part) []Part {
	out := slices.Clone(parts)
	slices.SortStableFunc(out, func(a, b Part) int { return cmp.Compare(a.Phase(), b.Phase()) })
	return out
}

// Until splits ordered parts into those of phases up to last and the rest.
func Until(ordered []Part, last Phase) (upTo, after []Part) {
	i := slices.IndexFunc(ordered, func(p Part) bool { return p.Phase() > last })
	if i < 0 {
		return ordered, nil
	}
	return ordered[:i], ordered[i:]
}

// labName joins the parts' tokens into a lab name (FitLabName).
func labName(parts []Part) string {
	var b strings.Builder
	var whole []string
	for _, p := range parts {
		b.WriteString(p.Token())
		whole = append(whole, p.Name())
	}
	return FitLabName(b.String(), strings.Join(whole, "+"))
}
