package k8starget

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// A kubelet summary as the API server's node proxy returns it: the Cilium
// agent (two containers), an unrelated pod, and a pod whose name only
// starts like the DaemonSet's.
func kubeletSummary(cpuNanos uint64) string {
	return fmt.Sprintf(`{"node":{"nodeName":"n"},"pods":[
 {"podRef":{"name":"cilium-x7k2p","namespace":"kube-system"},"containers":[
   {"name":"cilium-agent","cpu":{"usageCoreNanoSeconds":%d},"memory":{"workingSetBytes":209715200}},
   {"name":"mount-cgroup"}]},
 {"podRef":{"name":"kube-proxy-abcde","namespace":"kube-system"},"containers":[
   {"name":"kube-proxy","cpu":{"usageCoreNanoSeconds":5000000000},"memory":{"workingSetBytes":1048576}}]},
 {"podRef":{"name":"cilium-operator-5d8b9c7f4-qwert","namespace":"kube-system"},"containers":[
   {"name":"cilium-operator","cpu":{"usageCoreNanoSeconds":1},"memory":{"workingSetBytes":1}}]},
 {"podRef":{"name":"web-1","namespace":"default"},"containers":[{"name":"web","cpu":{"usageCoreNanoSeconds":1}}]}
]}`, cpuNanos)
}

func TestDatapathUsage(t *testing.T) {
	var cpu atomic.Uint64
	cpu.Store(12_500_000_000)
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		if !strings.HasPrefix(r.URL.Path, "/api/v1/nodes/") || !strings.HasSuffix(r.URL.Path, "/proxy/stats/summary") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, kubeletSummary(cpu.Load()))
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	cni := &CNI{Plugin: "cilium", Components: []Component{
		{Plugin: "cilium", Namespace: "kube-system", DaemonSet: "cilium"},
		{Plugin: "kube-proxy", Namespace: "kube-system", DaemonSet: "kube-proxy"},
	}}
	ctx := context.Background()
	before, err := DatapathUsage(ctx, cs, []string{"worker-a", ""}, cni)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 1 || paths[0] != "/api/v1/nodes/worker-a/proxy/stats/summary" {
		t.Errorf("requests %v", paths)
	}
	if len(before) != 2 || before[0].Container != "cilium-agent" || before[0].Plugin != "cilium" || before[0].CPUSeconds != 12.5 ||
		before[0].MemoryBytes != 200<<20 || before[1].Plugin != "kube-proxy" {
		t.Fatalf("usage %+v: want cilium-agent and kube-proxy only", before)
	}
	cpu.Store(13_250_000_000)
	after, _ := DatapathUsage(ctx, cs, []string{"worker-a"}, cni)
	d := UsageDelta(before, after)
	if len(d) != 2 || d[0].CPUSeconds != 0.75 || d[1].CPUSeconds != 0 {
		t.Errorf("delta %+v: want 0.75 s for cilium-agent, 0 for kube-proxy", d)
	}
	cpu.Store(1) // restarted: its counter began again
	after, _ = DatapathUsage(ctx, cs, []string{"worker-a"}, cni)
	if d := UsageDelta(before, after); len(d) != 1 || d[0].Plugin != "kube-proxy" {
		t.Errorf("restarted container kept: %+v", d)
	}
	if _, err := DatapathUsage(ctx, cs, []string{"missing/.."}, cni); err == nil {
		t.Error("a failing node proxy gave no error")
	}
}
