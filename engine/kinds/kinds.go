// Package kinds is the registry of engine kinds: each kind of test (stream,
// request/response, HTTP, DNS, ...) registers here, from its engine's
// package, what the rest of cnibench needs to know about it: its tests (the
// suite catalogue), its data ports, how a sample's result turns into
// metrics, its progress line and its report table. results, report and
// suite read the registry instead of switching on kinds, so a new kind is
// its package and one Register call.
//
// The package imports nothing of cnibench but stats, so the renderer and
// the results document stay light.
package kinds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
)

// Kind is one registered kind of test.
type Kind struct {
	// Name is the kind's name in results and reports ("stream", "rr",
	// "http", "dns").
	Name string
	// Order places the kind in the catalogue (lower first).
	Order int
	// Tests are the kind's suite tests, in catalogue order.
	Tests []Test
	// Ports are the data ports its servers listen on.
	Ports []Port
	// Dials, if set, names the kind whose server this kind's client
	// measures, for a kind without a server of its own (a second client
	// of one server, as fortio is of http's): its tests take that kind's
	// ports (ServerPorts).
	Dials string
	// Owns tells whether a sample's result (a pointer to the engine's
	// result type) is of this kind; several kinds may share one engine
	// and tell its results apart (stream and rr).
	Owns func(result any) bool
	// Read turns one successful sample's result into metrics (test is the
	// suite test's name).
	Read func(test string, result any) Reading
	// PerWork names the CPU-per-unit-of-work metrics of the kind.
	PerWork PerWork
	// Line is the one-line progress summary of a successful sample.
	Line func(result any) string
	// Check, if set, fails a sample whose result measured nothing (no
	// answer at all), with why; its numbers would otherwise read as 0.
	Check func(result any) error
	// Merge, if set, is the aggregate of results measured at once by
	// several client→server pairs (run --pairs N): rates, work and bytes
	// summed, latency percentiles from the merged histograms, so the
	// aggregate reads, is displayed and judged as one sample's result. A
	// kind without Merge cannot run with pairs (the run refuses first).
	Merge func(results []any) (any, error)
	// Table is the kind's terminal table in reports.
	Table Table
	// Storage in results.json: Key names a sample's result ("engine",
	// "http", "toy"), OptionsKey a Result's options ("options",
	// "http_options", "toy_options"); NewResult and NewOptions return the
	// pointers to decode them into. Kinds of one engine share its keys
	// (stream and rr); OwnsOptions, if set, then tells a kind's options
	// apart (for a result whose test left the catalogue, and for options
	// another kind wrote under the shared key).
	Key, OptionsKey       string
	NewResult, NewOptions func() any
	OwnsOptions           func(options any) bool
	// Running: Options builds a test's options (a pointer, stored in
	// results.Result.Options) for one server address; Run is the client
	// side, run by the client's agent (agent.Client.RunKind); Listen, if
	// set, starts the server side in every agent and returns its serve
	// loop, which returns once ctx is done and its sockets are closed.
	Options func(t Test, host string, p Plan) any
	Run     func(ctx context.Context, options any) (any, error)
	Listen  func(bind string) (serve func(context.Context) error, err error)
}

// Plan is what a test's options take from the suite's plan.
type Plan struct {
	Duration, Warmup time.Duration
	Streams          int // flows of Multi tests
	// UDPMessageSize is the UDP stream tests' datagram size in bytes (0:
	// the engine's own default).
	UDPMessageSize int
	Mode           string // request/response: "blocking" or "busy-poll"
	// PortShare is the placement's share of the client's ephemeral ports
	// for kinds that open many connections (nil: the whole range).
	PortShare *PortShare
	// Ports are server ports, by Port name, where servers listen off
	// their kind's number (a test's loopback DNS server, client --port).
	Ports map[string]int
}

// Port is the server port named name: Ports' number, else def.
func (p Plan) Port(name string, def int) int {
	if n, ok := p.Ports[name]; ok {
		return n
	}
	return def
}

// Runner is the base of the options Options built.
func (p Plan) Runner() RunnerOptions {
	return RunnerOptions{Duration: Duration(p.Duration), Warmup: Duration(p.Warmup)}
}

// Test is one named suite test: its kind, what it measures and the
// options template its kind's engine runs (the plan fills in the server,
// durations and the like).
type Test struct {
	Name  string
	Kind  string
	About string
	// Multi: the test runs the plan's N flows instead of one.
	Multi bool
	// Template is the kind's own value for this test (an engine test name,
	// an options struct with the test's settings).
	Template any
}

// Port is one data port a kind's server listens on.
type Port struct {
	Name   string // e.g. "tcp-rr": Service port names on targets
	Number int
	Proto  string // "tcp" or "udp"
	// Exposed: the agent's own server listens on it, so the agent image
	// (EXPOSE) and pod (containerPort) declare it; false for a server the
	// agent runs as another program (dnsmasq).
	Exposed bool
}

// String is "5201/tcp", as Dockerfiles and container runtimes write it.
func (p Port) String() string { return fmt.Sprintf("%d/%s", p.Number, p.Proto) }

var (
	mu    sync.RWMutex
	kinds = map[string]Kind{}
)

// Register adds a kind; it panics on a duplicate or incomplete kind or a
// test name taken by another kind, which are programming errors found at
// init.
func Register(k Kind) {
	mu.Lock()
	defer mu.Unlock()
	if err := check(k); err != nil {
		panic("kinds: kind " + k.Name + ": " + err.Error())
	}
	for i, t := range k.Tests {
		if t.Kind != "" && t.Kind != k.Name {
			panic(fmt.Sprintf("kinds: test %s of kind %s says kind %s", t.Name, k.Name, t.Kind))
		}
		k.Tests[i].Kind = k.Name
		for _, o := range kinds {
			if slices.ContainsFunc(o.Tests, func(u Test) bool { return strings.EqualFold(u.Name, t.Name) }) {
				panic("kinds: test " + t.Name + " registered by " + o.Name + " and " + k.Name)
			}
		}
	}
	kinds[k.Name] = k
}

