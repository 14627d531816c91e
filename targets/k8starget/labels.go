package k8starget

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// Labels every object cnibench creates carries, so that leftovers of any
// run can be found and removed (and nothing else ever is).
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "cnibench"
	LabelName      = "app.kubernetes.io/name"
	LabelRunID     = "cnibench.io/run-id"
	LabelEndpoint  = "cnibench.io/endpoint" // node0-pod0, node1 (host), ...
	LabelRole      = "cnibench.io/role"     // client | server | scale
	// LabelShard splits a sweep's dummies into scaleShards groups, deleted
	// by one DeleteCollection each, in parallel (servicescale_delete.go).
	LabelShard = "cnibench.io/shard"
	NameAgent  = "cnibench-agent"
	NameScale  = "cnibench-scale" // dummy Services of the Service-scale sweep
)

// ManagedSelector selects every object of every cnibench run.
func ManagedSelector() string {
	return labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedBy}).String()
}

// RunSelector selects the objects of one run.
func RunSelector(runID string) string {
	return labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedBy, LabelRunID: runID}).String()
}

// baseLabels are the labels of every object of a run.
func baseLabels(runID, name string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelName: name, LabelRunID: runID}
}

// validLabelValue checks a run id before it becomes a label value, so a bad
// one fails with our message rather than the API server's.
func validLabelValue(what, v string) error {
	if len(v) == 0 || len(v) > 63 {
		return fmt.Errorf("%s %q: must be 1-63 characters to be a label value", what, v)
	}
	for i, r := range v {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			(i > 0 && i < len(v)-1 && strings.ContainsRune("-_.", r))
		if !ok {
			return fmt.Errorf("%s %q: only letters, digits and - _ . inside are allowed in a label value", what, v)
		}
	}
	return nil
}
