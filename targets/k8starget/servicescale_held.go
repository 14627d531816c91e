package k8starget

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cnibench/cnibench/agent/nodeprobe"
	"github.com/cnibench/cnibench/datapath"
)

// DefaultChurnSyncInterval is the probes' read interval during a churn:
// a change's programming latency is late by up to one interval (or
// readCostFactor × a read, where reads are slower), against kube-proxy's
// 1 s minimum sync interval.
const DefaultChurnSyncInterval = 100 * time.Millisecond

// waitCounts polls every probe until its node holds at least the
// baseline plus want (the churn's read-back after a window: each change
// was awaited by its keys already, servicescale_await.go), quietly. An
// error names the node and its counts after the timeout from writesDone.
func (v *SyncVerifier) waitCounts(ctx context.Context, writesDone time.Time, want datapath.Counts) error {
	v.defaults()
	if v.Mode != SyncNode {
		return nil
	}
	v.mu.Lock()
	base, api := v.baseline, v.apiOnly
	v.mu.Unlock()
	if base == nil {
		return errors.New("node sync: no baseline was read before the first change")
	}
	return v.eachProbe(func(p NodeProbe) error {
		if _, ok := api[p.Node]; ok {
			return nil
		}
		b := base[p.Node]
		wantSvc, wantEps := b.Services+want.Services, b.Endpoints+want.Endpoints
		deadline := writesDone.Add(v.Timeout)
		var have string
		var lastErr error
		for {
			rep, err := v.read(ctx, p, deadline)
			if err != nil {
				lastErr = err
			} else {
				if rep.Services >= wantSvc && rep.Endpoints >= wantEps {
					return nil
				}
				have = fmt.Sprintf("%d Services / %d endpoints", rep.Services, rep.Endpoints)
			}
			if perr := v.pause(ctx, deadline, p.Node); perr != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				msg := fmt.Sprintf("node %s holds %s %s after the API writes, want at least %d / %d", p.Node, or(have, "nothing read"), v.Timeout, wantSvc, wantEps)
				if lastErr != nil {
					msg += "; last probe error: " + oneLine(lastErr.Error())
				}
				return errors.New(msg)
			}
		}
	})
}

// heldIndex is one probe read's keys, indexed to check many changes.
type heldIndex struct {
	rep       *nodeprobe.Report
	keys, eps map[string]bool
}

func newHeldIndex(rep *nodeprobe.Report) heldIndex {
	h := heldIndex{rep: rep, keys: make(map[string]bool, len(rep.Keys)), eps: make(map[string]bool, len(rep.EndpointKeys))}
	for _, k := range rep.Keys {
		h.keys[k] = true
	}
	for _, k := range rep.EndpointKeys {
		h.eps[k] = true
	}
	return h
}

// why says what of ck the read does not hold ("" if it holds it all).
func (h heldIndex) why(ck serviceCheck) string {
	dp := h.rep.Datapath
	has := h.keys[nodeprobe.Key(dp, ck.port)]
	switch {
	case !ck.present && has:
		return ck.port.Name + " still there"
	case ck.present && !has:
		return ck.port.Name + " not there"
	case !ck.present || !h.rep.EndpointKeysRead:
		return ""
	}
	var out []string
	for _, ap := range ck.want {
		if !h.eps[nodeprobe.EndpointKey(dp, ck.port, ap)] {
			out = append(out, fmt.Sprintf("%s endpoint %s not there", ck.port.Name, ap))
		}
	}
	for _, ap := range ck.gone {
		if h.eps[nodeprobe.EndpointKey(dp, ck.port, ap)] {
			out = append(out, fmt.Sprintf("%s endpoint %s still there", ck.port.Name, ap))
		}
	}
	return strings.Join(out, ", ")
}

// noteOnce writes a note on the progress output once per node.
func (v *SyncVerifier) noteOnce(node, text string) {
	v.mu.Lock()
	if v.noted == nil {
		v.noted = map[string]bool{}
	}
	done := v.noted[node]
	v.noted[node] = true
	v.mu.Unlock()
	if !done {
		v.note("%s", text)
	}
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}
