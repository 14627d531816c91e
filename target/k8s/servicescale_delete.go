package k8starget

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// Deleted is what ClusterServices.Close removed and how long it took,
// until the API server listed none of the sweep's objects.
type Deleted struct {
	Services int           `json:"services"`
	Time     time.Duration `json:"time"`
	// Leftovers were still listed after the Service deletes and the
	// EndpointSlices' DeleteCollection, and were deleted one by one.
	Leftovers int `json:"leftovers,omitempty"`
	// ServiceCollection: the Services went by one DeleteCollection too
	// (else one delete each).
	ServiceCollection bool `json:"service_collection,omitempty"`
}

// deleteServiceCollection deletes the dummy Services with one
// DeleteCollection. client-go's typed Service client has no such method,
// though API servers serve it (v1.34 lists deletecollection for services),
// so it goes through the REST client; ok is false, with no error, where
// that is not possible (a server answering 405 or 404, a client without
// a REST client such as the fake clientset): then they are deleted one by
// one.
func (c *ClusterServices) deleteServiceCollection(ctx context.Context) (ok bool, err error) {
	rc, isREST := c.Clientset.CoreV1().RESTClient().(*rest.RESTClient)
	if !isREST || rc == nil {
		return false, nil
	}
	if err := c.write(ctx); err != nil {
		return false, err
	}
	err = rc.Delete().Namespace(c.Namespace).Resource("services").
		VersionedParams(&metav1.ListOptions{LabelSelector: c.selector()}, scheme.ParameterCodec).
		Body(&metav1.DeleteOptions{}).Do(ctx).Error()
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err):
		return false, nil
	case collectionCutShort(err):
		return false, nil
	}
	return false, fmt.Errorf("delete the dummy Services: %w", err)
}

// collectionCutShort: a DeleteCollection failed for a reason other than
// the caller's rights, such as the API server's request timeout (it
// deletes a collection one object at a time: 10,000 Services outlast its
// 60 s) or a reset stream. What it did not delete is left for the
// one-by-one pass; a refusal (401, 403) is the caller's to see.
func collectionCutShort(err error) bool {
	return !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) && !errors.Is(err, context.Canceled)
}

// removeSome deletes the named dummies and their EndpointSlices in
// parallel under the write limiter: one list of the slices first, instead
// of one per Service.
func (c *ClusterServices) removeSome(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	slices, err := c.slicesByService(ctx)
	if err != nil {
		return err
	}
	return c.parallel(ctx, "deleting", names, func(ctx context.Context, name string) error {
		for _, s := range slices[name] {
			if err := c.write(ctx); err != nil {
				return err
			}
			if err := c.Clientset.DiscoveryV1().EndpointSlices(c.Namespace).Delete(ctx, s, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete EndpointSlice %s: %w", s, err)
			}
		}
		if err := c.write(ctx); err != nil {
			return err
		}
		if err := c.Clientset.CoreV1().Services(c.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete Service %s: %w", name, err)
		}
		return nil
	})
}

// slicesByService lists the dummies' EndpointSlices by Service name.
func (c *ClusterServices) slicesByService(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	err := c.eachSlice(ctx, func(s *discoveryv1.EndpointSlice) {
		svc := s.Labels[discoveryv1.LabelServiceName]
		out[svc] = append(out[svc], s.Name)
	})
	return out, err
}

// eachSlice calls fn on every dummy EndpointSlice, listed in pages.
func (c *ClusterServices) eachSlice(ctx context.Context, fn func(*discoveryv1.EndpointSlice)) error {
	opts := metav1.ListOptions{LabelSelector: c.selector(), Limit: 500}
	for {
		l, err := c.Clientset.DiscoveryV1().EndpointSlices(c.Namespace).List(ctx, opts)
		if err != nil {
			return fmt.Errorf("list dummy EndpointSlices: %w", err)
		}
		for i := range l.Items {
			fn(&l.Items[i])
		}
		if opts.Continue = l.Continue; opts.Continue == "" {
			return nil
		}
	}
}

