package labtarget

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/cnibench/cnibench/agent"
)

// readSysctls records what each agent reads in its own namespace: the
// sysctls in effect for the tests, which the lab's configured ones
// (details "sysctls") should be but a namespace could differ from.
func (t *Target) readSysctls(ctx context.Context) {
	t.sysctls = map[string]agent.Sysctls{}
	names := make([]string, 0, len(t.agents))
	for name := range t.agents {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		s, err := t.agents[name].client.Sysctls(rctx)
		cancel()
		if err != nil {
			t.notes = append(t.notes, fmt.Sprintf("effective sysctls of %s not read: %v", name, err))
			continue
		}
		t.sysctls[name] = *s
	}
}

// sysctlDetails are the per-endpoint sysctls as plain JSON values, like
// the rest of Details.
func (t *Target) sysctlDetails() any {
	b, err := json.Marshal(t.sysctls)
	if err != nil {
		return err.Error()
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		return err.Error()
	}
	return v
}

// Notes implements suite.Noter: sysctls that could not be read.
func (t *Target) Notes() []string { return t.notes }