// check refuses an incomplete kind, one whose options or results lack the
// base every kind's have, and one whose results keys another kind holds
// for other types (kinds of one engine share its keys and types).
func check(k Kind) error {
	if k.Name == "" || k.Owns == nil || k.Read == nil || k.Line == nil {
		return errors.New("needs a name, Owns, Read and Line")
	}
	if (k.Key == "") != (k.NewResult == nil) || (k.OptionsKey == "") != (k.NewOptions == nil) {
		return errors.New("needs a key with each New function")
	}
	if (k.Run != nil || k.Options != nil) && (k.Run == nil || k.Options == nil || k.Key == "" || k.OptionsKey == "") {
		return errors.New("runs through the registry: it needs Options, Run and both keys")
	}
	if k.NewOptions != nil {
		if _, ok := k.NewOptions().(Runs); !ok {
			return errors.New("its options must embed kinds.RunnerOptions")
		}
	}
	if k.NewResult != nil {
		if _, ok := k.NewResult().(Measures); !ok {
			return errors.New("its results must embed kinds.RunnerResults")
		}
	}
	if _, dup := kinds[k.Name]; dup {
		return errors.New("registered twice")
	}
	for _, o := range kinds {
		if clash(k.Key, k.NewResult, o) || clash(k.OptionsKey, k.NewOptions, o) {
			return errors.New("shares a results key with kind " + o.Name + " for another type")
		}
	}
	return nil
}

// clash tells whether key, holding what newV returns, is one of o's keys
// holding another type.
func clash(key string, newV func() any, o Kind) bool {
	if key == "" {
		return false
	}
	same := func(oKey string, oNew func() any) bool {
		return key == oKey && reflect.TypeOf(newV()) == reflect.TypeOf(oNew())
	}
	return (key == o.Key || key == o.OptionsKey) && !same(o.Key, o.NewResult) && !same(o.OptionsKey, o.NewOptions)
}

// Lookup returns a registered kind.
func Lookup(name string) (Kind, bool) {
	mu.RLock()
	defer mu.RUnlock()
	k, ok := kinds[name]
	return k, ok
}

// All returns every kind in catalogue order.
func All() []Kind {
	mu.RLock()
	defer mu.RUnlock()
	var out []Kind
	for _, k := range kinds {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b Kind) int {
		if a.Order != b.Order {
			return a.Order - b.Order
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// Tests is the catalogue: every kind's tests, kinds in catalogue order.
func Tests() []Test {
	var out []Test
	for _, k := range All() {
		out = append(out, k.Tests...)
	}
	return out
}

// LookupTest finds a test by name, case-insensitively.
func LookupTest(name string) (Test, bool) {
	for _, t := range Tests() {
		if strings.EqualFold(t.Name, strings.TrimSpace(name)) {
			return t, true
		}
	}
	return Test{}, false
}

// Of returns the kind owning a sample's result; ok is false for nil or a
// result no kind owns.
func Of(result any) (Kind, bool) {
	if result == nil {
		return Kind{}, false
	}
	for _, k := range All() {
		if k.Owns(result) {
			return k, true
		}
	}
	return Kind{}, false
}

// OfOptions returns the kind whose options these are (a pointer of its
// NewOptions type that it owns); ok is false for options no kind owns.
func OfOptions(options any) (Kind, bool) {
	if options == nil {
		return Kind{}, false
	}
	for _, k := range All() {
		if k.ownsOptions(options) {
			return k, true
		}
	}
	return Kind{}, false
}

// ownsOptions tells whether options are of k's type and k's own.
func (k Kind) ownsOptions(options any) bool {
	if k.NewOptions == nil || reflect.TypeOf(options) != reflect.TypeOf(k.NewOptions()) {
		return false
	}
	return k.OwnsOptions == nil || k.OwnsOptions(options)
}

// DecodeOptions reads options stored under k's OptionsKey; ok is false
// when they are not k's own (another kind's under a shared key).
func (k Kind) DecodeOptions(raw []byte) (options any, ok bool, err error) {
	v := k.NewOptions()
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, false, fmt.Errorf("%s: %w", k.OptionsKey, err)
	}
	return v, k.ownsOptions(v), nil
}

// ServerPorts are the ports of the server k's client dials: its own, or
// those of the kind it Dials.
func (k Kind) ServerPorts() []Port {
	if k.Dials == "" {
		return k.Ports
	}
	if s, ok := Lookup(k.Dials); ok {
		return s.Ports
	}
	return nil
}

// ExposedPorts lists the data ports the agent image and pod declare.
func ExposedPorts() []Port {
	var out []Port
	for _, p := range Ports() {
		if p.Exposed {
			out = append(out, p)
		}
	}
	return out
}

// Stored returns the kinds that store their results under their own keys.
func Stored() []Kind {
	var out []Kind
	for _, k := range All() {
		if k.Key != "" || k.OptionsKey != "" {
			out = append(out, k)
		}
	}
	return out
}

// Ports lists every kind's data ports, in catalogue order: the one list
// of ports that Services, pods, images and firewalls derive from.
func Ports() []Port {
	var out []Port
	for _, k := range All() {
		out = append(out, k.Ports...)
	}
	return out
}
