package tuning

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// nodeRPS processes what a node receives from the other nodes on that
// node's own CPUs: receive packet steering on the node's uplink (eth0),
// with the node's CPUs as the mask.
//
// Why: every namespace of the lab shares one kernel, and a veth hands a
// packet to its peer on the sending CPU, so without it the client's CPU
// carries the whole way to the server's socket (the client node's
// netfilter, the underlay bridge, the server node's netfilter and the
// server's TCP receive) and the server's CPU the way back. On a real
// cluster the receiving node's NIC interrupts run that on the receiving
// node. With it the lab splits the work as nodes do: a packet crossing to
// another node is finished on that node's CPUs. Traffic within a node is
// left on the sending CPU, as a veth on a real host leaves it.
type nodeRPS struct{}

// uplink is the node's device towards the underlay (lab/build_nodes.go).
const uplink = "eth0"

func (nodeRPS) Name() string { return "node-rps" }
func (nodeRPS) About() string {
	return "each node finishes the packets it receives from other nodes on its own CPUs (receive packet steering on its uplink), as a NIC's interrupts run on the receiving node"
}
func (nodeRPS) NodesOnly() bool   { return true }
func (nodeRPS) Applicable() error { return nil }

func (nodeRPS) Apply(ctx context.Context, s Site) (func() error, error) {
	if len(s.CPUs) == 0 {
		return nil, nil // one CPU: every node's work runs on it already (Verify says so)
	}
	files, err := rpsFiles(ctx, s)
	if err != nil {
		return nil, err
	}
	old := map[string]string{}
	for _, f := range files {
		v, err := readInNetns(ctx, s, f)
		if err != nil {
			return nil, err
		}
		old[f] = v
	}
	undo := func() error {
		var errs []error
		for f, v := range old {
			errs = append(errs, writeInNetns(ctx, s, f, v))
		}
		return errors.Join(errs...)
	}
	for _, f := range files {
		if err := writeInNetns(ctx, s, f, cpuMask(s.CPUs)); err != nil {
			return undo, err
		}
	}
	return undo, nil
}

func (nodeRPS) Verify(ctx context.Context, s Site) (string, error) {
	if len(s.CPUs) == 0 {
		return "nothing pinned (one CPU): every node's work runs on it", nil
	}
	files, err := rpsFiles(ctx, s)
	if err != nil {
		return "", err
	}
	want := cpuMask(s.CPUs)
	for _, f := range files {
		v, err := readInNetns(ctx, s, f)
		if err != nil {
			return "", err
		}
		if !sameMask(v, want) {
			return "", fmt.Errorf("%s holds %s, want %s", f, v, want)
		}
	}
	cpus := make([]string, len(s.CPUs))
	for i, c := range s.CPUs {
		cpus[i] = strconv.Itoa(c)
	}
	return fmt.Sprintf("%s steered to CPUs %s", uplink, strings.Join(cpus, ",")), nil
}

// rpsFiles are the uplink's rx queues' rps_cpus, as the node sees them.
func rpsFiles(ctx context.Context, s Site) ([]string, error) {
	out, err := inNetns(ctx, s, "ls -d /sys/class/net/"+uplink+"/queues/rx-*")
	if err != nil {
		return nil, err
	}
	var files []string
	for _, q := range strings.Fields(out) {
		files = append(files, filepath.Join(q, "rps_cpus"))
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: %s has no receive queues", s.Name, uplink)
	}
	return files, nil
}

// inNetns runs a shell command with the site's own sysfs (ip netns exec
// mounts the namespace's sysfs in a mount namespace of its own; sysfs
// shows the devices of the namespace it was mounted from).
func inNetns(ctx context.Context, s Site, script string) (string, error) {
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", filepath.Base(s.Netns), "sh", "-c", script).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "No such file") {
			return "", fmt.Errorf("%w: %s: no receive packet steering on %s (a kernel without CONFIG_RPS)", ErrNotApplicable, s.Name, uplink)
		}
		return "", fmt.Errorf("%s: %s: %v: %s", s.Name, script, err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

func readInNetns(ctx context.Context, s Site, file string) (string, error) {
	return inNetns(ctx, s, "cat "+file)
}

func writeInNetns(ctx context.Context, s Site, file, mask string) error {
	_, err := inNetns(ctx, s, "echo "+mask+" > "+file)
	return err
}

// cpuMask is cpus as the kernel's hex CPU mask ("2" for CPU 1).
func cpuMask(cpus []int) string {
	m := new(big.Int)
	for _, c := range cpus {
		m.SetBit(m, c, 1)
	}
	return m.Text(16)
}

// sameMask compares two hex CPU masks as the kernel prints them
// ("00000002", "0,00000002") or as written ("2").
func sameMask(a, b string) bool {
	parse := func(s string) *big.Int {
		v, ok := new(big.Int).SetString(strings.ReplaceAll(s, ",", ""), 16)
		if !ok {
			return big.NewInt(-1)
		}
		return v
	}
	return parse(a).Cmp(parse(b)) == 0
}