// Close implements datapath.Datapath: every dummy goes, and Close returns
// once the API server lists none. The EndpointSlices and the Services go
// by one DeleteCollection each on the sweep's label selector, at the same
// time (Services one by one in parallel under the write limiter where the
// server or client cannot); whatever is left after that (a collection
// delete cut short) is deleted one by one.
func (c *ClusterServices) Close() error {
	c.init()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	have, err := c.existing(ctx)
	cancel()
	if err != nil {
		return err
	}
	// Its own context (Close also runs after Ctrl-C), long enough for two
	// paced writes per Service, plus slack.
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Minute+time.Duration(float64(2*len(have))/c.QPS*1.5*float64(time.Second)))
	defer cancel()
	names := make([]string, 0, len(have))
	for n := range have {
		names = append(names, n)
	}
	sort.Strings(names)
	collectErr := make(chan error, 1)
	go func() {
		err := c.write(ctx)
		if err == nil {
			err = c.Clientset.DiscoveryV1().EndpointSlices(c.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: c.selector()})
		}
		if err != nil && !apierrors.IsMethodNotSupported(err) && !apierrors.IsNotFound(err) && !collectionCutShort(err) {
			err = fmt.Errorf("delete the dummy EndpointSlices: %w", err)
		} else {
			err = nil // the pass below deletes what is left one by one
		}
		collectErr <- err
	}()
	var collected []string
	switch ok, err := c.deleteServiceCollection(ctx); {
	case err != nil:
		<-collectErr
		return err
	case ok:
		collected = append(collected, "Services")
	default:
		err = c.parallel(ctx, "deleting", names, c.removeService)
		if err = errors.Join(err, <-collectErr); err != nil {
			return err
		}
		collectErr = nil
	}
	if collectErr != nil {
		if err := <-collectErr; err != nil {
			return err
		}
	}
	// What is left (slices of Services already gone included), one by one.
	left, err := c.existing(ctx)
	if err != nil {
		return err
	}
	slices, err := c.slicesByService(ctx)
	if err != nil {
		return err
	}
	for svc := range slices {
		left[svc] = true
	}
	leftover := make([]string, 0, len(left))
	for n := range left {
		leftover = append(leftover, n)
	}
	sort.Strings(leftover)
	if err := c.removeSome(ctx, leftover); err != nil {
		return err
	}
	if err := c.waitGone(ctx); err != nil {
		return err
	}
	c.deleted = &Deleted{Services: len(have), Leftovers: len(leftover), Time: time.Since(start), ServiceCollection: len(collected) > 0}
	if len(have) > 0 {
		c.progressf("%d dummy Services and their EndpointSlices gone in %s\n", len(have), c.deleted.Time.Round(time.Millisecond))
	}
	return nil
}

// removeService deletes one dummy Service (its EndpointSlices go by
// collection).
func (c *ClusterServices) removeService(ctx context.Context, name string) error {
	if err := c.write(ctx); err != nil {
		return err
	}
	if err := c.Clientset.CoreV1().Services(c.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Service %s: %w", name, err)
	}
	return nil
}

// waitGone polls until the API server lists no dummy Service or
// EndpointSlice.
func (c *ClusterServices) waitGone(ctx context.Context) error {
	one := metav1.ListOptions{LabelSelector: c.selector(), Limit: 1}
	for {
		svcs, err := c.Clientset.CoreV1().Services(c.Namespace).List(ctx, one)
		if err != nil {
			return fmt.Errorf("list dummy Services: %w", err)
		}
		sl, err := c.Clientset.DiscoveryV1().EndpointSlices(c.Namespace).List(ctx, one)
		if err != nil {
			return fmt.Errorf("list dummy EndpointSlices: %w", err)
		}
		if len(svcs.Items) == 0 && len(sl.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dummy Services still listed after the deletes: %w", ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Deleted is what the last Close removed (nil before it ran).
func (c *ClusterServices) Deleted() *Deleted { return c.deleted }

func (c *ClusterServices) progressf(format string, a ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, format, a...)
	}
}
