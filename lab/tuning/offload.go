package tuning

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/safchain/ethtool"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// The ethtool features a tuning turns off. GSO off alone would leave TSO
// to segment in the stack's place, so gso-off takes both.
var (
	groFeatures = []string{"rx-gro"}
	gsoFeatures = []string{"tx-generic-segmentation", "tx-tcp-segmentation", "tx-tcp6-segmentation"}
)

// offload turns segmentation offloads on or off on every interface of a
// namespace but lo (the pods' and nodes' veths, the VXLAN device), as
// `ethtool -K dev gro off` on a node would. A veth starts with GSO and
// TSO on and GRO off (its GRO needs NAPI, which GRO on enables).
type offload struct {
	name     string
	features []string
	on       bool
}

func (o offload) Name() string { return o.name }
func (o offload) About() string {
	return strings.Join(o.features, ", ") + " " + o.state() + " on every lab interface (ethtool features)"
}

func (o offload) state() string     { return map[bool]string{true: "on", false: "off"}[o.on] }
func (o offload) Applicable() error { return nil }

// links are the namespace's interfaces but lo.
func links(s Site) ([]string, error) {
	h, err := netnsx.NewHandle(s.Netns)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	ls, err := mtuLinks(h)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range ls {
		out = append(out, l.Attrs().Name)
	}
	slices.Sort(out)
	return out, nil
}

// ethtoolIn is an ethtool handle whose socket is in site's namespace (an
// ioctl names the device in its socket's namespace).
func ethtoolIn(s Site) (*ethtool.Ethtool, error) {
	var e *ethtool.Ethtool
	err := netnsx.Do(s.Netns, func() error {
		var err error
		e, err = ethtool.NewEthtool()
		return err
	})
	return e, err
}

func (o offload) Apply(_ context.Context, s Site) (func() error, error) {
	devs, err := links(s)
	if err != nil {
		return nil, err
	}
	e, err := ethtoolIn(s)
	if err != nil {
		return nil, err
	}
	old := map[string]map[string]bool{}
	undo := func() error {
		defer e.Close()
		var errs []string
		for dev, was := range old {
			if err := e.Change(dev, was); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", dev, err))
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("%s: restore features: %s", s.Name, strings.Join(errs, "; "))
		}
		return nil
	}
	want := map[string]bool{}
	for _, f := range o.features {
		want[f] = o.on
	}
	for _, dev := range devs {
		cur, err := e.Features(dev)
		if err != nil {
			return undo, fmt.Errorf("%s features: %w", dev, err)
		}
		was := map[string]bool{}
		for _, f := range o.features {
			v, ok := cur[f]
			if !ok {
				return undo, fmt.Errorf("%s has no feature %s", dev, f)
			}
			was[f] = v
		}
		old[dev] = was
		if err := e.Change(dev, want); err != nil {
			return undo, fmt.Errorf("%s: %s %s: %w", dev, strings.Join(o.features, ", "), o.state(), err)
		}
	}
	return undo, nil
}

func (o offload) Verify(_ context.Context, s Site) (string, error) {
	devs, err := links(s)
	if err != nil {
		return "", err
	}
	e, err := ethtoolIn(s)
	if err != nil {
		return "", err
	}
	defer e.Close()
	for _, dev := range devs {
		cur, err := e.Features(dev)
		if err != nil {
			return "", fmt.Errorf("%s features: %w", dev, err)
		}
		var wrong []string
		for _, f := range o.features {
			if cur[f] != o.on {
				wrong = append(wrong, f)
			}
		}
		if len(wrong) > 0 {
			return "", fmt.Errorf("%s: %s not %s (the driver refused the change)", dev, strings.Join(wrong, ", "), o.state())
		}
	}
	return strings.Join(o.features, ", ") + " " + o.state(), nil
}
