package churn

import (
	"fmt"
	"slices"

	"github.com/cnibench/cnibench/datapath"
)

// Kind is what one change does, in the order the generator cycles
// through them, so every rate mixes them alike.
type Kind string

const (
	ScaleUp   Kind = "scale-up"   // a Service gains half its endpoints again (4 → 6)
	ScaleDown Kind = "scale-down" // and loses them (6 → 4): 85↔115 in small
	Replace   Kind = "replace"    // one endpoint replaced by a new address (a pod relabelled or rescheduled)
	Add       Kind = "add"        // a Service created
	Remove    Kind = "remove"     // and deleted again
)

// cycle is the generator's order: each Service is scaled up, later down;
// one is added, later removed; between them endpoints are replaced.
var cycle = []Kind{ScaleUp, Replace, Add, ScaleDown, Replace, Remove}

// Kinds lists the kinds of change, for reports.
func Kinds() []Kind { return []Kind{ScaleUp, ScaleDown, Replace, Add, Remove} }

// Change is one change made to the desired state.
type Change struct {
	Seq     int    // 1, 2, … in the order made
	Kind    Kind   //
	Service string // its Service's key
}

// state is the desired Services and the generator's position in them.
// Changes replace a Service's Endpoints slice instead of editing it, so a
// snapshot (a shallow copy of services) stays what it was.
type state struct {
	services  []datapath.Service // test Services and dummies, in order
	dummies   []int              // indices in services the churn may change
	endpoints int                // a dummy's endpoints when not scaled up
	extra     datapath.Service   // the Service Add creates (absent when added is false)
	added     bool
	next      int // next dummy to change (round-robin)
	scaled    []int
	fresh     int // endpoints made so far by Replace
	seq       int
}

// newState lays out test Services among n dummies of m endpoints each.
func newState(test []datapath.Service, n, m int) (*state, error) {
	all := datapath.DummyServices(n+1, m)
	placed, at, err := datapath.Place(all[:n], test, datapath.PositionRandom, 0x636875726e)
	if err != nil {
		return nil, err
	}
	s := &state{services: placed, endpoints: m, extra: all[n]}
	s.extra.Name = "churn-added"
	for i := range placed {
		if i < at || i >= at+len(test) {
			s.dummies = append(s.dummies, i)
		}
	}
	return s, nil
}

// spec is a snapshot of the desired state.
func (s *state) spec() datapath.Spec {
	svcs := make([]datapath.Service, len(s.services), len(s.services)+1)
	copy(svcs, s.services)
	if s.added {
		svcs = append(svcs, s.extra)
	}
	return datapath.Spec{Services: svcs}
}

// change makes the next change of the cycle.
func (s *state) change() Change {
	s.seq++
	kind := cycle[(s.seq-1)%len(cycle)]
	c := Change{Seq: s.seq, Kind: kind}
	switch kind {
	case ScaleUp:
		i := s.dummies[s.next%len(s.dummies)]
		s.next++
		svc := &s.services[i]
		eps := append(make([]datapath.Endpoint, 0, s.endpoints*2), svc.Endpoints...)
		for range s.endpoints / 2 {
			eps = append(eps, s.newEndpoint(eps))
		}
		svc.Endpoints = eps
		s.scaled = append(s.scaled, i)
		c.Service = svc.Key()
	case ScaleDown:
		i := s.scaled[0]
		s.scaled = s.scaled[1:]
		svc := &s.services[i]
		svc.Endpoints = append([]datapath.Endpoint(nil), svc.Endpoints[:s.endpoints]...)
		c.Service = svc.Key()
	case Replace:
		i := s.dummies[s.next%len(s.dummies)]
		s.next++
		svc := &s.services[i]
		eps := append([]datapath.Endpoint(nil), svc.Endpoints...)
		eps[s.seq%len(eps)] = s.newEndpoint(eps)
		svc.Endpoints = eps
		c.Service = svc.Key()
	case Add:
		s.added = true
		c.Service = s.extra.Key()
	case Remove:
		s.added = false
		c.Service = s.extra.Key()
	default:
		panic(fmt.Sprintf("churn: unknown kind %q", kind))
	}
	return c
}

// newEndpoint is a new pod of the Service whose endpoints are eps: the
// same target port, the next address of the dummy endpoint range that eps
// does not have (a pod may back several Services, as on a cluster; a
// Service never lists one address twice), so on a cluster the Service's
// EndpointSlice is updated rather than a new one made per port.
func (s *state) newEndpoint(eps []datapath.Endpoint) datapath.Endpoint {
	space := 1 << (32 - datapath.DummyEndpointCIDR.Bits())
	for {
		s.fresh++
		a := datapath.AddOffset(datapath.DummyEndpointCIDR.Addr(), s.fresh%space)
		ep := datapath.Endpoint{IP: a, Port: eps[0].Port}
		if !slices.Contains(eps, ep) {
			return ep
		}
	}
}
