package k8starget

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// A run that changes a key of cilium-config first writes, in the same
// update, an annotation on the ConfigMap with the key's value before the
// run: the run's Close puts it back, and after a SIGKILL `cnibench k8s
// cleanup` finds the annotation and does the same. The annotation goes
// with the restore.
const (
	ciliumConfigName = "cilium-config"
	restorePrefix    = "cnibench.io/restore-" // + the cilium-config key
)

// restoreRecord is what the annotation holds: the key's value before run
// RunID changed it (Present false: the key was not set).
type restoreRecord struct {
	RunID   string `json:"run_id"`
	Value   string `json:"value"`
	Present bool   `json:"present"`
}

func (r restoreRecord) String() string {
	if !r.Present {
		return "(unset)"
	}
	return fmt.Sprintf("%q", r.Value)
}

// setCiliumKey sets key in Cilium's ConfigMap to value and records its
// value before the run, unless a record of this run is there already.
// Another run's record refuses: its change was never put back.
func setCiliumKey(ctx context.Context, cs kubernetes.Interface, ns, key, value, runID string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, ciliumConfigName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("read %s/%s: %w", ns, ciliumConfigName, err)
		}
		if rec, ok, err := readRestore(cm, key); err != nil {
			return err
		} else if ok && rec.RunID != runID {
			return leftoverError(ns, key, rec)
		} else if !ok {
			old, present := cm.Data[key]
			b, _ := json.Marshal(restoreRecord{RunID: runID, Value: old, Present: present})
			if cm.Annotations == nil {
				cm.Annotations = map[string]string{}
			}
			cm.Annotations[restorePrefix+key] = string(b)
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[key] = value
		_, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{FieldManager: ManagedBy})
		return err
	})
}

// restoreCiliumKey puts key back as its record says and removes the
// record; it returns the record (ok false: there was none).
func restoreCiliumKey(ctx context.Context, cs kubernetes.Interface, ns, key string) (rec restoreRecord, ok bool, err error) {
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, ciliumConfigName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("read %s/%s: %w", ns, ciliumConfigName, err)
		}
		if rec, ok, err = readRestore(cm, key); err != nil || !ok {
			return err
		}
		if rec.Present {
			cm.Data[key] = rec.Value
		} else {
			delete(cm.Data, key)
		}
		delete(cm.Annotations, restorePrefix+key)
		_, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{FieldManager: ManagedBy})
		return err
	})
	return rec, ok, err
}

// readRestore reads key's record from the ConfigMap's annotations.
func readRestore(cm *corev1.ConfigMap, key string) (restoreRecord, bool, error) {
	raw, ok := cm.Annotations[restorePrefix+key]
	if !ok {
		return restoreRecord{}, false, nil
	}
	var rec restoreRecord
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return rec, false, fmt.Errorf("%s/%s annotation %s%s is not cnibench's record (%v): fix it by hand", cm.Namespace, cm.Name, restorePrefix, key, err)
	}
	return rec, true, nil
}

// recordedKeys are the cilium-config keys a run changed and did not put
// back, sorted.
func recordedKeys(cm *corev1.ConfigMap) []string {
	var keys []string
	for a := range cm.Annotations {
		if k, ok := strings.CutPrefix(a, restorePrefix); ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

func leftoverError(ns, key string, rec restoreRecord) error {
	return fmt.Errorf("%s/%s carries run %s's change of %s, never put back (it was %s): run 'cnibench k8s cleanup' first", ns, ciliumConfigName, rec.RunID, key, rec)
}

// RestoreCiliumConfig is `cnibench k8s cleanup`'s part for a run killed
// while it had changed cilium-config: every key it recorded is put back,
// the record removed, and Cilium's agents restarted so they run with it
// again (the rollout awaited). Without Cilium, or without a record, it
// changes nothing and returns nothing.
func RestoreCiliumConfig(cs kubernetes.Interface, timeout time.Duration, progress io.Writer) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cni, err := DetectCNI(ctx, cs)
	if apierrors.IsForbidden(err) {
		// Without the ClusterRole's reads no run of this user could have
		// changed cilium-config either: nothing to put back.
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	comp := cni.component("cilium")
	if comp == nil {
		return nil, nil
	}
	cm, err := cs.CoreV1().ConfigMaps(comp.Namespace).Get(ctx, ciliumConfigName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s/%s: %w", comp.Namespace, ciliumConfigName, err)
	}
	var done []string
	for _, key := range recordedKeys(cm) {
		rec, ok, err := restoreCiliumKey(ctx, cs, comp.Namespace, key)
		if err != nil {
			return done, err
		}
		if ok {
			done = append(done, fmt.Sprintf("ConfigMap %s/%s %s put back to %s (run %s)", comp.Namespace, ciliumConfigName, key, rec, rec.RunID))
		}
	}
	if len(done) == 0 {
		return nil, nil
	}
	if progress != nil {
		fmt.Fprintf(progress, "restarting DaemonSet %s/%s so Cilium runs with cilium-config as it was ...", comp.Namespace, comp.DaemonSet)
	}
	if _, err := restartDaemonSet(ctx, cs, comp.Namespace, comp.DaemonSet, timeout); err != nil {
		if progress != nil {
			fmt.Fprintln(progress, " failed")
		}
		return done, err
	}
	if progress != nil {
		fmt.Fprintln(progress, " done")
	}
	return append(done, fmt.Sprintf("DaemonSet %s/%s restarted", comp.Namespace, comp.DaemonSet)), nil
}
