package k8starget

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// CiliumDefaultLBMapMax is bpf-lb-map-max when cilium-config does not set it.
const CiliumDefaultLBMapMax = 65536

// restartAnnotation triggers a rolling restart, as kubectl rollout restart
// does with its own annotation.
const restartAnnotation = "cnibench.io/restartedAt"

// LBMapNeed is how many entries Cilium's Service LB map needs for services
// single-port Services with endpoints backends each: one entry for the
// frontend plus one per backend slot.
func LBMapNeed(services, endpoints int) int { return services * (1 + endpoints) }

// ClusterChange is one change cnibench made to a cluster's datapath
// configuration, kept (and put into the results) so it can be reverted
// and so a reader knows the run did not measure the cluster as it was.
type ClusterChange struct {
	Object     string    `json:"object"` // "ConfigMap kube-system/cilium-config"
	Key        string    `json:"key"`
	Old        string    `json:"old"`
	OldPresent bool      `json:"old_present"`
	New        string    `json:"new"`
	Restarted  string    `json:"restarted"` // the DaemonSet restarted to apply it
	Applied    time.Time `json:"applied"`
	Reverted   bool      `json:"reverted"`
	namespace  string
	configMap  string
	daemonSet  string
}

// LBMapPreflight checks that Cilium's LB map can hold services × endpoints
// before a Service-scale sweep creates anything. Without Cilium it has
// nothing to check. When the map is too small it refuses, unless
// allowChanges: then it raises bpf-lb-map-max in cilium-config, restarts
// the Cilium agents so the new size takes effect (a ConfigMap edit alone
// changes nothing), waits for them, and returns the change for
// RevertChange. It never changes anything when the map is big enough.
func LBMapPreflight(ctx context.Context, cs kubernetes.Interface, cni *CNI, services, endpoints int, allowChanges bool, timeout time.Duration, progress io.Writer) (*ClusterChange, error) {
	comp := cni.component("cilium")
	if comp == nil {
		return nil, nil
	}
	cm, err := cs.CoreV1().ConfigMaps(comp.Namespace).Get(ctx, "cilium-config", metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read %s/cilium-config for the LB map size: %w", comp.Namespace, err)
	}
	current, present := CiliumDefaultLBMapMax, false
	if v, ok := cm.Data["bpf-lb-map-max"]; ok && v != "" {
		if current, err = strconv.Atoi(v); err != nil {
			return nil, fmt.Errorf("cilium-config bpf-lb-map-max %q is not a number", v)
		}
		present = true
	}
	need := LBMapNeed(services, endpoints)
	if need <= current {
		return nil, nil
	}
	// Headroom for the cluster's own Services, rounded to a power of two.
	size := CiliumDefaultLBMapMax
	for size < need+need/4 {
		size *= 2
	}
	if !allowChanges {
		return nil, fmt.Errorf("cilium's LB map holds bpf-lb-map-max=%d entries, %d Services × %d endpoints need %d: raise it yourself, or pass --allow-cluster-changes to have it set to %d for the run (Cilium agents restart; reverted at the end)",
			current, services, endpoints, need, size)
	}
	ch := &ClusterChange{
		Object: "ConfigMap " + comp.Namespace + "/cilium-config", Key: "bpf-lb-map-max",
		Old: cm.Data["bpf-lb-map-max"], OldPresent: present, New: strconv.Itoa(size),
		Restarted: "DaemonSet " + comp.Namespace + "/" + comp.DaemonSet,
		namespace: comp.Namespace, configMap: "cilium-config", daemonSet: comp.DaemonSet,
	}
	if progress != nil {
		fmt.Fprintf(progress, "--allow-cluster-changes: setting cilium-config bpf-lb-map-max %s -> %d and restarting %s ...", or(ch.Old, "(default 65536)"), size, ch.Restarted)
	}
	if err := setAndRestart(ctx, cs, ch, ch.New, true, timeout); err != nil {
		if progress != nil {
			fmt.Fprintln(progress, " failed")
		}
		// Put back what may have been changed before the failure.
		_ = setAndRestart(context.Background(), cs, ch, ch.Old, ch.OldPresent, timeout)
		return nil, err
	}
	ch.Applied = time.Now().UTC()
	if progress != nil {
		fmt.Fprintln(progress, " done")
	}
	return ch, nil
}

