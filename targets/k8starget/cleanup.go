package k8starget

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
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
var kinds = []kindOps{
	labelled("Pod", func(cs kubernetes.Interface, ns string) typedClient[*corev1.PodList] {
		return cs.CoreV1().Pods(ns)
	}, func(l *corev1.PodList) []corev1.Pod { return l.Items }),
	labelled("Service", func(cs kubernetes.Interface, ns string) typedClient[*corev1.ServiceList] {
		return cs.CoreV1().Services(ns)
	}, func(l *corev1.ServiceList) []corev1.Service { return l.Items }),
	labelled("EndpointSlice", func(cs kubernetes.Interface, ns string) typedClient[*discoveryv1.EndpointSliceList] {
		return cs.DiscoveryV1().EndpointSlices(ns)
	}, func(l *discoveryv1.EndpointSliceList) []discoveryv1.EndpointSlice { return l.Items }),
	// A Role from before --network-policy-check: without the right to
	// list policies there was none to create either.
	noneIfForbidden(labelled("NetworkPolicy", func(cs kubernetes.Interface, ns string) typedClient[*networkingv1.NetworkPolicyList] {
		return cs.NetworkingV1().NetworkPolicies(ns)
	}, func(l *networkingv1.NetworkPolicyList) []networkingv1.NetworkPolicy { return l.Items })),
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

// kindOps lists a kind's objects of ours in a namespace (by label
// selector) and deletes one by name.
type kindOps struct {
	kind string
	list func(ctx context.Context, cs kubernetes.Interface, ns, sel string) ([]Object, error)
	del  func(ctx context.Context, cs kubernetes.Interface, ns, name string) error
}

// typedClient is what labelled needs of a kind's typed client (PodInterface
// and the like), whose List returns an L.
type typedClient[L any] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// labelled is a kind listed by label selector and deleted by name through
// its typed client; items are a list's objects.
func labelled[L, T any, P interface {
	*T
	metav1.Object
}](kind string, client func(kubernetes.Interface, string) typedClient[L], items func(L) []T) kindOps {
	return kindOps{kind: kind,
		list: func(ctx context.Context, cs kubernetes.Interface, ns, sel string) ([]Object, error) {
			l, err := client(cs, ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				return nil, err
			}
			var out []Object
			its := items(l)
			for i := range its {
				o := P(&its[i])
				out = append(out, Object{kind, ns, o.GetName(), o.GetLabels()[LabelRunID]})
			}
			return out, nil
		},
		del: func(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
			return client(cs, ns).Delete(ctx, name, metav1.DeleteOptions{})
		},
	}
}

// noneIfForbidden lists none of k where listing it is forbidden.
func noneIfForbidden(k kindOps) kindOps {
	list := k.list
	k.list = func(ctx context.Context, cs kubernetes.Interface, ns, sel string) ([]Object, error) {
		objs, err := list(ctx, cs, ns, sel)
		if apierrors.IsForbidden(err) {
			return nil, nil
		}
		return objs, err
	}
	return k
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
