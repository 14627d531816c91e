package tuning

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// fixed are the tunings without a parameter, by scenario part.
var fixed = map[string]func() Knob{
	"gro-on":    func() Knob { return offload{name: "gro-on", features: groFeatures, on: true} },
	"gro-off":   func() Knob { return offload{name: "gro-off", features: groFeatures} },
	"gso-on":    func() Knob { return offload{name: "gso-on", features: gsoFeatures, on: true} },
	"gso-off":   func() Knob { return offload{name: "gso-off", features: gsoFeatures} },
	"notrack":   func() Knob { return notrack{} },
	"busy-poll": func() Knob { return busyPoll{} },
	"node-rps":  func() Knob { return nodeRPS{} },
}

// ccPart is "cc-<algorithm>": a TCP congestion control by its kernel name.
var ccPart = regexp.MustCompile(`^cc-([a-z0-9_]{1,16})$`)

// mtuPart is "mtu-<bytes>": the lab's links at that MTU.
var mtuPart = regexp.MustCompile(`^mtu-([0-9]{3,5})$`)

// Lookup returns the tuning a scenario part names; ok is false for a part
// that is no tuning.
func Lookup(part string) (Knob, bool) {
	if f, ok := fixed[part]; ok {
		return f(), true
	}
	if m := ccPart.FindStringSubmatch(part); m != nil {
		return congestion{algo: m[1]}, true
	}
	if m := mtuPart.FindStringSubmatch(part); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n >= minMTU && n <= maxMTU {
			return mtu{bytes: n}, true
		}
	}
	return nil, false
}

// Names lists the tunings for help texts ("cc-ALGO" stands for every
// congestion control, "mtu-N" for every MTU).
func Names() []string {
	n := []string{"cc-ALGO", "mtu-N"}
	for k := range fixed {
		n = append(n, k)
	}
	slices.Sort(n)
	return n
}

// Describe is one line per tuning: its name and what it does.
func Describe() string {
	var b strings.Builder
	for _, n := range Names() {
		k, ok := Lookup(n)
		switch n {
		case "cc-ALGO":
			k, ok = congestion{algo: "ALGO"}, true
		case "mtu-N":
			k, ok = mtu{}, true
		}
		if ok {
			fmt.Fprintf(&b, "  %-10s %s\n", n, k.About())
		}
	}
	return b.String()
}