// RevertChange restores what LBMapPreflight changed (the old value, or no
// key at all) and restarts the agents again. It runs on its own context, so
// it also works after Ctrl-C.
func RevertChange(cs kubernetes.Interface, ch *ClusterChange, timeout time.Duration, progress io.Writer) error {
	if ch == nil || ch.Reverted {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if progress != nil {
		fmt.Fprintf(progress, "reverting %s %s to %s and restarting %s ...", ch.Object, ch.Key, or(ch.Old, "(unset)"), ch.Restarted)
	}
	if err := setAndRestart(ctx, cs, ch, ch.Old, ch.OldPresent, timeout); err != nil {
		if progress != nil {
			fmt.Fprintln(progress, " failed")
		}
		return fmt.Errorf("revert %s %s to %q: %w (fix it by hand!)", ch.Object, ch.Key, ch.Old, err)
	}
	ch.Reverted = true
	if progress != nil {
		fmt.Fprintln(progress, " done")
	}
	return nil
}

// setAndRestart sets (or, with present false, removes) the key, restarts
// the DaemonSet and waits until every pod runs the new template.
func setAndRestart(ctx context.Context, cs kubernetes.Interface, ch *ClusterChange, value string, present bool, timeout time.Duration) error {
	cm, err := cs.CoreV1().ConfigMaps(ch.namespace).Get(ctx, ch.configMap, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if present {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[ch.Key] = value
	} else {
		delete(cm.Data, ch.Key)
	}
	if _, err := cs.CoreV1().ConfigMaps(ch.namespace).Update(ctx, cm, metav1.UpdateOptions{FieldManager: ManagedBy}); err != nil {
		return fmt.Errorf("update %s: %w", ch.Object, err)
	}
	_, err = restartDaemonSet(ctx, cs, ch.namespace, ch.daemonSet, timeout)
	return err
}

// restartDaemonSet restarts a DaemonSet's pods as `kubectl rollout
// restart` does (a new template annotation) and waits until the rollout
// is complete; it returns the generation rolled out.
func restartDaemonSet(ctx context.Context, cs kubernetes.Interface, ns, name string, timeout time.Duration) (int64, error) {
	var gen int64
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ds, err := cs.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ds.Spec.Template.Annotations == nil {
			ds.Spec.Template.Annotations = map[string]string{}
		}
		ds.Spec.Template.Annotations[restartAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
		ds, err = cs.AppsV1().DaemonSets(ns).Update(ctx, ds, metav1.UpdateOptions{FieldManager: ManagedBy})
		if err == nil {
			gen = ds.Generation
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("restart DaemonSet %s/%s: %w", ns, name, err)
	}
	return gen, waitRollout(ctx, cs, ns, name, gen, timeout)
}

// waitRollout waits until the DaemonSet controller has seen generation and
// every scheduled pod is updated and ready.
func waitRollout(ctx context.Context, cs kubernetes.Interface, ns, name string, generation int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ds, err := cs.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("DaemonSet %s/%s disappeared", ns, name)
		case err != nil:
			return err
		}
		st := ds.Status
		if st.ObservedGeneration >= generation && st.UpdatedNumberScheduled == st.DesiredNumberScheduled &&
			st.NumberReady == st.DesiredNumberScheduled && st.NumberUnavailable == 0 {
			return nil
		}
		last = fmt.Sprintf("%d of %d pods updated, %d ready", st.UpdatedNumberScheduled, st.DesiredNumberScheduled, st.NumberReady)
		if !time.Now().Before(deadline) {
			return fmt.Errorf("DaemonSet %s/%s not rolled out after %s: %s", ns, name, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(pollInterval, time.Until(deadline))):
		}
	}
}

// String is a one-line description for progress and reports.
func (ch *ClusterChange) String() string {
	old := ch.Old
	if !ch.OldPresent {
		old = "(unset)"
	}
	s := fmt.Sprintf("%s %s: %s -> %s (restarted %s)", ch.Object, ch.Key, old, ch.New, ch.Restarted)
	if ch.Reverted {
		s += ", reverted"
	}
	return strings.TrimSpace(s)
}
