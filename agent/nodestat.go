package agent

import (
	"context"
	"net/http"
	"os"
	"strings"

	"github.com/cnibench/cnibench/internal/procstat"
)

// PathNodeStat answers the CPU time of the kernel the agent runs on
// (NodeStat): a cluster's node is a machine of its own, and /proc/stat is
// not namespaced, so any agent of a node reads the node's cores, the
// kernel's work (softirq, system) included — what queries per core count
// on a cluster (docs/queries-per-core.md).
const PathNodeStat = "/v1/node/stat"

// bootIDPath names the running kernel: the same in every namespace and
// container of one boot, different on every other machine.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// NodeStat is the answer of PathNodeStat.
type NodeStat struct {
	// Kernel is the kernel's boot id: two nodes with the same one share
	// their CPUs (nodes that are namespaces or containers of one machine).
	Kernel string `json:"kernel"`
	// All is /proc/stat's aggregate cpu line, in seconds.
	All procstat.Times `json:"all"`
	// CPUs is how many cpu<N> lines /proc/stat has.
	CPUs int `json:"cpus"`
}

// ReadNodeStat reads the calling process's kernel.
func ReadNodeStat() (NodeStat, error) {
	st, err := procstat.Read()
	if err != nil {
		return NodeStat{}, err
	}
	id, err := os.ReadFile(bootIDPath)
	if err != nil {
		return NodeStat{}, err
	}
	return NodeStat{Kernel: strings.TrimSpace(string(id)), All: st.All, CPUs: len(st.PerCPU)}, nil
}

func (h *handler) nodeStat(w http.ResponseWriter, _ *http.Request) {
	s, err := ReadNodeStat()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

// NodeStat asks the agent for its node's CPU time.
func (c *Client) NodeStat(ctx context.Context) (*NodeStat, error) {
	var s NodeStat
	if err := c.do(ctx, http.MethodGet, PathNodeStat, nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}
