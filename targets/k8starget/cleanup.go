package k8starget

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Object names one object cnibench made.
type Object struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	RunID     string `json:"run_id"`
}

func (o Object) String() string {
	if o.Namespace == "" {
		return o.Kind + "/" + o.Name
	}
	return o.Kind + "/" + o.Namespace + "/" + o.Name
}

// kinds are the namespaced kinds cnibench creates, with how to list and
// delete them. The Secret has a fixed name: reading it by name needs no
// right to list (and so read) every Secret of the namespace.
var kinds = []struct {
	kind string
	list func(ctx context.Context, cs kubernetes.Interface, ns, sel string) ([]Object, error)
	del  func(ctx context.Context, cs kubernetes.Interface, ns, name string) error
}{
	{"Pod", func(ctx context.Context, cs kubernetes.Interface, ns, sel string) ([]Object, error) {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return nil, err
		}
		var out []Object
		for _, o := range l.Items {
			out = append(out, Object{"Pod", ns, o.Name, o.Labels[LabelRunID]})
		}
		return out, nil
	}, func(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
		return cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}},
	{"Service", func(ctx context.Context, cs kubernetes.Interface, ns, sel string) ([]Object, error) {
		l, err := cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return nil, err
		}
		var out []Object
		for _, o := range l.Items {
			out = append(out, Object{"Service", ns, o.Name, o.Labels[LabelRunID]})
		}
		return out, nil
	}, func(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
		return cs.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}},
	{"EndpointSlice", func(ctx context.Context, cs kubernetes.Interface, ns, sel string) ([]Object, error) {
		l, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return nil, err
		}
		var out []Object
		for _, o := range l.Items {
			out = append(out, Object{"EndpointSlice", ns, o.Name, o.Labels[LabelRunID]})
		}
		return out, nil
	}, func(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
		return cs.DiscoveryV1().EndpointSlices(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}},
	{"NetworkPolicy", func(ctx context.Context, cs kubernetes.Interface, ns, sel string) ([]Object, error) {
		l, err := cs.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if apierrors.IsForbidden(err) {
			// A Role from before --network-policy-check: without the
			// right to list policies there was none to create either.
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		var out []Object
		for _, o := range l.Items {
			out = append(out, Object{"NetworkPolicy", ns, o.Name, o.Labels[LabelRunID]})
		}
		return out, nil
	}, func(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
		return cs.NetworkingV1().NetworkPolicies(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}},
	{"Secret", func(ctx context.Context, cs kubernetes.Interface, ns, sel string) ([]Object, error) {
		s, err := cs.CoreV1().Secrets(ns).Get(ctx, SecretName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if !matches(s.Labels, sel) {
			return nil, nil
		}
		return []Object{{"Secret", ns, s.Name, s.Labels[LabelRunID]}}, nil
	}, func(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
		return cs.CoreV1().Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}},
}

// matches applies one of our equality selectors (a=b,c=d) to labels.
func matches(lbl map[string]string, sel string) bool {
	for _, kv := range strings.Split(sel, ",") {
		k, v, _ := strings.Cut(kv, "=")
		if lbl[k] != v {
			return false
		}
	}
	return true
}

// Find lists cnibench's objects in namespace ns matching selector
// (ManagedSelector for every run's, RunSelector for one run's), and ns
// itself if cnibench created it.
func Find(ctx context.Context, cs kubernetes.Interface, ns, selector string) ([]Object, error) {
	var out []Object
	for _, k := range kinds {
		objs, err := k.list(ctx, cs, ns, selector)
		if err != nil {
			return nil, fmt.Errorf("look for cnibench %ss in %s: %w", k.kind, ns, err)
		}
		out = append(out, objs...)
	}
	n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("read namespace %s: %w", ns, err)
	case matches(n.Labels, selector):
		out = append(out, Object{"Namespace", "", ns, n.Labels[LabelRunID]})
	}
	return out, nil
}

// Describe summarises objects for an error message: run ids and the first few.
func Describe(objs []Object) string {
	runs := map[string]bool{}
	var names []string
	for _, o := range objs {
		runs[o.RunID] = true
		names = append(names, o.String())
	}
	var ids []string
	for r := range runs {
		ids = append(ids, r)
	}
	sort.Strings(ids)
	if len(names) > 6 {
		names = append(names[:6], fmt.Sprintf("… %d more", len(names)-6))
	}
	return fmt.Sprintf("%d objects of run(s) %s: %s", len(objs), strings.Join(ids, ", "), strings.Join(names, ", "))
}

// Cleanup deletes cnibench's objects in ns matching selector (and ns itself
// when cnibench made it and it matches), then waits until they are gone or
// timeout passes. It returns what it deleted; an error names what is left.
// It works on its own context so that it still runs after Ctrl-C.
func Cleanup(cs kubernetes.Interface, ns, selector string, timeout time.Duration, progress io.Writer) ([]Object, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	objs, err := Find(ctx, cs, ns, selector)
	if err != nil {
		return nil, err
	}
	if len(objs) == 0 {
		return nil, nil
	}
	if progress != nil {
		fmt.Fprintf(progress, "removing %d cnibench objects from namespace %s ...", len(objs), ns)
	}
	var firstErr error
	// Namespaced objects first, the namespace last: deleting a namespace is
	// asynchronous and would hide which object is stuck.
	for _, o := range objs {
		if o.Kind == "Namespace" {
			continue
		}
		for _, k := range kinds {
			if k.kind == o.Kind {
				if err := k.del(ctx, cs, o.Namespace, o.Name); err != nil && !apierrors.IsNotFound(err) && firstErr == nil {
					firstErr = fmt.Errorf("delete %s: %w", o, err)
				}
			}
		}
	}
	for _, o := range objs {
		if o.Kind == "Namespace" {
			if err := cs.CoreV1().Namespaces().Delete(ctx, o.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) && firstErr == nil {
				firstErr = fmt.Errorf("delete %s: %w", o, err)
			}
		}
	}
	// Wait until they are really gone (pods take their grace period, a
	// namespace its finalizers), so the next run's preflight is clean.
	for {
		left, err := Find(ctx, cs, ns, selector)
		if err == nil && len(left) == 0 {
			break
		}
		if ctx.Err() != nil {
			if progress != nil {
				fmt.Fprintln(progress, " incomplete")
			}
			if err != nil {
				return objs, fmt.Errorf("cleanup of namespace %s: %w", ns, err)
			}
			return objs, fmt.Errorf("cleanup of namespace %s: still present after %s: %s (run 'cnibench k8s cleanup --namespace %s' again)", ns, timeout, Describe(left), ns)
		}
		time.Sleep(min(pollInterval, time.Second))
	}
	if progress != nil {
		fmt.Fprintln(progress, " done")
	}
	return objs, firstErr
}
